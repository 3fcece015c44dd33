"""The anomalies inside one read-write transaction (issue 49), on planted histories with known ground
truth: each planted occurrence found, and nothing else; and what the oracle makes of each."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from kchaos.checkers.anomalies.findings import applicable, find_anomalies
from kchaos.checkers.passes.read_write.transaction_reads import has_transaction_reads
from kchaos.checkers.results import check_run
from kchaos.checkers.rules.anomaly_names import (
    INT_NONMONOTONIC_POLL,
    INT_NONMONOTONIC_SEND,
    INT_POLL_SKIP,
    INT_SEND_SKIP,
    INTERNAL_ANOMALY_NAMES,
    PRECOMMITTED_READ,
)
from kchaos.checkers.rules.oracle import GuaranteeContext
from kchaos.checkers.rules.rule_table import rule_for
from kchaos.model.events import READ_COMMITTED, TXN_ABORT, TXN_COMMIT
from kchaos.spark_analysis.report import write_report
from tests.histories import HistoryBuilder
from tests.test_report import make_run

WRITER, READER = "producer-0", "producer-1"


def base(h: HistoryBuilder, p: int) -> None:
    """producer-0 commits `a`, `b`, `c` at offsets 0-2 of partition `p`."""
    h.txn_begin(f"w{p}", process=WRITER)
    for offset, value in enumerate("abc"):
        h.txn_send(f"w{p}", f"{value}{p}", offset, partition=p, process=WRITER)
    h.txn_end(TXN_COMMIT, f"w{p}", process=WRITER)


def read_write(h: HistoryBuilder, p: int, polls: list[tuple[str, int]], sends: list[tuple[str, int]]) -> None:
    """producer-1's transaction `r<p>` on partition `p`: its polls (value, offset), its sends, its commit."""
    txn = f"r{p}"
    h.txn_begin(txn, process=READER, transactional_id="kchaos-1")
    for value, offset in polls:
        h.txn_poll(txn, f"{value}{p}", offset, partition=p, process=READER)
    for value, offset in sends:
        h.txn_send(txn, f"{value}{p}", offset, partition=p, process=READER)
    h.txn_end(TXN_COMMIT, txn, process=READER)


def clean(h: HistoryBuilder, p: int) -> None:
    read_write(h, p, [("a", 0), ("b", 1), ("c", 2)], [("d", 3)])


def skipped(h: HistoryBuilder, p: int) -> None:
    read_write(h, p, [("a", 0), ("c", 2)], [])  # b, committed at 1, skipped


def over_aborted(h: HistoryBuilder, p: int) -> None:
    """A gap over an aborted record and its marker is no skip at read_committed."""
    h.txn_begin(f"x{p}", process=WRITER)
    h.txn_send(f"x{p}", f"x{p}", 3, partition=p, process=WRITER)
    h.txn_end(TXN_ABORT, f"x{p}", process=WRITER)  # its marker at 4
    h.txn_begin(f"y{p}", process=WRITER)
    h.txn_send(f"y{p}", f"y{p}", 5, partition=p, process=WRITER)
    h.txn_end(TXN_COMMIT, f"y{p}", process=WRITER)
    read_write(h, p, [("c", 2), ("y", 5)], [])


def went_back(h: HistoryBuilder, p: int) -> None:
    read_write(h, p, [("b", 1), ("a", 0)], [])


def sent_out_of_order(h: HistoryBuilder, p: int) -> None:
    read_write(h, p, [], [("p", 5), ("q", 4)])


def interleaved(h: HistoryBuilder, p: int) -> None:
    h.send(f"z{p}", 4, partition=p, process=WRITER)  # a plain send between the transaction's two
    read_write(h, p, [], [("p", 3), ("q", 5)])


def own_write_read(h: HistoryBuilder, p: int) -> None:
    txn = f"r{p}"
    h.txn_begin(txn, process=READER, transactional_id="kchaos-1")
    h.txn_send(txn, f"p{p}", 3, partition=p, process=READER)
    h.txn_poll(txn, f"p{p}", 3, partition=p, process=READER)
    h.txn_end(TXN_COMMIT, txn, process=READER)


#: Each scenario on a partition of its own, with the anomaly it plants (None: none).
PLANTED = (
    (clean, None),
    (skipped, INT_POLL_SKIP),
    (over_aborted, None),
    (went_back, INT_NONMONOTONIC_POLL),
    (sent_out_of_order, INT_NONMONOTONIC_SEND),
    (interleaved, INT_SEND_SKIP),
    (own_write_read, PRECOMMITTED_READ),
)


