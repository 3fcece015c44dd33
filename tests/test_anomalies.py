"""The anomaly definitions against synthetic histories whose ground truth each test states."""

from __future__ import annotations

import pytest
from pyspark.sql import SparkSession

from kchaos.checkers.anomalies.findings import AnomalyFinding, find_anomalies
from kchaos.checkers.anomalies.registry import ANOMALIES
from kchaos.checkers.rules.anomaly_names import (
    ANOMALY_NAMES,
    DUPLICATE,
    INCONSISTENT_OFFSET,
    LOST_WRITE,
    NONMONOTONIC_POLL,
    NONMONOTONIC_SEND,
    POLL_SKIP,
    REPLICA_DIVERGENCE,
    TRANSACTION_ANOMALY_NAMES,
    TRUNCATED_READ,
    UNSEEN,
)
from kchaos.checkers.summary import summarize
from tests.histories import TOPIC, HistoryBuilder


def counts(findings: dict[str, AnomalyFinding]) -> dict[str, int | None]:
    return {name: finding.count for name, finding in findings.items()}


def zero_except(*, replicas: bool = False, **nonzero: int) -> dict[str, int | None]:
    """Counts of a history with only the named anomalies; without replica dumps divergence is unchecked,
    and without transactions so are the transaction anomalies."""
    expected: dict[str, int | None] = dict.fromkeys(ANOMALIES, 0)
    if not replicas:
        expected[REPLICA_DIVERGENCE] = None
    expected.update(dict.fromkeys(TRANSACTION_ANOMALY_NAMES, None))
    expected.update({name.replace("_", "-"): count for name, count in nonzero.items()})
    return expected


def clean_history() -> HistoryBuilder:
    """Two partitions, 50 sends each, some polled during the run, all drained by the final read."""
    h = HistoryBuilder()
    written = {p: h.sends(50, partition=p) for p in (0, 1)}
    for value, offset in written[0][:20]:
        h.read(value, offset, partition=0)
    for p, pairs in written.items():
        h.final_reads(pairs, partition=p)
    return h


def test_registry_names_are_the_design_names() -> None:
    assert list(ANOMALIES) == [
        LOST_WRITE,
        UNSEEN,
        DUPLICATE,
        INCONSISTENT_OFFSET,
        NONMONOTONIC_SEND,
        POLL_SKIP,
        NONMONOTONIC_POLL,
        TRUNCATED_READ,
        REPLICA_DIVERGENCE,
        *TRANSACTION_ANOMALY_NAMES,
    ]
    assert tuple(ANOMALIES) == ANOMALY_NAMES


def test_clean_history_has_no_anomalies(spark: SparkSession) -> None:
    findings = find_anomalies(clean_history().frame(spark))
    assert counts(findings) == zero_except()
    assert all(finding.examples == [] for finding in findings.values())


def test_summary_counts_sends_reads_and_partitions(spark: SparkSession) -> None:
    h = clean_history()
    h.send("failed", partition=0, outcome="fail")
    h.send("timed-out", partition=1, outcome="info", error="_MSG_TIMED_OUT: Local: Message timed out")
    h.send("broker-error", partition=1, outcome="info", error="NOT_ENOUGH_REPLICAS_AFTER_APPEND: ...")
    invoked = [row["wall_time"] for row in h.rows if row["f"] == "send" and row["type"] == "invoke"]
    assert summarize(h.frame(spark)) == {
        "writing_seconds": round(max(invoked) - min(invoked), 3),
        "sends_invoked": 103,
        "sends_acknowledged": 100,
        "sends_failed": 1,
        "sends_indeterminate": 2,
        "sends_timed_out": 1,
        "records_read_poll": 20,
        "records_read_final": 100,
        "partitions_read": 2,
    }


def test_three_lost_writes_among_a_hundred(spark: SparkSession) -> None:
    h = HistoryBuilder()
    written = h.sends(100)
    missing = {10, 50, 70}
    h.final_reads(pair for pair in written if pair[1] not in missing)
    findings = find_anomalies(h.frame(spark))
    # The final read jumps over each missing offset, which is itself a poll-skip of the final reader.
    assert counts(findings) == zero_except(lost_write=3, poll_skip=3)
    examples = findings[LOST_WRITE].examples
    assert [e["value"] for e in examples] == ["v0-10", "v0-50", "v0-70"]
    first = examples[0]
    assert (first["topic"], first["partition"], first["offset"]) == (TOPIC, 0, 10)
    assert first["highest_read_offset"] == 99
    assert first["read_at_offset"] == []
    assert first["read_at_highest_offset"] == ["v0-99"]
    assert first["process"] == "producer-0"
    assert h.rows[first["ok_index"]]["value"] == "v0-10" and h.rows[first["ok_index"]]["type"] == "ok"


def test_truncation_then_offset_reuse_is_a_lost_write_showing_the_replacement(spark: SparkSession) -> None:
    """The old leader acknowledged `old` at 3; the new leader, lacking it, gave offset 3 to `new`."""
    h = HistoryBuilder()
    written = h.sends(3)
    h.send("old", 3)
    h.send("new", 3)
    h.final_reads([*written, ("new", 3)])
    findings = find_anomalies(h.frame(spark))
    # The producer's later send landed at the offset of its earlier one: also a nonmonotonic send.
    assert counts(findings) == zero_except(lost_write=1, nonmonotonic_send=1)
    (example,) = findings[LOST_WRITE].examples
    assert example["value"] == "old"
    assert example["read_at_offset"] == ["new"]


def test_truncated_tail_is_unseen(spark: SparkSession) -> None:
    h = HistoryBuilder()
    written = h.sends(100)
    h.final_reads(written[:95])
    findings = find_anomalies(h.frame(spark))
    assert counts(findings) == zero_except(unseen=5)
    assert [e["offset"] for e in findings[UNSEEN].examples] == [95, 96, 97, 98, 99]
    assert all(e["highest_read_offset"] == 94 for e in findings[UNSEEN].examples)


