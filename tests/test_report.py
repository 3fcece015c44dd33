"""End to end from a run directory: check_run writes results.json, write_report the HTML report; and the
pieces the report draws (latency pairing, per-partition losses, leader series) on tiny histories."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from pyspark.sql import SparkSession

from kchaos.checkers.anomalies.findings import find_anomalies
from kchaos.checkers.results import check_run
from kchaos.checkers.rules.anomaly_names import (
    INCONSISTENT_OFFSET,
    LOST_WRITE,
    NONMONOTONIC_POLL,
    NONMONOTONIC_SEND,
    POLL_SKIP,
    TRUNCATED_READ,
    UNSEEN,
)
from kchaos.checkers.topic_tally import topic_tally
from kchaos.model.events import TXN_ABORT, TXN_COMMIT
from kchaos.model.history import HistoryWriter
from kchaos.model.history_schema import SCHEMA
from kchaos.model.run_files import RunDir
from kchaos.runner.cli import main
from kchaos.spark_analysis.report import read_results, write_report
from kchaos.spark_analysis.report_plots import leader_series
from kchaos.spark_analysis.timeline import (
    COMPLETED,
    NEVER_COMPLETED,
    NO_INVOKE,
    LeaderChange,
    SendPoint,
    latencies,
    leader_changes,
    run_span,
    sample_fractions,
)
from kchaos.spark_analysis.unread import unread_by_partition
from tests.histories import TOPIC, HistoryBuilder

CONFIG = {
    "run_id": "report-test",
    "acks": "1",
    "min_insync_replicas": 1,
    "replication_factor": 3,
    "unclean_leader_election": False,
    "idempotence": False,
    "kafka_version": "4.1.0",
    "topic": "kchaos",
}


def write_timed(run_dir: Path, h: HistoryBuilder) -> None:
    """Writes the builder's rows with their own times (a real writer would stamp them microseconds apart),
    the monotonic clock following the wall clock, so plots and latencies show what the scenario says."""
    files = RunDir(run_dir)
    files.history.mkdir(parents=True)
    start = h.rows[0]["wall_time"]
    rows = [{**row, "time_ns": round((row["wall_time"] - start) * 1e9)} for row in h.rows]
    pq.write_table(pa.Table.from_pylist(rows, schema=SCHEMA), files.history_parquet)


def make_run(tmp_path: Path, h: HistoryBuilder, *, timed: bool = False, **config: Any) -> Path:
    """A run directory holding the builder's history: replayed through a real writer, or `timed` as built."""
    run_dir = tmp_path / "runs" / "report-test"
    run_dir.mkdir(parents=True)
    RunDir(run_dir).config.write_text(json.dumps({**CONFIG, **config}), encoding="utf-8")
    if timed:
        write_timed(run_dir, h)
    else:
        writer = HistoryWriter(RunDir(run_dir), "report-test")
        h.replay(writer)
        writer.finish()
    return run_dir


def lossy_history() -> HistoryBuilder:
    """A leader crash mid-run under acks=1: two acknowledged writes vanish, one below the read horizon
    (its offset reused by the send that timed out during the crash), one at the tail."""
    h = HistoryBuilder()
    written = h.sends(20)
    h.fault("kill-leader", "kill-leader#1", "start", kind="crash", nodes=[1])
    h.send("timed-out", outcome="info")
    h.fault("kill-leader", "kill-leader#1", "stop", kind="crash", nodes=[1])
    h.fault("isolate-leader", "isolate-leader#1", "start", kind="partition", nodes=[2])
    h.final_reads(
        sorted([*(pair for pair in written if pair[1] not in (7, 19)), ("timed-out", 7)], key=lambda p: p[1])
    )
    return h


def test_check_run_writes_results_json(tmp_path: Path, spark: SparkSession) -> None:
    run_dir = make_run(tmp_path, lossy_history())
    results = check_run(run_dir, max_examples=5)
    assert json.loads((run_dir / "results.json").read_text(encoding="utf-8")) == results
    assert results["run_id"] == "report-test"
    assert results["verdict"] == "permitted"
    assert results["context"]["fault_kinds"] == ["crash", "partition"]
    assert results["context"]["max_concurrent_crashed"] == 1
    lost = results["anomalies"]["lost-write"]
    assert (lost["count"], lost["expected"], lost["verdict"]) == (1, "possible", "permitted")
    assert lost["examples"][0]["value"] == "v0-7"
    assert lost["by_partition"] == {"0": 1}
    assert results["anomalies"]["unseen"]["count"] == 1
    assert results["anomalies"]["unseen"]["by_partition"] == {"0": 1}
    assert "by_partition" not in results["anomalies"]["duplicate"]
    assert results["summary"]["sends_indeterminate"] == 1
    assert [(f["key"], f["kind"], f["stop_wall"] is None) for f in results["faults"]] == [
        ("kill-leader#1", "crash", False),
        ("isolate-leader#1", "partition", True),
    ]


