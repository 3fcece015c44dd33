"""The transaction-protocol attacks' decisions, as pure functions over history rows: which commit or abort
is outstanding, whether an attempt reached its window, when a hold may end; and the configurations the
attacks refuse before anything starts. (The attacks run against real Kafka in
tests/cluster/test_txn_attacks.py.)"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from kchaos.model.config import ConfigError, load_config
from kchaos.model.events import INFO, INVOKE, NEMESIS_PROCESS, OK, START, STOP, TXN_ABORT, TXN_COMMIT
from kchaos.nemesis.history_reading import Row, pending_end_txn
from kchaos.nemesis.txn_attacks import (
    HELD_THROUGH,
    WindowEvidence,
    attempt_summary,
    ended_by_others,
    window_evidence,
)

P0, P1 = "producer-0", "producer-1"


def rows(*specs: tuple[Any, ...]) -> list[Row]:
    """Rows numbered in order: (process, type, f, key[, value[, detail]])."""
    made = []
    for index, spec in enumerate(specs):
        process, type_, f, key, *rest = spec
        value = rest[0] if rest else None
        detail = rest[1] if len(rest) > 1 else {}
        made.append(Row(index, process, type_, f, key, value, detail))
    return made


def fault(value: str, key: str = "pause#1", held_through: int | None = None) -> tuple[Any, ...]:
    detail = {} if held_through is None else {HELD_THROUGH: held_through}
    return (NEMESIS_PROCESS, INFO, "pause", key, value, detail)


def test_a_commit_with_no_outcome_is_pending_and_its_outcome_ends_that() -> None:
    asked = rows((P0, INVOKE, TXN_COMMIT, "t1"))
    assert pending_end_txn(asked, P0) == asked[0]
    assert pending_end_txn(asked, P1) is None
    answered = rows((P0, INVOKE, TXN_COMMIT, "t1"), (P0, OK, TXN_COMMIT, "t1"))
    assert pending_end_txn(answered, P0) is None


def test_a_retried_commit_is_pending_again_and_another_producers_outcome_answers_nothing() -> None:
    history = rows(
        (P0, INVOKE, TXN_COMMIT, "t1"),
        (P0, INFO, TXN_COMMIT, "t1"),  # timed out
        (P0, INVOKE, TXN_COMMIT, "t1"),  # asked again
        (P1, OK, TXN_COMMIT, "t1"),
    )
    assert pending_end_txn(history, P0) == history[2]
    aborted = rows((P0, INVOKE, TXN_ABORT, "t2"), (P0, OK, TXN_COMMIT, "t2"))
    assert pending_end_txn(aborted, P0) == aborted[0]  # a commit's outcome does not answer an abort


def test_an_attempt_whose_fault_began_while_the_commit_was_outstanding_reached_its_window() -> None:
    history = rows(
        (P0, INVOKE, TXN_COMMIT, "t1"),
        fault(START),
        (P1, OK, TXN_COMMIT, "x"),
        fault(STOP),
        (P0, OK, TXN_COMMIT, "t1"),
    )
    evidence = window_evidence(history, P0, "pause#1", through_stop=True)
    assert evidence == WindowEvidence(
        "pause#1", True, caught=True, operation=TXN_COMMIT, txn="t1", invoke_index=0, start_index=1,
        stop_index=3, outcome_index=4, outcome=OK, outcome_after_stop=True,
    )  # fmt: skip


def test_an_attempt_whose_commit_was_answered_before_the_fault_began_missed() -> None:
    history = rows((P0, INVOKE, TXN_COMMIT, "t1"), (P0, OK, TXN_COMMIT, "t1"), fault(START), fault(STOP))
    evidence = window_evidence(history, P0, "pause#1")
    assert not evidence.reached and not evidence.caught and evidence.start_index == 2


def test_an_answer_recorded_after_the_fault_began_but_printed_before_it_missed() -> None:
    """A client process's line is recorded when it arrives and stamped when it was printed: an outcome row
    after the start row in the history's order, stamped before it, was answered before the fault."""
    history = rows((P0, INVOKE, TXN_COMMIT, "t1"), fault(START), (P0, OK, TXN_COMMIT, "t1"), fault(STOP))
    stamped = [replace(row, time_ns=t) for row, t in zip(history, (10, 30, 20, 40), strict=True)]
    assert not window_evidence(stamped, P0, "pause#1").reached
    later = [replace(row, time_ns=t) for row, t in zip(history, (10, 30, 35, 40), strict=True)]
    assert window_evidence(later, P0, "pause#1").reached


