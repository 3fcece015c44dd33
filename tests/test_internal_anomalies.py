"""The anomalies inside one read-write transaction (issue 49), on planted histories with known ground
truth: each planted occurrence found, and nothing else; and what the oracle makes of each."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from kchaos.checkers.anomalies.findings import find_anomalies
from kchaos.checkers.results import check_run
from kchaos.checkers.rules.anomaly_names import (
    INT_NONMONOTONIC_POLL,
    INT_NONMONOTONIC_SEND,
    INT_POLL_SKIP,
    INT_SEND_SKIP,
    PRECOMMITTED_READ,
    RW_TRANSACTION_ANOMALY_NAMES,
)
from kchaos.checkers.rules.oracle import GuaranteeContext
from kchaos.checkers.rules.rule_table import rule_for
from kchaos.model.events import READ_COMMITTED, TXN_ABORT, TXN_COMMIT
from kchaos.spark_analysis.report import write_report
from tests.histories import HistoryBuilder
from tests.test_report import make_run

WRITER, READER = "producer-0", "producer-1"


def base() -> HistoryBuilder:
    """producer-0 commits a@0, b@1, c@2; producer-1 reads partition 0 at read_committed."""
    h = HistoryBuilder()
    h.txn_begin("w1", process=WRITER)
    for offset, value in enumerate("abc"):
        h.txn_send("w1", value, offset, process=WRITER)
    h.txn_end(TXN_COMMIT, "w1", process=WRITER)
    h.assign(READER, [0], isolation=READ_COMMITTED)
    return h


def read_write(
    h: HistoryBuilder, txn: str, polls: list[tuple[str, int]], sends: list[tuple[str, int]]
) -> None:
    """producer-1's transaction `txn`: its polls (value, offset), then its sends, then its commit."""
    h.txn_begin(txn, process=READER, transactional_id="kchaos-1")
    for value, offset in polls:
        h.txn_poll(txn, value, offset, process=READER)
    for value, offset in sends:
        h.txn_send(txn, value, offset, process=READER)
    h.txn_end(TXN_COMMIT, txn, process=READER)


def found(h: HistoryBuilder, spark: SparkSession) -> dict[str, int]:
    findings = find_anomalies(h.frame(spark), rw_transactions=True)
    return {name: findings[name].count or 0 for name in RW_TRANSACTION_ANOMALY_NAMES}


NONE = dict.fromkeys(RW_TRANSACTION_ANOMALY_NAMES, 0)


def clean(h: HistoryBuilder) -> None:
    read_write(h, "r1", [("a", 0), ("b", 1), ("c", 2)], [("d", 3)])


def skipped(h: HistoryBuilder) -> None:
    read_write(h, "r1", [("a", 0), ("c", 2)], [])  # b, committed at 1, skipped


def over_aborted(h: HistoryBuilder) -> None:
    """A gap over an aborted record and its marker is no skip at read_committed."""
    h.txn_begin("w2", process=WRITER)
    h.txn_send("w2", "x", 3, process=WRITER)
    h.txn_end(TXN_ABORT, "w2", process=WRITER)  # its marker at 4
    h.txn_begin("w3", process=WRITER)
    h.txn_send("w3", "y", 5, process=WRITER)
    h.txn_end(TXN_COMMIT, "w3", process=WRITER)
    read_write(h, "r1", [("c", 2), ("y", 5)], [])


def went_back(h: HistoryBuilder) -> None:
    read_write(h, "r1", [("b", 1), ("a", 0)], [])


def sent_out_of_order(h: HistoryBuilder) -> None:
    read_write(h, "r1", [], [("p", 5), ("q", 4)])


def interleaved(h: HistoryBuilder) -> None:
    h.send("z", 4, process=WRITER)  # a plain send between the transaction's two
    read_write(h, "r1", [], [("p", 3), ("q", 5)])


def own_write_read(h: HistoryBuilder) -> None:
    h.txn_begin("r1", process=READER, transactional_id="kchaos-1")
    h.txn_send("r1", "p", 3, process=READER)
    h.txn_poll("r1", "p", 3, process=READER)
    h.txn_end(TXN_COMMIT, "r1", process=READER)


@pytest.mark.parametrize(
    ("plant", "expected"),
    [
        (clean, {}),
        (skipped, {INT_POLL_SKIP: 1}),
        (over_aborted, {}),
        (went_back, {INT_NONMONOTONIC_POLL: 1}),
        (sent_out_of_order, {INT_NONMONOTONIC_SEND: 1}),
        (interleaved, {INT_SEND_SKIP: 1}),
        (own_write_read, {PRECOMMITTED_READ: 1}),
    ],
)
def test_each_planted_internal_anomaly_is_found_and_nothing_else(
    spark: SparkSession, plant: object, expected: dict[str, int]
) -> None:
    h = base()
    plant(h)  # type: ignore[operator]
    assert found(h, spark) == {**NONE, **expected}


def test_a_history_whose_transactions_never_polled_is_not_checked_for_them(spark: SparkSession) -> None:
    findings = find_anomalies(base().frame(spark))
    assert not set(RW_TRANSACTION_ANOMALY_NAMES) & set(findings)


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
    h = base()
    interleaved(h)
    h.txn_begin("r2", process=READER, transactional_id="kchaos-1")
    h.txn_send("r2", "s", 6, process=READER)
    h.txn_poll("r2", "s", 6, process=READER)
    h.txn_end(TXN_COMMIT, "r2", process=READER)
    run_dir = make_run(tmp_path, h, workload="txn")
    results = check_run(run_dir)
    anomalies = results["anomalies"]
    assert anomalies[INT_SEND_SKIP]["verdict"] == "permitted"
    assert anomalies[PRECOMMITTED_READ]["verdict"] == "violation"
    assert anomalies[PRECOMMITTED_READ]["rule_id"] == "read-committed-isolation"
    assert results["verdict"] == "violation"
    assert results["summary"]["txn_records_polled"] == 1
    html = write_report(run_dir, results, spark).read_text(encoding="utf-8")
    assert PRECOMMITTED_READ in html and INT_SEND_SKIP in html