def test_acks_all_loss_is_a_violation(tmp_path: Path, spark: SparkSession) -> None:
    run_dir = make_run(tmp_path, lossy_history(), acks="all", min_insync_replicas=2, idempotence=True)
    results = check_run(run_dir)
    assert results["verdict"] == "violation"
    assert results["anomalies"]["lost-write"]["verdict"] == "violation"
    assert results["anomalies"]["duplicate"]["verdict"] == "ok"


def test_report_is_self_contained_html(tmp_path: Path, spark: SparkSession) -> None:
    run_dir = make_run(tmp_path, lossy_history())
    results = check_run(run_dir)
    report = write_report(run_dir, results, spark)
    assert report == run_dir / "report.html"
    html = report.read_text(encoding="utf-8")
    assert 'class="verdict verdict-permitted"' in html
    for name in ("lost-write", "unseen", "duplicate", "inconsistent-offset"):
        assert f'<a href="#examples-{name}">{name}</a>' in html
    assert "acks-1-failover" in html and "Kafka producer config `acks`" in html
    assert "data:image/png;base64," in html
    assert "v0-7" in html and "kill-leader#1" in html and "never stopped" in html
    assert "http://" not in html and "https://" not in html
    assert 'id="plot-latency"' in html and 'id="plot-unread"' in html
    assert "Leader changes were not recorded" in html


def eventful_history() -> HistoryBuilder:
    """A run worth drawing (and the browser test's page). Partitions 0-2 are led by brokers 1-3; broker 1
    crashes, partition 0 is leaderless, then led by broker 2, while its sends fail, time out, wait out the
    election or never complete; an ack arrives for a send whose invoke was not recorded. The new leaders
    lacked offsets 5 and 6 of partition 0 and 3 of partition 2 and reused them for sends whose outcome was
    indeterminate (`lost-write`); the last write to partition 1 is gone (`unseen`); a consumer skips offset
    2 of partition 1 (`poll-skip`)."""
    h = HistoryBuilder(step=0.05)
    for p in range(3):
        h.leader(p, p + 1, [1, 2, 3])
    written: dict[int, list[tuple[str, int]]] = {p: [] for p in range(3)}

    def write(n: int, p: int, prefix: str) -> None:
        value, offset = f"{prefix}{p}-{len(written[p])}", len(written[p])
        h.invoke(value, partition=p)
        h.advance(0.003 * (n % 7))  # latencies that vary a little
        h.ack(value, offset, partition=p)
        written[p].append((value, offset))

    for n in range(45):
        write(n, n % 3, "v")
    h.fault("kill-leader", "kill-leader#1", "start", kind="crash", nodes=[1])
    h.leader(0, -1, [2, 3])
    h.invoke("slow-0", partition=0)
    h.send("failed-0", outcome="fail", partition=0)
    reused = {0: ["timed-out-0", "never-answered"], 2: ["timed-out-2"]}
    h.send("timed-out-0", outcome="info", partition=0)
    h.send("timed-out-2", outcome="info", partition=2)
    h.invoke("never-answered", partition=0)
    h.advance(1.5)
    h.leader(0, 2, [2, 3])
    h.ack("slow-0", len(written[0]), partition=0)
    written[0].append(("slow-0", len(written[0])))
    h.fault("kill-leader", "kill-leader#1", "stop", kind="crash", nodes=[1])
    for n in range(30):
        write(n, n % 3, "w")
    h.leader(0, 2, [1, 2, 3])
    h.ack("orphan-2", len(written[2]), partition=2)
    written[2].append(("orphan-2", len(written[2])))
    h.fault("isolate-leader", "isolate-leader#1", "start", kind="partition", nodes=[2])
    h.assign("consumer-0", [1])
    for value, offset in written[1][:5]:
        if offset != 2:
            h.read(value, offset, partition=1)
    lost = {0: [5, 6], 1: [], 2: [3]}
    for p, pairs in written.items():
        replaced = dict(zip(lost[p], reused.get(p, []), strict=True))
        final = [(replaced.get(offset, value), offset) for value, offset in pairs]
        h.final_reads(final[:-1] if p == 1 else final, partition=p)
    return h