def test_an_attempt_with_no_commit_before_its_fault_missed() -> None:
    history = rows(fault(START), (P0, INVOKE, TXN_COMMIT, "t1"), fault(STOP), (P0, OK, TXN_COMMIT, "t1"))
    assert not window_evidence(history, P0, "pause#1").reached


def test_a_frozen_clients_window_needs_its_answer_after_the_thaw_began() -> None:
    """The stop row is recorded once the thaw is done, after what the thawed client printed at once: the
    stop row's `HELD_THROUGH` says which rows came before the thaw began."""
    thawed = rows(
        (P0, INVOKE, TXN_COMMIT, "t1"),
        fault(START),
        (P1, OK, TXN_COMMIT, "x"),
        (P0, OK, TXN_COMMIT, "t1"),
        fault(STOP, held_through=2),
    )
    assert window_evidence(thawed, P0, "pause#1", through_stop=True).reached
    answered_while_held = rows(
        (P0, INVOKE, TXN_COMMIT, "t1"),
        fault(START),
        (P0, OK, TXN_COMMIT, "t1"),  # printed before the freeze, read after it
        (P1, OK, TXN_COMMIT, "x"),
        fault(STOP, held_through=3),
    )
    evidence = window_evidence(answered_while_held, P0, "pause#1", through_stop=True)
    assert evidence.caught and not evidence.outcome_after_stop and not evidence.reached
    # A coordinator's failover only needs the commit outstanding when the broker died.
    assert window_evidence(answered_while_held, P0, "pause#1").reached


def test_the_evidence_is_for_its_own_fault_only() -> None:
    history = rows(
        (P0, INVOKE, TXN_COMMIT, "t1"),
        fault(START, key="pause#1"),
        fault(STOP, key="pause#1"),
        (P0, OK, TXN_COMMIT, "t1"),
        (P0, INVOKE, TXN_ABORT, "t2"),
        (P0, OK, TXN_ABORT, "t2"),
        fault(START, key="pause#2"),
    )
    assert window_evidence(history, P0, "pause#1").reached
    assert not window_evidence(history, P0, "pause#2").reached
    assert not window_evidence(history, P0, "pause#3").reached


def test_a_hold_counts_transactions_the_other_producers_ended_since_it_began() -> None:
    history = rows(
        (P1, OK, TXN_COMMIT, "a"),
        fault(START),
        (P1, INVOKE, TXN_COMMIT, "b"),
        (P1, OK, TXN_COMMIT, "b"),
        (P0, OK, TXN_COMMIT, "t1"),
        (P1, INFO, TXN_ABORT, "c"),
    )
    assert ended_by_others(history, P0, since_index=1) == 2
    assert ended_by_others(history, P0, since_index=3) == 1


def test_the_summary_counts_attempts_and_windows_reached() -> None:
    summary = attempt_summary([WindowEvidence("pause#1", True), WindowEvidence("pause#2", False)])
    assert (summary["attempts_made"], summary["windows_reached"]) == (2, 1)
    assert [a["fault"] for a in summary["attempts"]] == ["pause#1", "pause#2"]


def test_the_attacks_run_the_transactional_workload_with_their_slow_replication() -> None:
    for name in ("txn-client-pause", "txn-coordinator-pause", "txn-coordinator-failover"):
        config = load_config(scenario=name)
        assert (config.workload, config.producers, config.replication_factor) == ("txn", 2, 3)
        assert config.broker_config["replica.fetch.wait.max.ms"] == "1000"
    assert load_config(scenario="txn-client-pause").client == "java"
    assert load_config(scenario="txn-coordinator-pause", client="librdkafka").client == "librdkafka"


def test_a_client_pause_of_librdkafka_threads_is_refused_naming_the_fix() -> None:
    with pytest.raises(ConfigError) as refused:
        load_config(scenario="txn-client-pause", client="librdkafka")
    message = str(refused.value)
    assert "--scenario txn-client-pause --client librdkafka" in message
    assert "threads inside the harness process" in message
    assert "use --client librdkafka-process" in message and "or --client java" in message
    # As processes, librdkafka's transactional producers can be frozen.
    processes = load_config(scenario="txn-client-pause", client="librdkafka-process")
    assert processes.client == "librdkafka-process"
