"""The headline `lost` adds what each loss anomaly counts of acknowledged records gone after healing, and
says when it cannot: synthetic `results.json` anomalies with known counts."""

from __future__ import annotations

from typing import Any

from kchaos.checkers.lost_count import headline_lost


def anomalies(**overrides: dict[str, Any]) -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {
        "lost-write": {"checked": True, "count": 2},
        "unseen": {"checked": True, "count": 3},
        "truncated-read": {"checked": True, "count": 9, "by_kind": {"acknowledged": 7, "unacknowledged": 2}},
    }
    found.update({name.replace("_", "-"): value for name, value in overrides.items()})
    return found


def test_lost_adds_lost_writes_unseen_and_acknowledged_truncated_reads() -> None:
    lost = headline_lost(anomalies())
    assert lost == {
        "count": 12,
        "parts": {"lost-write": 2, "unseen": 3, "truncated-read": 7},
        "unchecked": [],
    }


def test_truncated_reads_of_records_never_acknowledged_are_not_lost() -> None:
    only_unacknowledged = {"checked": True, "count": 4, "by_kind": {"unacknowledged": 4}}
    assert headline_lost(anomalies(truncated_read=only_unacknowledged))["count"] == 5


def test_the_power_loss_case_counts_what_consumers_read_before_it_vanished() -> None:
    """The run that printed `lost writes: 0`: every vanished record had been read, so it is a truncated
    read alone, and the headline still counts it."""
    lost = headline_lost(
        anomalies(
            lost_write={"checked": True, "count": 0},
            unseen={"checked": True, "count": 0},
            truncated_read={"checked": True, "count": 8234, "by_kind": {"acknowledged": 8234}},
        )
    )
    assert lost["count"] == 8234


def test_a_part_not_checked_leaves_the_headline_unknown_and_names_it() -> None:
    lost = headline_lost(anomalies(unseen={"checked": False, "count": None}))
    assert lost["count"] is None and lost["unchecked"] == ["unseen"]
    assert headline_lost(anomalies(truncated_read={"checked": True, "count": 3}))["unchecked"] == [
        "truncated-read"
    ]


def test_a_transactional_run_counts_its_committed_records_lost() -> None:
    """A `txn` run writes no plain sends: its headline read `lost: not known (lost-write, unseen not
    checked)` and the comparison's lost column was blank. Plain sends' parts do not apply to it; the
    committed records the read_committed final read lacks (`lost-committed`) are what it lost."""
    from kchaos.checkers.lost_count import run_lost
    from kchaos.checkers.rules.checkability import NO_EOS, NO_PLAIN_SENDS, NO_TRANSACTIONS

    not_written = {"checked": False, "count": None, "unchecked_reason": NO_PLAIN_SENDS}
    txn = anomalies(
        lost_write=not_written,
        unseen=not_written,
        truncated_read={"checked": True, "count": 0},
        lost_committed={"checked": True, "count": 4},
        eos_lost={"checked": False, "count": None, "unchecked_reason": NO_EOS},
    )
    lost = headline_lost(txn)
    assert lost == {"count": 4, "parts": {"truncated-read": 0, "lost-committed": 4}, "unchecked": []}
    assert run_lost({"anomalies": txn})["count"] == 4  # the comparison row's lost
    plain = anomalies(lost_committed={"checked": False, "count": None, "unchecked_reason": NO_TRANSACTIONS})
    assert headline_lost(plain)["count"] == 12
    unchecked_commit = anomalies(lost_committed={"checked": False, "count": None, "unchecked_reason": "x"})
    assert headline_lost(unchecked_commit)["unchecked"] == ["lost-committed"]