def test_eventful_run_report_has_every_section(tmp_path: Path, spark: SparkSession) -> None:
    run_dir = make_run(tmp_path, eventful_history(), timed=True, partitions=3)
    results = check_run(run_dir)
    anomalies = results["anomalies"]
    assert anomalies[LOST_WRITE]["by_partition"] == {"0": 2, "2": 1}
    assert anomalies[UNSEEN]["by_partition"] == {"1": 1}
    assert anomalies["poll-skip"]["count"] == 1
    assert results["lost"]["parts"]["lost-write"] == 3 and results["lost"]["parts"]["unseen"] == 1
    html = write_report(run_dir, results, spark).read_text(encoding="utf-8")
    lost = results["lost"]["count"]
    assert f'<td id="run-lost">{lost} acknowledged records no longer in Kafka after healing (' in html
    for plot in ("latency", "throughput", "leaders", "unread"):
        assert f'id="plot-{plot}"' in html, plot
    assert "not recorded" not in html
    assert "Latency of every send (" in html


# --- latency ------------------------------------------------------------------------------------------------


def test_latency_pairs_each_invoke_with_its_completion(spark: SparkSession) -> None:
    """The builder's monotonic clock advances 10 ms per event, so each latency is 10 ms per event between."""
    h = HistoryBuilder(step=0.01)
    h.invoke("a")  # 0
    h.invoke("b", process="producer-1")  # 1
    h.ack("a", 0)  # 2: a took 20 ms
    h.event(
        "producer-1", "fail", "send", topic=TOPIC, partition=0, key="b", value="b", error="NOT_LEADER"
    )  # 3
    h.invoke("c")  # 4: never completes; the history ends at 6
    h.ack("d", 1, process="producer-2")  # 5: no invoke recorded
    h.final_read("a", 0)  # 6
    frame = h.frame(spark)
    span = run_span(frame)
    assert span is not None and (span.sends_invoked, span.sends_acknowledged) == (3, 2)
    series = latencies(frame, span)
    assert not series.sampled
    points = sorted(series.points)
    assert [(p.outcome, p.kind) for p in points] == [
        ("ok", COMPLETED),
        ("fail", COMPLETED),
        ("info", NEVER_COMPLETED),
        ("ok", NO_INVOKE),
    ]
    assert [p.at for p in points] == pytest.approx([0.0, 0.01, 0.04, 0.05])
    assert [p.latency_ms for p in points[:3]] == pytest.approx([20.0, 20.0, 20.0])
    assert points[3].latency_ms is None


def test_latency_sample_is_deterministic_and_keeps_every_failure(spark: SparkSession) -> None:
    h = HistoryBuilder()
    for n in range(60):
        h.send(f"v{n}", n)
    for n in range(5):
        h.send(f"f{n}", outcome="fail")
    frame = h.frame(spark)
    span = run_span(frame)
    assert span is not None
    first, again = latencies(frame, span, limit=20), latencies(frame, span, limit=20)
    assert first.sampled and first.every_unacknowledged_kept and first.sends == 65
    assert sorted(first.points) == sorted(again.points)
    outcomes = [p.outcome for p in first.points]
    assert outcomes.count("fail") == 5
    assert 0 < outcomes.count("ok") < 60


def test_sample_fractions_give_failures_the_budget_first() -> None:
    assert sample_fractions(50, 50, 200) == (1.0, 1.0)
    assert sample_fractions(1000, 10, 200) == pytest.approx((0.19, 1.0))
    assert sample_fractions(10, 1000, 200) == pytest.approx((1.0, 0.19))
    assert sample_fractions(1000, 1000, 200) == pytest.approx((0.1, 0.1))
    assert sample_fractions(0, 500, 200) == pytest.approx((1.0, 0.4))


# --- lost writes per partition ------------------------------------------------------------------------------


def test_unread_writes_are_counted_per_partition(spark: SparkSession) -> None:
    h = HistoryBuilder()
    written = {p: h.sends(10, partition=p) for p in range(3)}
    h.final_reads([w for w in written[0] if w[1] not in (2, 3)], partition=0)
    h.final_reads([w for w in written[1] if w[1] not in (4, 8, 9)], partition=1)
    h.final_reads(written[2], partition=2)
    findings = find_anomalies(h.frame(spark))
    assert findings[LOST_WRITE].by_partition == {"0": 2, "1": 1}
    assert findings[UNSEEN].by_partition == {"1": 2}
    assert sum((findings[LOST_WRITE].by_partition or {}).values()) == findings[LOST_WRITE].count
    assert findings["duplicate"].by_partition is None


