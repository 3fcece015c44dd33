"""The transaction anomalies in the Spark checker, held against the pandas reference, and how a run with
transactions is judged, checked and reported.

Every Spark finding here is also the reference's: a disagreement points at one of the two definitions.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest
from pyspark.sql import SparkSession

from kchaos.checkers.anomalies.findings import find_anomalies
from kchaos.checkers.passes.transaction_passes import transaction_summary
from kchaos.checkers.results import check_run
from kchaos.checkers.rules.anomaly_names import (
    ABORTED_READ,
    ANOMALY_NAMES,
    LOST_COMMITTED,
    LOST_WRITE,
    PARTIAL_TRANSACTION,
    POLL_SKIP,
    REPLICA_DIVERGENCE,
    TRANSACTION_ANOMALY_NAMES,
    TRUNCATED_READ,
    UNCOMMITTED_READ,
)
from kchaos.checkers.rules.checkability import (
    NO_ACKNOWLEDGED_SENDS,
    NO_PLAIN_SENDS,
    NO_TRANSACTIONS,
    SEND_ANOMALIES,
    unchecked_reasons,
)
from kchaos.checkers.rules.oracle import GuaranteeContext
from kchaos.checkers.rules.transaction_summary import TransactionSummary
from kchaos.checkers.rules.verdicts import judge
from kchaos.checkers.summary import summarize
from kchaos.model.events import INVOKE, OK, SEND, TXN_ABORT, TXN_COMMIT, TXN_SEND
from kchaos.model.phase_record import CLUSTER_UP, READ_TO_END, RECOVERY, REPLICA_DUMP, WORKLOAD, RunPhases
from kchaos.model.txn_protocol import TRANSACTION_PROTOCOL_DERIVED, TRANSACTION_PROTOCOL_OBSERVED
from kchaos.spark_analysis.report import write_report
from tests.canned_histories import SCENARIOS
from tests.checker_ids import anomaly_ids
from tests.group_histories import eos_scenario
from tests.histories import RC, RU, HistoryBuilder
from tests.reference.anomalies import reference_anomaly_ids
from tests.test_report import make_run
from tests.transaction_histories import TRANSACTION_SCENARIOS

#: Every anomaly a history without replica dumps is checked for, none found.
NOTHING = {name: set[str]() for name in ANOMALY_NAMES if name != REPLICA_DIVERGENCE}


def both(spark: SparkSession, h: HistoryBuilder) -> dict[str, set[str]]:
    """The ids both engines find (replica divergence aside: no dumps), after checking they agree."""
    reference = reference_anomaly_ids(h.pandas())
    assert anomaly_ids(h.frame(spark)) == reference
    return reference


@pytest.mark.parametrize("name", TRANSACTION_SCENARIOS)
def test_spark_finds_exactly_the_stated_transaction_anomalies(spark: SparkSession, name: str) -> None:
    scenario = TRANSACTION_SCENARIOS[name]()
    found = both(spark, scenario.history)
    assert {n: found[n] for n in TRANSACTION_ANOMALY_NAMES} == scenario.expected_transaction_ids()


def test_a_clean_transactional_history_has_no_anomaly_in_either_engine(spark: SparkSession) -> None:
    """Markers make poll gaps, read_committed readers skip aborted records and the final read lacks them:
    none of it is an anomaly."""
    assert both(spark, TRANSACTION_SCENARIOS["txn-clean"]().history) == NOTHING


def test_histories_without_transactions_leave_the_transaction_anomalies_unchecked(
    spark: SparkSession,
) -> None:
    findings = find_anomalies(SCENARIOS["clean"]().history.frame(spark))
    for name in TRANSACTION_ANOMALY_NAMES:
        assert (findings[name].checked, findings[name].count) == (False, None)
    assert set(anomaly_ids(SCENARIOS["clean"]().history.frame(spark))).isdisjoint(TRANSACTION_ANOMALY_NAMES)


def _gap_history(reader: str, skipped: str) -> HistoryBuilder:
    """A reader at `reader` isolation reads offset 0, then 3: offset 1 holds a record of a transaction
    that ended `skipped` (`commit` or `abort`), offset 2 its marker."""
    h = HistoryBuilder()
    h.assign(isolation=RC if reader == "rc" else RU)
    h.transaction("t0", [("a", 0, 0)])
    h.txn_end(TXN_COMMIT, "t0")
    h.transaction("t1", [("b", 0, 1)])
    h.txn_end(TXN_COMMIT if skipped == "commit" else TXN_ABORT, "t1")
    h.transaction("t2", [("c", 0, 3)])
    h.txn_end(TXN_COMMIT, "t2")
    h.read("a", 0)
    return h


@pytest.mark.parametrize(
    ("reader", "skipped", "is_skip"),
    [("rc", "abort", False), ("rc", "commit", True), ("ru", "abort", True), ("ru", "commit", True)],
)
def test_a_poll_gap_is_a_skip_only_over_a_record_the_reader_had_to_return(
    spark: SparkSession, reader: str, skipped: str, is_skip: bool
) -> None:
    h = _gap_history(reader, skipped)
    index = h.read("c", 3)
    assert both(spark, h)[POLL_SKIP] == ({f"consumer-0:{index}"} if is_skip else set())


def test_a_gap_over_a_plain_send_in_a_transactional_history_is_still_a_skip(spark: SparkSession) -> None:
    h = _gap_history("rc", "abort")
    h.send("plain", 2)
    index = h.read("c", 3)
    assert both(spark, h)[POLL_SKIP] == {f"consumer-0:{index}"}


@pytest.mark.parametrize(("final", "truncated"), [(RC, False), (RU, True), (None, False)])
def test_an_aborted_record_missing_from_the_final_read_is_truncated_only_at_read_uncommitted(
    spark: SparkSession, final: str | None, truncated: bool
) -> None:
    """A reader at read_uncommitted saw it; a final read at read_committed (or of an unrecorded level,
    which may be) rightly lacks it, one at read_uncommitted should hold it."""
    h = HistoryBuilder()
    h.assign(isolation=RU)
    h.transaction("t", [("gone", 0, 0)])
    h.txn_end(TXN_ABORT, "t")
    h.read("gone", 0)
    h.final_read_start(isolation=final)  # type: ignore[arg-type]
    assert both(spark, h)[TRUNCATED_READ] == ({"gone"} if truncated else set())


def test_spark_refuses_a_value_written_in_two_transactions(spark: SparkSession) -> None:
    h = HistoryBuilder()
    h.transaction("t1", [("twice", 0, 0)])
    h.transaction("t2", [("twice", 0, 1)])
    with pytest.raises(Exception, match="twice"):
        anomaly_ids(h.frame(spark))


def test_spark_refuses_a_transactional_record_without_its_transaction(spark: SparkSession) -> None:
    h = HistoryBuilder()
    h.event("producer-0", "invoke", "txn-send", topic="kchaos", partition=0, value="orphan")
    with pytest.raises(Exception, match="names no transaction"):
        anomaly_ids(h.frame(spark))


def test_findings_show_examples_a_person_can_follow(spark: SparkSession) -> None:
    findings = find_anomalies(TRANSACTION_SCENARIOS["txn-lost"]().history.frame(spark))
    partial = {example["txn"]: example for example in findings[PARTIAL_TRANSACTION].examples}
    assert partial["t1"]["present"] == ["a1"] and partial["t1"]["missing"] == ["a2@1/0"]
    lost = {example["value"]: example for example in findings[LOST_COMMITTED].examples}
    assert (lost["b2"]["txn"], lost["b2"]["partition"], lost["b2"]["offset"]) == ("t2", 1, 2)
    assert findings[LOST_COMMITTED].by_partition == {"0": 1, "1": 2}
    aborted = find_anomalies(TRANSACTION_SCENARIOS["txn-aborted-read"]().history.frame(spark))[ABORTED_READ]
    first = aborted.examples[0]
    assert (first["value"], first["read_process"], first["txn"]) == ("x1", "consumer-0", "t1")
    assert first["aborted_index"] < first["read_index"]


def test_transaction_summary_counts_how_transactions_ended(spark: SparkSession) -> None:
    summary = transaction_summary(TRANSACTION_SCENARIOS["txn-aborted-read"]().history.frame(spark))
    assert summary is not None
    assert (summary.transactions, summary.committed, summary.aborted, summary.undecided) == (6, 0, 4, 2)
    assert summary.records == 7
    assert summary.reads_of_unknown_isolation == 2  # consumer-2 before its reassignment, consumer-3 after
    assert transaction_summary(SCENARIOS["clean"]().history.frame(spark)) is None


def test_the_summary_names_the_transaction_protocols_the_commits_and_aborts_used(spark: SparkSession) -> None:
    """Observed or derived, whichever a row says (`kchaos.model.txn_protocol`): what tells the judge a 4.x
    run still ran protocol 1 (librdkafka), where KIP-890's fix is not in force."""
    h = HistoryBuilder()
    h.transaction("t1", [("t1-0", 0, 0)])
    h.txn_end(TXN_COMMIT, "t1", detail={TRANSACTION_PROTOCOL_OBSERVED: 2})
    h.transaction("t2", [("t2-0", 1, 0)])
    h.txn_end(TXN_ABORT, "t2", detail={TRANSACTION_PROTOCOL_DERIVED: 1})
    summary = transaction_summary(h.frame(spark))
    assert summary is not None and summary.protocols == (1, 2)
    assert summary.to_json()["protocols"] == [1, 2]
    unsaid = transaction_summary(TRANSACTION_SCENARIOS["txn-aborted-read"]().history.frame(spark))
    assert unsaid is not None and unsaid.protocols == ()


