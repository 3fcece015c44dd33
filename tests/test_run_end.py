"""How a run ends, without a cluster: the writing lasts `--duration` unless the last fault ended late, the
verdict
is told before the report is written, and the warm-up's copy of the history holds whole lines only and
goes when the warm-up does.

The real runs that rely on these are the cluster tests' `kchaos run` processes (each warms its own
session); the benchmark measures a default run's end (`bench/run_end.py`).
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyspark import SparkContext

import kchaos.runner.outcome
import kchaos.runner.run_steps
from kchaos.model.config import load_config
from kchaos.model.events import FAIL, INVOKE, OK, POLL, SEND
from kchaos.model.fault_plan import post_fault_tail
from kchaos.model.history_schema import SCHEMA
from kchaos.model.replica_records import REPLICA_SCHEMA
from kchaos.model.run_files import RunDir
from kchaos.runner.outcome import RunOutcome, check_and_report
from kchaos.runner.warm_check import WarmCheck, copy_so_far, needs_warming, stand_in_replicas


class FinishedNemesis:
    """A nemesis whose plan is done when the wait asks: its last fault ended `ended_ago` seconds before."""

    def __init__(self, ended_ago: float | None = 30.0, planned: bool = True) -> None:
        self.faults_ended = threading.Event()
        self.faults_ended.set()
        self.planned = ["kill#1"] if planned else []
        self.last_end = None if ended_ago is None else time.monotonic() - ended_ago


class LateNemesis(FinishedNemesis):
    """A nemesis whose last fault held past its plan: it ends `late` seconds into the wait."""

    def __init__(self, late: float) -> None:
        super().__init__(ended_ago=None)
        self.faults_ended.clear()

        def end() -> None:
            self.last_end = time.monotonic()
            self.faults_ended.set()

        threading.Timer(late, end).start()


def slept(monkeypatch: pytest.MonkeyPatch, nemesis: FinishedNemesis, duration: float) -> float:
    """How long `wait_for_workload` kept the producers writing, from its start, and checks it said so."""
    naps: list[float] = []
    waiting, sleep = threading.get_ident(), time.sleep

    def nap(seconds: float) -> None:  # other threads of the process sleep as they always do
        if threading.get_ident() == waiting:
            naps.append(seconds)
        else:
            sleep(seconds)

    monkeypatch.setattr(time, "sleep", nap)
    config = load_config(duration=duration, nemesis="none")
    started = time.monotonic()
    wrote = kchaos.runner.run_steps.wait_for_workload(config, nemesis)  # type: ignore[arg-type]
    assert len(naps) == 1
    total = time.monotonic() - started + naps[0]
    assert wrote == pytest.approx(total - naps[0], abs=0.05), "it returns the seconds it waited"
    return total


def test_faults_that_keep_to_the_plan_write_for_the_duration_and_no_longer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The plan left its tail inside the duration: the run writes for exactly `--duration`."""
    assert slept(monkeypatch, FinishedNemesis(), duration=30.0) == pytest.approx(30.0, abs=0.2)


