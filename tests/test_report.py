"""End to end from a run directory: check_run writes results.json, write_report the HTML report."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession

from checkers.results import check_run
from harness.history import HistoryWriter
from spark_analysis.report import write_report
from tests.histories import HistoryBuilder

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


def make_run(tmp_path: Path, h: HistoryBuilder, **config: Any) -> Path:
    run_dir = tmp_path / "runs" / "report-test"
    run_dir.mkdir(parents=True)
    (run_dir / "config.json").write_text(json.dumps({**CONFIG, **config}), encoding="utf-8")
    writer = HistoryWriter(run_dir / "history", "report-test")
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
    assert results["anomalies"]["unseen"]["count"] == 1
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