def test_records_written_in_transactions_are_counted_as_writes(spark: SparkSession) -> None:
    """The rates take them with the plain sends; a run without any has no such keys."""
    history = TRANSACTION_SCENARIOS["txn-aborted-read"]().history
    frame = history.frame(spark)
    counted = summarize(frame)
    rows = history.pandas()
    records = rows[rows["f"] == TXN_SEND]
    assert counted["txn_records_invoked"] == (records["type"] == INVOKE).sum() > 0
    assert counted["txn_records_acknowledged"] == (records["type"] == OK).sum() > 0
    assert "txn_records_invoked" not in summarize(SCENARIOS["clean"]().history.frame(spark))
    assert not counted["sends_invoked"]  # the txn workload: its window is that of its records
    assert counted["writing_seconds"] == invoked_window(records)


def invoked_window(rows: pd.DataFrame) -> float:
    invoked = rows[rows["type"] == INVOKE]["wall_time"]
    return round(float(invoked.max() - invoked.min()), 3)


def test_an_eos_runs_window_is_its_paced_input_not_the_output_that_follows_it(spark: SparkSession) -> None:
    """Processors write their output in transactions as their input comes, until after writing stops:
    the rates are of the input producer's sends (a run once said 198% of the requested rate)."""
    history = eos_scenario().history
    rows = history.pandas()
    counted = summarize(history.frame(spark))
    assert counted["txn_records_invoked"] > 0
    assert counted["writing_seconds"] == invoked_window(rows[rows["f"] == SEND])
    assert invoked_window(rows[rows["f"] == TXN_SEND]) > 0
    assert counted["writing_seconds"] < invoked_window(rows[rows["f"].isin([SEND, TXN_SEND])])