def test_anomalies_a_truncation_causes_are_counted_per_partition(spark: SparkSession) -> None:
    """After a power loss each partition is judged by its own replicas, so every anomaly a truncation can
    cause says where it happened: here a send acknowledged below an earlier one, in partition 1 only."""
    h = HistoryBuilder()
    h.final_reads(h.sends(3, partition=0), partition=0)
    written = h.sends(3, partition=1)
    h.send("old", 3, partition=1)
    h.send("new", 3, partition=1)  # the old leader's 3 truncated, the offset given again
    h.final_reads([*written, ("new", 3)], partition=1)
    findings = find_anomalies(h.frame(spark))
    assert findings[NONMONOTONIC_SEND].count == 1
    assert findings[NONMONOTONIC_SEND].by_partition == {"1": 1}
    assert findings[LOST_WRITE].by_partition == {"1": 1}
    for name in (INCONSISTENT_OFFSET, POLL_SKIP, NONMONOTONIC_POLL, TRUNCATED_READ):
        assert findings[name].by_partition == {}, name


def test_clean_history_has_empty_per_partition_counts(spark: SparkSession) -> None:
    h = HistoryBuilder()
    h.final_reads(h.sends(5))
    findings = find_anomalies(h.frame(spark))
    assert (findings[LOST_WRITE].by_partition, findings[UNSEEN].by_partition) == ({}, {})


def test_per_partition_counts_cover_every_partition_of_the_topic() -> None:
    results = {"anomalies": {LOST_WRITE: {"by_partition": {"2": 3}}, UNSEEN: {"by_partition": {"10": 1}}}}
    counts = unread_by_partition(results, {"partitions": 3})
    assert counts is not None and counts.any
    assert (counts.partitions, counts.lost, counts.unseen) == (
        ["0", "1", "2", "10"],
        [0, 0, 3, 0],
        [0, 0, 0, 1],
    )
    assert unread_by_partition({"anomalies": {LOST_WRITE: {"count": 1}}}, {}) is None
    # A run of several topics: every partition of each, topic by topic.
    results = {"anomalies": {LOST_WRITE: {"by_partition": {"t-1/1": 2}}, UNSEEN: {"by_partition": {}}}}
    counts = unread_by_partition(results, {"partitions": 2, "topics": 2, "topic": "t"})
    assert counts is not None
    assert (counts.partitions, counts.lost) == (["t/0", "t/1", "t-1/0", "t-1/1"], [0, 0, 0, 2])


# --- leaders ------------------------------------------------------------------------------------------------


def test_leader_changes_are_read_from_the_watchers_rows(spark: SparkSession) -> None:
    h = HistoryBuilder(step=1.0)
    h.leader(0, 1, [1, 2, 3])  # at 0 s
    h.send("v", 0)  # 1, 2
    h.leader(0, -1, [2, 3])  # 3
    h.leader(1, 2, [2])  # 4
    h.fault("kill", "kill#1", "start", kind="crash")  # nemesis rows are not leader rows
    frame = h.frame(spark)
    span = run_span(frame)
    assert span is not None
    changes = leader_changes(frame, span)
    assert changes == [
        LeaderChange(0.0, TOPIC, 0, 1, (1, 2, 3)),
        LeaderChange(3.0, TOPIC, 0, -1, (2, 3)),
        LeaderChange(4.0, TOPIC, 1, 2, (2,)),
    ]
    assert leader_series(changes, span.length) == {
        "p0": ([0.0, 3.0, 5.0], [1, -1, -1]),
        "p1": ([4.0, 5.0], [2, 2]),
    }


def test_leader_series_names_topics_only_when_there_are_several() -> None:
    changes = [LeaderChange(1.0, "a", 0, 1, (1,)), LeaderChange(2.0, "b", 0, 2, (2,))]
    assert set(leader_series(changes, 3.0)) == {"a/p0", "b/p0"}


def test_send_point_is_a_plain_tuple() -> None:
    assert SendPoint(1.0, 2.0, "ok", COMPLETED) == (1.0, 2.0, "ok", COMPLETED)


# --- kchaos report ------------------------------------------------------------------------------------------


def test_kchaos_report_redraws_from_results_json_without_checking(
    tmp_path: Path, spark: SparkSession
) -> None:
    run_dir = make_run(tmp_path, lossy_history())
    check_run(run_dir)
    before = (run_dir / "results.json").read_text(encoding="utf-8")
    result = CliRunner().invoke(main, ["report", str(run_dir)])
    assert result.exit_code == 0, result.output
    assert result.output.strip() == str(run_dir / "report.html")
    assert (run_dir / "report.html").read_text(encoding="utf-8").startswith("<!doctype html>")
    assert (run_dir / "results.json").read_text(encoding="utf-8") == before
    assert write_report(run_dir, read_results(run_dir), spark) == run_dir / "report.html"