def planted() -> HistoryBuilder:
    """Every scenario of `PLANTED`, the `p`th on partition `p`, read by producer-1 at read_committed."""
    h = HistoryBuilder()
    h.assign(READER, range(len(PLANTED)), isolation=READ_COMMITTED)
    for p, (plant, _) in enumerate(PLANTED):
        base(h, p)
        plant(h, p)
    return h


def test_each_planted_internal_anomaly_is_found_where_it_was_planted_and_nothing_else(
    spark: SparkSession,
) -> None:
    """One check of one history holding every scenario (a check's fixed cost is seconds): each anomaly's
    occurrences are exactly the one transaction planted with it."""
    findings = find_anomalies(planted().frame(spark), rw_transactions=True)
    found = {
        name: sorted(example["txn"] for example in findings[name].examples) for name in INTERNAL_ANOMALY_NAMES
    }
    expected = {
        name: [f"r{p}" for p, (_, anomaly) in enumerate(PLANTED) if anomaly == name] for name in found
    }
    assert found == expected
    assert {name: findings[name].count for name in found} == {
        name: len(txns) for name, txns in expected.items()
    }


def test_a_history_whose_transactions_never_polled_is_not_checked_for_them(spark: SparkSession) -> None:
    """Asked of the history (a check knows it from its summary instead): no `txn-poll` row, no read-write
    transaction anomaly planned or named."""
    h = HistoryBuilder()
    base(h, 0)
    assert not has_transaction_reads(h.frame(spark))
    assert has_transaction_reads(planted().frame(spark))
    assert not set(INTERNAL_ANOMALY_NAMES) & set(applicable(groups=True))
    assert set(INTERNAL_ANOMALY_NAMES) <= set(applicable(groups=False, rw_transactions=True))


CONTEXT = GuaranteeContext(
    acks="all", replication_factor=3, unclean_leader_election=False, idempotence=True,
    fault_kinds=frozenset({"crash"}), max_concurrent_crashed=1,
)  # fmt: skip


@pytest.mark.parametrize(
    ("anomaly", "rule", "expected"),
    [
        (PRECOMMITTED_READ, "read-committed-isolation", "none"),
        (INT_POLL_SKIP, "consumers-read-committed", "none"),
        (INT_NONMONOTONIC_POLL, "consumers-read-committed", "none"),
        (INT_NONMONOTONIC_SEND, "idempotent-order", "none"),
        (INT_SEND_SKIP, "transactions-interleave", "possible"),
    ],
)
def test_each_internal_anomaly_is_judged_by_the_rule_that_covers_it(
    anomaly: str, rule: str, expected: str
) -> None:
    found_rule = rule_for(anomaly, CONTEXT)
    assert (found_rule.id, found_rule.expected) == (rule, expected)
    # A truncation lifts the promises about reads and order, as it does for a reader's and a producer's.
    unclean = rule_for(anomaly, GuaranteeContext(**{**CONTEXT.__dict__, "unclean_leader_election": True}))
    if anomaly in (INT_POLL_SKIP, INT_NONMONOTONIC_POLL, INT_NONMONOTONIC_SEND):
        assert (unclean.id, unclean.expected) == ("unclean-election", "possible")


def test_a_checked_run_judges_a_read_of_its_own_write_a_violation(
    tmp_path: Path, spark: SparkSession
) -> None:
    h = HistoryBuilder()
    h.assign(READER, [0, 1], isolation=READ_COMMITTED)
    for p, plant in enumerate((interleaved, own_write_read)):
        base(h, p)
        plant(h, p)
    run_dir = make_run(tmp_path, h, workload="txn", partitions=2)
    results = check_run(run_dir)
    anomalies = results["anomalies"]
    assert anomalies[INT_SEND_SKIP]["verdict"] == "permitted"
    assert anomalies[PRECOMMITTED_READ]["verdict"] == "violation"
    assert anomalies[PRECOMMITTED_READ]["rule_id"] == "read-committed-isolation"
    assert results["verdict"] == "violation"
    assert results["summary"]["txn_records_polled"] == 1
    html = write_report(run_dir, results, spark).read_text(encoding="utf-8")
    assert PRECOMMITTED_READ in html and INT_SEND_SKIP in html