# --- checkability and the oracle (no Spark) --------------------------------------------------------------

COMPLETE = RunPhases(True, (CLUSTER_UP, WORKLOAD, "heal", RECOVERY, READ_TO_END, REPLICA_DUMP))
SUMMARY = TransactionSummary(
    transactions=4, committed=2, aborted=1, records=6, committed_records=4, reads_of_unknown_isolation=0
)


def test_a_run_without_transactions_does_not_pass_their_anomalies_as_ok() -> None:
    reasons = unchecked_reasons(ANOMALY_NAMES, COMPLETE, replicas_present=True)
    assert reasons == dict.fromkeys(TRANSACTION_ANOMALY_NAMES, NO_TRANSACTIONS)


def test_a_run_that_wrote_only_transactions_does_not_pass_the_send_anomalies_as_ok() -> None:
    """No plain send was acknowledged: `lost-write`, `unseen` and `nonmonotonic-send` have nothing to be
    judged on, unless one was found anyway; a run with sends judges them as ever."""
    none_found = dict.fromkeys(ANOMALY_NAMES, 0)
    reasons = unchecked_reasons(ANOMALY_NAMES, COMPLETE, True, SUMMARY, none_found, sends_acknowledged=0)
    assert reasons == dict.fromkeys(SEND_ANOMALIES, NO_PLAIN_SENDS)
    found = {**none_found, LOST_WRITE: 1}
    assert LOST_WRITE not in unchecked_reasons(ANOMALY_NAMES, COMPLETE, True, SUMMARY, found, 0)
    assert unchecked_reasons(ANOMALY_NAMES, COMPLETE, True, SUMMARY, none_found, sends_acknowledged=7) == {}
    # Without transactions either, the run had nothing acknowledged for them to judge.
    no_acks = unchecked_reasons(SEND_ANOMALIES, COMPLETE, True, None, none_found, sends_acknowledged=0)
    assert no_acks == dict.fromkeys(SEND_ANOMALIES, NO_ACKNOWLEDGED_SENDS)


def test_losses_of_committed_transactions_need_the_final_read() -> None:
    partial = RunPhases(True, (CLUSTER_UP, WORKLOAD), "heal")
    reasons = unchecked_reasons(
        TRANSACTION_ANOMALY_NAMES, partial, replicas_present=True, transactions=SUMMARY
    )
    assert set(reasons) == {LOST_COMMITTED, PARTIAL_TRANSACTION}


