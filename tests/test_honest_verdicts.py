"""A verdict says what it rests on: faults asked for against applied, phases completed, rates reached.

Synthetic histories with known ground truth, checked end to end through `check_run` and `kchaos check`:
a run stopped during a fault is never a `violation` for what it did not get to read, a run none of whose
faults happened is never `ok`, and a skipped fault or a missed rate shows where a person reads the verdict.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from pyspark.sql import SparkSession

from kchaos.checkers.results import check_run
from kchaos.checkers.rules.anomaly_names import (
    DUPLICATE,
    LOST_WRITE,
    REPLICA_DIVERGENCE,
    TRUNCATED_READ,
    UNSEEN,
)
from kchaos.checkers.summary import rates
from kchaos.model.history import HistoryWriter
from kchaos.model.phase_record import (
    CLUSTER_UP,
    RECOVERY,
    REPLICA_DUMP,
    RUN_PHASES,
    WORKLOAD,
)
from kchaos.model.run_files import RunDir
from kchaos.runner.cli import main
from kchaos.spark_analysis.report import write_report
from tests.histories import HistoryBuilder
from tests.test_report import write_timed

CONFIG = {
    "run_id": "honest",
    "acks": "all",
    "min_insync_replicas": 2,
    "replication_factor": 3,
    "unclean_leader_election": False,
    "idempotence": True,
    "topic": "kchaos",
    "rate": 200.0,
}

NETEM_SKIP = (
    "latency: no sch_netem (this kernel has no netem qdisc, so links cannot be degraded here); the fault "
    "is skipped. Load the module (modprobe sch_netem) or run on a kernel that has it."
)


def make_run(
    tmp_path: Path, h: HistoryBuilder, planned: list[str] | None = None, timed: bool = False, **config: Any
) -> Path:
    """A run directory with the builder's history, replayed through a real writer or (`timed`) written
    with the builder's own clock, and the plan's fault keys in schedule.json."""
    run_dir = tmp_path / "honest"
    run_dir.mkdir()
    files = RunDir(run_dir)
    files.config.write_text(json.dumps({**CONFIG, **config}), encoding="utf-8")
    if planned is not None:
        plan = [{"key": key, "fault": key.split("#")[0], "at": 10.0, "duration": 15.0} for key in planned]
        files.schedule.write_text(json.dumps(plan), encoding="utf-8")
    if timed:
        write_timed(run_dir, h)
        return run_dir
    writer = HistoryWriter(files, "honest")
    h.replay(writer)
    writer.finish()
    return run_dir


def interrupted_during_a_kill() -> HistoryBuilder:
    """acks=all writes, a leader kill still active when SIGTERM arrived: no heal, no final read. Every
    acknowledged write is unread, which a complete run would call lost."""
    h = HistoryBuilder()
    h.phases(CLUSTER_UP)
    h.assign("consumer-0", [0])
    written = h.sends(30)
    for value, offset in written[:10]:
        h.read(value, offset)
    h.fault("kill", "kill#1", "start", kind="crash", nodes=[1])
    h.sends(5, first_offset=30)
    h.stopped("fault active")
    return h


def complete(h: HistoryBuilder) -> HistoryBuilder:
    h.phases(*RUN_PHASES)
    return h


# --- a partial run ----------------------------------------------------------------------------------------


def test_a_run_stopped_during_a_fault_is_not_judged_on_what_it_never_read(
    tmp_path: Path, spark: SparkSession
) -> None:
    results = check_run(make_run(tmp_path, interrupted_during_a_kill(), planned=["kill#1", "isolate#2"]))

    assert results["verdict"] == "unchecked"
    assert "partial run (stopped during: fault active" in results["verdict_reason"]
    assert results["phases"]["complete"] is False
    assert results["phases"]["completed"] == [CLUSTER_UP]
    assert results["phases"]["stopped_during"] == "fault active"
    assert results["phases"]["missing"] == [p for p in RUN_PHASES if p != CLUSTER_UP]
    for name in (LOST_WRITE, UNSEEN, TRUNCATED_READ, REPLICA_DIVERGENCE):
        judged = results["anomalies"][name]
        assert (judged["checked"], judged["count"], judged["verdict"]) == (False, None, "unchecked"), name
        assert "which this run did not complete" in judged["unchecked_reason"], name
        assert judged["examples"] == []
    assert "by_partition" not in results["anomalies"][LOST_WRITE]
    assert all(a["verdict"] != "violation" for a in results["anomalies"].values())
    assert results["fault_application"]["description"] == (
        "faults: 1 of 2 applied (isolate#2 not reached: the run stopped first)"
    )


def test_kchaos_check_of_a_partial_run_names_its_missing_phases_and_exits_2(
    tmp_path: Path, spark: SparkSession
) -> None:
    run_dir = make_run(tmp_path, interrupted_during_a_kill(), planned=["kill#1"])
    result = CliRunner().invoke(main, ["check", str(run_dir)])
    assert result.exit_code == 2, result.output
    assert "partial run (stopped during: fault active; missing: workload, heal, recovery" in result.output
    assert "lost: not known (lost-write, unseen" in result.output
    assert "lost-write: not checked (needs the read-to-end phase" in result.output
    assert "verdict: unchecked (partial run" in result.output.splitlines()[-1]
    assert "violation" not in result.output


def test_what_a_partial_run_saw_is_still_judged(tmp_path: Path, spark: SparkSession) -> None:
    """A value read at two offsets happened, final read or not: the partial run reports it."""
    h = interrupted_during_a_kill()
    h.read("v0-3", 31)  # v0-3 was acknowledged (and read) at offset 3
    results = check_run(make_run(tmp_path, h, planned=["kill#1"]))
    assert results["anomalies"][DUPLICATE]["count"] == 1
    assert results["anomalies"][DUPLICATE]["verdict"] == "violation"
    assert results["verdict"] == "violation"
    assert "verdict_reason" not in results


def test_a_final_read_that_did_not_finish_leaves_loss_unchecked(tmp_path: Path, spark: SparkSession) -> None:
    """Recovery done, the final read began (its invoke row covers the partition) but stopped half-way: a
    complete run would count every unread write as lost, and every polled one as truncated."""
    h = HistoryBuilder()
    h.phases(CLUSTER_UP, WORKLOAD, "heal", RECOVERY)
    h.assign("consumer-0", [0])
    written = h.sends(20)
    for value, offset in written:
        h.read(value, offset)
    h.final_read_start(low=0, high=20)
    h.final_reads(written[:5])
    h.stopped("final read", "FinalReadIncomplete: partition 0 read to 5 of 20")
    h.phases(REPLICA_DUMP)
    results = check_run(make_run(tmp_path, h, planned=[]))
    assert results["anomalies"][TRUNCATED_READ]["checked"] is False
    assert results["anomalies"][LOST_WRITE]["checked"] is False
    assert results["anomalies"][REPLICA_DIVERGENCE]["unchecked_reason"] == (
        "the run has no replica dumps (replicas/replicas.parquet)"
    )
    assert results["phases"]["stop_reason"] == "FinalReadIncomplete: partition 0 read to 5 of 20"
    assert results["verdict"] == "unchecked"


def test_a_complete_run_is_judged_as_before(tmp_path: Path, spark: SparkSession) -> None:
    h = HistoryBuilder()
    written = h.sends(10)
    h.fault("kill", "kill#1", "start", kind="crash", nodes=[1])
    h.fault("kill", "kill#1", "stop", kind="crash", nodes=[1])
    h.final_read_start(low=0, high=9)
    h.final_reads([pair for pair in written if pair[1] != 4])
    results = check_run(make_run(tmp_path, complete(h), planned=["kill#1"]))
    assert results["phases"]["complete"] is True
    assert results["anomalies"][LOST_WRITE]["count"] == 1
    assert results["verdict"] == "violation"


# --- faults asked for against faults applied --------------------------------------------------------------


def test_a_skipped_fault_shows_in_results_report_and_verdict_line(
    tmp_path: Path, spark: SparkSession
) -> None:
    h = HistoryBuilder()
    written = h.sends(10)
    h.fault("kill", "kill#1", "start", kind="crash", nodes=[1])
    h.fault("kill", "kill#1", "stop", kind="crash", nodes=[1])
    h.skipped("latency", "latency#2", NETEM_SKIP)
    h.final_read_start(low=0, high=10)
    h.final_reads(written)
    run_dir = make_run(tmp_path, complete(h), planned=["kill#1", "latency#2"])

    result = CliRunner().invoke(main, ["check", str(run_dir)])

    line = "faults: 1 of 2 applied (latency#2 skipped: no sch_netem (this kernel has no netem qdisc"
    results = json.loads((run_dir / "results.json").read_text(encoding="utf-8"))
    assert results["verdict"] == "ok"
    assert results["fault_application"]["description"].startswith(line)
    assert results["fault_application"]["skipped"][0]["key"] == "latency#2"
    assert result.exit_code == 0, result.output
    last = result.output.splitlines()[-1]
    assert last.startswith(f"verdict: ok ({line}"), last
    assert line in (run_dir / "report.html").read_text(encoding="utf-8")


def test_a_run_none_of_whose_faults_happened_is_never_ok(tmp_path: Path, spark: SparkSession) -> None:
    h = HistoryBuilder()
    written = h.sends(10)
    h.skipped("latency", "latency#1", NETEM_SKIP)
    h.final_read_start(low=0, high=10)
    h.final_reads(written)
    run_dir = make_run(tmp_path, complete(h), planned=["latency#1"])
    results = check_run(run_dir)
    assert all(a["verdict"] in ("ok", "unchecked") for a in results["anomalies"].values())
    assert results["verdict"] == "unchecked"
    assert results["verdict_reason"].startswith("no requested fault was applied (faults: 0 of 1 applied")
    result = CliRunner().invoke(main, ["check", str(run_dir)])
    assert result.exit_code == 2, result.output


def test_a_run_without_faults_asked_for_is_judged_normally(tmp_path: Path, spark: SparkSession) -> None:
    h = HistoryBuilder()
    written = h.sends(10)
    h.final_read_start(low=0, high=10)
    h.final_reads(written)
    results = check_run(make_run(tmp_path, complete(h), planned=[]))
    assert results["verdict"] == "ok"
    assert results["fault_application"]["description"] == "faults: none requested"


# --- power loss ---------------------------------------------------------------------------------------------


def power_loss_run(isrs: dict[int, list[int]], lost_in: int) -> HistoryBuilder:
    """Two partitions, their ISRs recorded by the leader watcher, the power cut on node 1, and one
    acknowledged write of partition `lost_in` missing from the final read."""
    h = HistoryBuilder()
    for partition, isr in isrs.items():
        h.leader(partition, isr[0], isr)
    written = {partition: h.sends(5, partition=partition) for partition in (0, 1)}
    h.fault("power-loss", "power-loss#1", "start", kind="power-loss", nodes=[1])
    h.fault("power-loss", "power-loss#1", "stop", kind="power-loss", nodes=[1])
    for partition, pairs in written.items():
        h.final_read_start(partition=partition, low=0, high=5)
        h.final_reads([pair for pair in pairs if (partition, pair[1]) != (lost_in, 2)], partition=partition)
    return complete(h)


def test_a_power_loss_is_judged_in_the_partition_the_write_was_lost_in(
    tmp_path: Path, spark: SparkSession
) -> None:
    isrs = {0: [1], 1: [1, 2, 3]}  # partition 0's ISR had shrunk to node 1 when its power went
    for name in ("wiped", "kept", "synced"):
        (tmp_path / name).mkdir()
    wiped = check_run(make_run(tmp_path / "wiped", power_loss_run(isrs, 0), ["power-loss#1"], partitions=2))
    lost = wiped["anomalies"][LOST_WRITE]
    assert (wiped["verdict"], lost["verdict"], lost["rule_id"]) == (
        "permitted",
        "permitted",
        "power-loss-took-isr",
    )
    assert lost["partitions"] == {"0": {"count": 1, "verdict": "permitted", "rule_id": "power-loss-took-isr"}}
    assert wiped["context"]["isr_at_power_loss"] == {"0": "lost-power", "1": "kept-power"}
    assert wiped["context"]["synced_every_append"] is False

    kept = check_run(make_run(tmp_path / "kept", power_loss_run(isrs, 1), ["power-loss#1"], partitions=2))
    assert (kept["verdict"], kept["anomalies"][LOST_WRITE]["rule_id"]) == ("violation", "committed-not-lost")

    synced = check_run(
        make_run(tmp_path / "synced", power_loss_run(isrs, 0), ["power-loss#1"], partitions=2,
                 topic_config={"flush.messages": "1"})
    )  # fmt: skip
    assert (synced["verdict"], synced["anomalies"][LOST_WRITE]["rule_id"]) == (
        "violation",
        "synced-appends-survive",
    )


def test_a_loss_where_the_isr_was_never_recorded_is_not_judged(tmp_path: Path, spark: SparkSession) -> None:
    run_dir = make_run(tmp_path, power_loss_run({0: [1]}, 1), ["power-loss#1"], partitions=2)
    results = check_run(run_dir)
    lost = results["anomalies"][LOST_WRITE]
    assert (lost["checked"], lost["count"], lost["verdict"]) == (True, 1, "unchecked")
    assert "in partition 1 the leader watcher recorded no in-sync replicas" in lost["unchecked_reason"]
    assert results["verdict"] == "unchecked"
    assert results["verdict_reason"].startswith("anomalies occurred that could not be judged (lost-write: ")
    result = CliRunner().invoke(main, ["check", str(run_dir)])
    assert result.exit_code == 2, result.output


# --- rates --------------------------------------------------------------------------------------------------


def test_the_rate_reached_is_set_against_the_rate_asked_for(tmp_path: Path, spark: SparkSession) -> None:
    h = HistoryBuilder(step=0.1)  # 10 events a second: 5 sends a second
    written = h.sends(100)
    h.final_read_start(low=0, high=100)
    h.final_reads(written)
    run_dir = make_run(tmp_path, complete(h), planned=[], timed=True, rate=20000.0)
    result = CliRunner().invoke(main, ["check", str(run_dir)])
    results = json.loads((run_dir / "results.json").read_text(encoding="utf-8"))
    achieved = results["rates"]
    assert achieved["sends_requested_per_s"] == 20000.0
    assert achieved["sends_acknowledged_per_s"] == pytest.approx(100 / 19.8, abs=0.1)
    assert achieved["shortfall"] is True
    assert achieved["line"] == "sends/s: 5 acknowledged of 20,000 requested (0%); reads/s: 0"
    lines = result.output.splitlines()
    assert achieved["line"] in lines[-3]
    assert lines[-2].startswith("the run acknowledged 5 sends/s of the 20,000 requested: it tested a lighter")
    html = write_report(run_dir, results, spark).read_text(encoding="utf-8")
    assert "below the requested rate" in html


def test_rates_of_a_run_that_kept_up_raise_no_warning() -> None:
    summary = {
        "writing_seconds": 10.0,
        "sends_invoked": 2000,
        "sends_acknowledged": 1990,
        "records_read_poll": 1900,
    }
    got = rates(summary, 200.0)
    assert got["shortfall"] is False
    assert got["line"] == "sends/s: 199 acknowledged of 200 requested (100%); reads/s: 190"
    assert rates(summary, None)["line"] == "sends/s: 199 acknowledged; reads/s: 190"
    unlimited = rates(summary, 0.0)  # --rate 0: nothing to fall short of
    assert unlimited["shortfall"] is False
    assert unlimited["line"] == "sends/s: 199 acknowledged (no rate limit); reads/s: 190"
    assert rates({"writing_seconds": 0.0}, 200.0)["sends_acknowledged_per_s"] is None
    # A transactional run writes its records inside transactions: they are what --rate paced.
    txn = {"writing_seconds": 10.0, "txn_records_invoked": 1200, "txn_records_acknowledged": 1100}
    assert rates(txn, 200.0)["line"] == "sends/s: 110 acknowledged of 200 requested (55%); reads/s: 0"
    assert rates(txn, 200.0)["shortfall"] is True
    # An eos run: the input producer's sends were paced, the processors' output in transactions was not.
    eos = {**summary, "txn_records_invoked": 2000, "txn_records_acknowledged": 1990}
    assert rates(eos, 200.0) == got