def test_kchaos_report_refuses_unchecked_and_bad_directories(tmp_path: Path) -> None:
    unchecked = make_run(tmp_path, lossy_history())
    result = CliRunner().invoke(main, ["report", str(unchecked)])
    assert result.exit_code == 2
    assert f"has no results.json; check the run first: kchaos check {unchecked}" in result.output
    result = CliRunner().invoke(main, ["report", str(tmp_path / "nowhere")])
    assert result.exit_code == 2 and "nowhere is not a directory" in result.output
    result = CliRunner().invoke(main, ["report", str(tmp_path)])
    assert result.exit_code == 2 and "is not a run directory" in result.output
    (unchecked / "results.json").write_text("{", encoding="utf-8")
    result = CliRunner().invoke(main, ["report", str(unchecked)])
    assert result.exit_code == 2 and "is not valid JSON" in result.output
    with pytest.raises(FileNotFoundError, match="kchaos check"):
        read_results(tmp_path)


def two_topic_history() -> HistoryBuilder:
    """`--topics 2`: producer-0 writes the test topic, producer-1 the other, at the same partition and
    offsets; the second topic's last acknowledged write is missing from the final read."""
    h = HistoryBuilder()
    for topic, process in ((TOPIC, "producer-0"), (f"{TOPIC}-1", "producer-1")):
        for n in range(4):
            value = f"{process}-{n}"
            h.invoke(value, topic=topic, process=process)
            h.ack(value, n, topic=topic, process=process)
        kept = 4 if topic == TOPIC else 3  # the other topic's last write is never read
        for n in range(kept):
            h.final_read(f"{process}-{n}", n, topic=topic)
    return h


def test_a_run_of_several_topics_says_per_topic_what_no_read_returned(
    tmp_path: Path, spark: SparkSession
) -> None:
    run_dir = make_run(tmp_path, two_topic_history(), topics=2, partitions=1)
    results = check_run(run_dir)
    assert results["topics"]["tally"] == {
        TOPIC: {"acknowledged": 4, "read_final": 4, "read_poll": 0, "unread": 0},
        f"{TOPIC}-1": {"acknowledged": 4, "read_final": 3, "read_poll": 0, "unread": 1},
    }
    assert results["lost"]["count"] == 1
    # Partition 0 of each topic is its own: the count per partition names the topic.
    assert results["anomalies"][UNSEEN]["by_partition"] == {f"{TOPIC}-1/0": 1}
    assert results["anomalies"][LOST_WRITE]["by_partition"] == {}
    html = write_report(run_dir, results, spark).read_text(encoding="utf-8")
    assert (
        f'<td id="run-topics" class="warning">{TOPIC}: 4 acknowledged, 4 in the final read, 0 never read; '
        f"{TOPIC}-1: 4 acknowledged, 3 in the final read, 1 never read</td>"
    ) in html


def test_a_run_of_one_topic_has_no_topic_row(tmp_path: Path, spark: SparkSession) -> None:
    results = check_run(make_run(tmp_path, lossy_history()))
    assert "topics" not in results


def test_a_txn_run_of_several_topics_counts_the_committed_records_alone(
    tmp_path: Path, spark: SparkSession
) -> None:
    """An aborted transaction's record is rightly never read; a committed one's missing is counted."""
    h = HistoryBuilder()
    other = f"{TOPIC}-1"
    for topic, process in ((TOPIC, "producer-0"), (other, "producer-1")):
        for n, f in enumerate((TXN_COMMIT, TXN_ABORT, TXN_COMMIT)):
            txn = f"{process}:{n}"
            h.txn_begin(txn, process=process)
            h.txn_send(txn, f"{process}-{n}", n, topic=topic, process=process)
            h.txn_end(f, txn, process=process)
    h.final_read("producer-0-0", 0)
    h.final_read("producer-0-2", 2)
    h.final_read("producer-1-0", 0, topic=other)  # producer-1-2, committed, is gone
    tally = topic_tally(h.frame(spark), [TOPIC, other])
    assert tally == {
        TOPIC: {"acknowledged": 2, "read_final": 2, "read_poll": 0, "unread": 0},
        other: {"acknowledged": 2, "read_final": 1, "read_poll": 0, "unread": 1},
    }