def test_readers_of_unknown_isolation_leave_isolation_anomalies_unchecked_unless_some_were_found() -> None:
    unknown = replace(SUMMARY, reads_of_unknown_isolation=3)
    none_found = dict.fromkeys(TRANSACTION_ANOMALY_NAMES, 0)
    reasons = unchecked_reasons(TRANSACTION_ANOMALY_NAMES, COMPLETE, True, unknown, none_found)
    assert set(reasons) == {ABORTED_READ, UNCOMMITTED_READ}
    assert "3 records returned by readers whose isolation level" in reasons[ABORTED_READ]
    found = {**none_found, ABORTED_READ: 2}
    assert set(unchecked_reasons(TRANSACTION_ANOMALY_NAMES, COMPLETE, True, unknown, found)) == {
        UNCOMMITTED_READ
    }


DURABLE = GuaranteeContext(
    acks="all", min_insync_replicas=2, replication_factor=3, unclean_leader_election=False, idempotence=True,
    fault_kinds=frozenset({"crash"}), max_concurrent_crashed=1, kafka_version="4.1.1",
)  # fmt: skip


@pytest.mark.parametrize("anomaly", TRANSACTION_ANOMALY_NAMES)
def test_transaction_anomalies_are_violations_where_committed_records_survive(anomaly: str) -> None:
    judgement = judge(anomaly, 1, DURABLE)
    assert (judgement.expected, judgement.verdict) == ("none", "violation")
    assert "KIP-98" in judgement.source and "Jepsen" in judgement.rule
    assert judgement.known_fix is None


def test_an_unclean_election_excuses_lost_committed_records_but_never_an_aborted_read() -> None:
    unclean = replace(DURABLE, unclean_leader_election=True)
    assert judge(LOST_COMMITTED, 1, unclean).verdict == "permitted"
    assert judge(PARTIAL_TRANSACTION, 1, unclean).verdict == "permitted"
    assert judge(ABORTED_READ, 1, unclean).verdict == "violation"
    assert judge(UNCOMMITTED_READ, 1, unclean).verdict == "violation"


def test_acks_1_does_not_excuse_a_lost_committed_record() -> None:
    """A transactional producer writes with acks=all whatever the run's plain producers used."""
    assert judge(LOST_COMMITTED, 1, replace(DURABLE, acks="1")).rule_id == "committed-transaction-not-lost"
    assert judge(LOST_WRITE, 1, replace(DURABLE, acks="1")).verdict == "permitted"


def test_a_violation_before_4_0_names_the_delayed_end_txn_fix() -> None:
    judgement = judge(ABORTED_READ, 1, replace(DURABLE, kafka_version="3.9.1"))
    assert judgement.known_fix is not None and judgement.known_fix.startswith("KIP-890, fixed in 4.0.0")


# --- results and report ----------------------------------------------------------------------------------


def test_a_transactional_run_is_checked_judged_and_reported(tmp_path: Path, spark: SparkSession) -> None:
    run_dir = make_run(tmp_path, TRANSACTION_SCENARIOS["txn-lost"]().history, acks="all", partitions=3)
    results = check_run(run_dir)
    assert results["transactions"] == {
        "transactions": 7, "committed": 5, "aborted": 1, "undecided": 1, "records": 12,
        "committed_records": 8, "reads_of_unknown_isolation": 0, "protocols": [],
    }  # fmt: skip
    anomalies = results["anomalies"]
    assert (anomalies[LOST_COMMITTED]["count"], anomalies[LOST_COMMITTED]["verdict"]) == (3, "violation")
    assert anomalies[PARTIAL_TRANSACTION]["rule_id"] == "transactions-atomic"
    assert anomalies[ABORTED_READ]["verdict"] == "ok"
    assert results["verdict"] == "violation"
    html = write_report(run_dir, results, spark).read_text(encoding="utf-8")
    assert 'id="transactions-section"' in html and 'id="examples-table-partial-transaction"' in html
    assert html.count('id="examples-lost-committed"') == 1
    assert "https://" not in html


def test_a_run_without_transactions_lists_them_unchecked_and_has_no_transactions_section(
    tmp_path: Path, spark: SparkSession
) -> None:
    run_dir = make_run(tmp_path, SCENARIOS["clean"]().history, acks="all")
    results = check_run(run_dir)
    assert results["transactions"] is None
    for name in TRANSACTION_ANOMALY_NAMES:
        finding = results["anomalies"][name]
        assert (finding["checked"], finding["verdict"], finding["unchecked_reason"]) == (
            False,
            "unchecked",
            NO_TRANSACTIONS,
        )
    assert results["verdict"] == "ok"
    html = write_report(run_dir, results, spark).read_text(encoding="utf-8")
    assert "transactions-section" not in html and "aborted-read" not in html
    assert json.loads((run_dir / "results.json").read_text(encoding="utf-8")) == results