def test_partition_never_read_makes_every_acknowledged_send_to_it_unseen(spark: SparkSession) -> None:
    h = HistoryBuilder()
    h.final_reads(h.sends(10, partition=0), partition=0)
    h.sends(4, partition=1)
    findings = find_anomalies(h.frame(spark))
    assert counts(findings) == zero_except(unseen=4)
    assert {e["partition"] for e in findings[UNSEEN].examples} == {1}
    assert all(e["highest_read_offset"] is None for e in findings[UNSEEN].examples)


def test_unacknowledged_sends_that_vanish_are_not_losses(spark: SparkSession) -> None:
    h = HistoryBuilder()
    written = h.sends(10)
    h.send("failed", outcome="fail")
    h.send("timed-out", outcome="info")
    h.send("timed-out-but-written", outcome="info")
    h.final_reads([*written, ("timed-out-but-written", 10)])
    assert counts(find_anomalies(h.frame(spark))) == zero_except()


def test_value_at_two_offsets_is_one_duplicate_not_an_inconsistency(spark: SparkSession) -> None:
    h = HistoryBuilder()
    written = h.sends(5)
    h.send("retried", 7)  # acknowledged at 7; the first attempt also landed at 5
    h.final_reads([*written, ("retried", 5), ("x", 6), ("retried", 7)])
    h.read("retried", 7, process="consumer-1")  # re-reading one offset is not another copy
    findings = find_anomalies(h.frame(spark))
    assert counts(findings) == zero_except(duplicate=1)
    (example,) = findings[DUPLICATE].examples
    assert example["value"] == "retried"
    assert [r["offset"] for r in example["read_at"]] == [5, 7]
    assert example["acked_at"] == {"topic": TOPIC, "partition": 0, "offset": 7}


def test_one_offset_read_with_two_values_is_inconsistent(spark: SparkSession) -> None:
    h = HistoryBuilder()
    written = h.sends(5)
    h.read("v0-2", 2, process="consumer-1")
    h.read("ghost", 2, process="consumer-2")
    h.final_reads(written)
    findings = find_anomalies(h.frame(spark))
    # `ghost` was polled but the final read does not hold it: it was visible, then lost.
    assert counts(findings) == zero_except(inconsistent_offset=1, truncated_read=1)
    (example,) = findings[INCONSISTENT_OFFSET].examples
    assert example["kind"] == "values-differ"
    assert (example["partition"], example["offset"]) == (0, 2)
    assert example["values"] == ["ghost", "v0-2"]
    assert example["acked_values"] == ["v0-2"]
    readers = {r["value"]: r["readers"] for r in example["reads"]}
    assert readers == {"ghost": ["consumer-2"], "v0-2": ["consumer-1", "final-reader"]}


def test_truncated_reads_say_whether_their_records_were_acknowledged(spark: SparkSession) -> None:
    """`v0-4` was acknowledged, read, then truncated away (the final read ends at offset 3); `ghost` was
    read but its send never acknowledged. Only the first is an acknowledged record gone from Kafka."""
    h = HistoryBuilder()
    written = h.sends(5)
    h.read("v0-4", 4, process="consumer-1")
    h.read("ghost", 5, process="consumer-1")
    h.final_reads(written[:4])
    findings = find_anomalies(h.frame(spark))
    assert findings[TRUNCATED_READ].count == 2
    assert findings[TRUNCATED_READ].by_kind == {"acknowledged": 1, "unacknowledged": 1}
    assert {e["value"]: e["acknowledged"] for e in findings[TRUNCATED_READ].examples} == {
        "v0-4": True,
        "ghost": False,
    }


def test_value_read_only_away_from_its_acknowledged_offset_is_inconsistent(spark: SparkSession) -> None:
    h = HistoryBuilder()
    written = h.sends(5)
    h.send("moved", 5)
    h.final_reads([*written, ("filler", 5), ("filler2", 6), ("moved", 7)])
    findings = find_anomalies(h.frame(spark))
    assert counts(findings) == zero_except(inconsistent_offset=1)
    (example,) = findings[INCONSISTENT_OFFSET].examples
    assert example["kind"] == "offset-differs"
    assert example["value"] == "moved"
    assert example["acked_at"]["offset"] == 5
    assert [r["offset"] for r in example["read_at"]] == [7]


def test_nemesis_rows_do_not_disturb_the_checks(spark: SparkSession) -> None:
    h = HistoryBuilder()
    h.fault("kill-leader", "kill-leader#1", "start", kind="crash")
    written = h.sends(20)
    h.fault("isolate-leader", "isolate-leader#1", "start", kind="partition", nodes=[2, 3])
    h.fault("kill-leader", "kill-leader#1", "stop", kind="crash")
    h.fault("isolate-leader", "isolate-leader#1", "stop", kind="partition", nodes=[2, 3])
    h.final_reads(written)
    frame = h.frame(spark)
    assert counts(find_anomalies(frame)) == zero_except()
    assert summarize(frame)["sends_invoked"] == 20


@pytest.mark.parametrize("max_examples", [0, 4])
def test_examples_are_capped_but_counts_are_not(spark: SparkSession, max_examples: int) -> None:
    h = HistoryBuilder()
    written = h.sends(30)
    h.final_reads(written[1::2])  # odd offsets only: every even one up to 28 is below the horizon (29)
    findings = find_anomalies(h.frame(spark), max_examples=max_examples)
    assert findings[LOST_WRITE].count == 15
    assert [e["offset"] for e in findings[LOST_WRITE].examples] == [0, 2, 4, 6][:max_examples]