def test_a_fault_that_ends_late_is_followed_by_a_short_while_of_writes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The last fault ended 1 s into the wait, past the duration: the producers write `AFTER_END_S` more,
    not a whole tail of `post_fault_tail`, and not through the heal, which the recovery step waits for."""
    after = kchaos.runner.run_steps.AFTER_END_S
    assert after < post_fault_tail(load_config(nemesis="none"))
    assert slept(monkeypatch, LateNemesis(late=1.0), duration=0.5) == pytest.approx(1.0 + after, abs=0.3)


def test_a_fault_that_ends_late_inside_the_tail_ends_the_writing_at_the_duration(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert slept(monkeypatch, LateNemesis(late=0.5), duration=8.0) == pytest.approx(8.0, abs=0.2)


def test_a_plan_whose_faults_all_were_skipped_still_writes_a_while(monkeypatch: pytest.MonkeyPatch) -> None:
    after = kchaos.runner.run_steps.AFTER_END_S
    assert slept(monkeypatch, FinishedNemesis(ended_ago=None), duration=0.1) == pytest.approx(after, abs=0.2)


def test_without_a_plan_there_is_no_tail(monkeypatch: pytest.MonkeyPatch) -> None:
    assert slept(monkeypatch, FinishedNemesis(None, planned=False), duration=0.1) == pytest.approx(
        0.1, abs=0.1
    )


def test_the_verdict_is_told_before_the_report_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    steps: list[str] = []
    results = {"verdict": "ok"}

    def check_run(run_dir: Path, **kwargs: Any) -> dict[str, Any]:
        steps.append("checked")
        return results

    def write_report(run_dir: Path, results: dict[str, Any], spark: Any) -> Path:
        steps.append("report written")
        return RunDir(run_dir).report

    monkeypatch.setattr(kchaos.runner.outcome, "check_run", check_run)
    monkeypatch.setattr(kchaos.runner.outcome, "write_report", write_report)
    monkeypatch.setattr(kchaos.runner.outcome, "spark_session", lambda master, driver_memory: None)
    told: list[RunOutcome] = []

    def judged(outcome: RunOutcome) -> None:
        steps.append("told")
        told.append(outcome)

    outcome = check_and_report(tmp_path, "local[1]", judged=judged)
    assert steps == ["checked", "told", "report written"]
    assert told == [outcome] and outcome.report == RunDir(tmp_path).report


def staged_run(tmp_path: Path, staged: bytes) -> RunDir:
    run = RunDir(tmp_path / "run")
    run.history.mkdir(parents=True)
    run.history_staging.write_bytes(staged)
    run.config.write_text(json.dumps({"run_id": "run"}), encoding="utf-8")
    run.schedule.write_text("[]\n", encoding="utf-8")
    return run


def test_the_warm_up_copies_only_the_whole_lines_recorded_so_far(tmp_path: Path) -> None:
    """A line being written as the copy is taken is left out: a check would refuse it as damaged."""
    run = staged_run(tmp_path, b'{"index": 0}\n{"index": 1}\n{"ind')
    scratch = RunDir(tmp_path / "scratch")
    assert copy_so_far(run, scratch)
    assert scratch.history_staging.read_bytes() == b'{"index": 0}\n{"index": 1}\n'
    assert scratch.config.read_bytes() == run.config.read_bytes()
    assert scratch.schedule.read_bytes() == run.schedule.read_bytes()


def test_nothing_is_copied_before_a_whole_line_is_recorded(tmp_path: Path) -> None:
    assert not copy_so_far(staged_run(tmp_path, b'{"ind'), RunDir(tmp_path / "scratch"))
    assert not copy_so_far(RunDir(tmp_path / "none"), RunDir(tmp_path / "scratch2"))


def test_a_closed_warm_up_leaves_nothing_in_the_run_directory(tmp_path: Path) -> None:
    """Closed before it started (the run failed while its cluster started) or after: its copy is gone."""
    run = staged_run(tmp_path, b'{"index": 0}\n')
    warm = WarmCheck(run.path, "local[1]", None)
    warm.scratch.path.mkdir()
    warm.close()
    assert not warm.scratch.path.exists()
    assert warm.scratch.path.parent == run.path, "the copy lives inside the run directory"


def test_only_a_local_master_in_a_process_without_a_session_is_warmed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(SparkContext, "_active_spark_context", None)
    assert needs_warming("local[2]")
    assert not needs_warming("sc://127.0.0.1:15002")
    assert not needs_warming("spark://somewhere:7077")
    monkeypatch.setattr(SparkContext, "_active_spark_context", object())
    assert not needs_warming("local[2]")


def test_the_warm_up_s_stand_in_replicas_hold_each_acknowledged_send_once_on_every_broker() -> None:
    """The stand-ins are only there to make the warm-up take the replica passes, and must agree: three
    brokers each holding every acknowledged send at its offset, and nothing else of the history."""
    rows = [
        {"index": 0, "process": "producer-0", "f": SEND, "type": INVOKE, "topic": "t", "value": "a"},
        {"index": 1, "process": "producer-0", "f": SEND, "type": OK, "topic": "t", "partition": 1,
         "offset": 7, "key": "k", "value": "a"},
        {"index": 2, "process": "producer-0", "f": SEND, "type": FAIL, "topic": "t", "value": "b"},
        {"index": 3, "process": "consumer-0", "f": POLL, "type": OK, "topic": "t", "partition": 1,
         "offset": 7, "key": "k", "value": "a"},
    ]  # fmt: skip
    replicas = stand_in_replicas(pa.Table.from_pylist(rows, schema=SCHEMA))
    assert replicas.schema == REPLICA_SCHEMA
    assert sorted(replicas.to_pylist(), key=lambda row: row["broker"]) == [
        {"broker": broker, "topic": "t", "partition": 1, "offset": 7, "leader_epoch": 0, "key": "k",
         "value": "a"}
        for broker in (1, 2, 3)
    ]  # fmt: skip
