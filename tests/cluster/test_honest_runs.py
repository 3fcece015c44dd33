"""On real clusters, as a user runs kchaos: a fault that could never be applied is refused before anything
starts, and a run stopped with SIGTERM while a fault is active is checked as the partial run it is."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from kchaos.model.run_files import RunDir
from kchaos.model.waiting import wait_until
from kchaos.runner.cli import main
from tests.cluster.conftest import assert_no_leftovers

pytestmark = pytest.mark.cluster

#: The installed command, as a user runs it (beside the interpreter of the virtualenv).
KCHAOS = str(Path(sys.executable).parent / "kchaos")


def test_a_fault_whose_target_can_name_no_node_is_refused_before_any_container_starts(tmp_path: Path) -> None:
    """One broker has no followers: `kill:target=followers` could never hit anything. It used to be started,
    skipped at run time and named in the verdict line; now the configuration is refused before anything
    starts (exit 2, no run directory, nothing left behind), since config.json must never record a fault
    that cannot run. How a fault skipped at run time shows in the verdict line, results.json and the
    report is checked on synthetic histories (`tests/test_honest_verdicts.py`); no target of a run that
    passes these checks can name no node on a healthy cluster, so there is no real run left to skip one."""
    result = CliRunner().invoke(
        main,
        [
            "run", "--runs-dir", str(tmp_path), "--run-id", "skipped-fault", "--brokers", "1",
            "--partitions", "1", "--replication-factor", "1", "--min-insync-replicas", "1",
            "--nemesis", "pause:target=leader,kill:target=followers", "--duration", "30",
            "--fault-interval", "3", "--fault-duration", "5", "--rate", "200",
        ],
    )  # fmt: skip
    assert result.exit_code == 2, result.output
    assert "kill:target=followers: target=followers are the partition's other replicas" in result.output
    assert not (tmp_path / "skipped-fault").exists()
    assert_no_leftovers()


def test_a_run_stopped_with_sigterm_during_a_fault_is_checked_as_partial_never_as_a_violation(
    tmp_path: Path,
) -> None:
    """The run is stopped as CI cancelling a job would stop it, once its history shows the leader kill in
    force; then `kchaos check` must not call the writes it never got to read back lost."""
    run_dir = tmp_path / "interrupted"
    command = [
        KCHAOS, "run", "--runs-dir", str(tmp_path), "--run-id", "interrupted", "--nemesis",
        "kill:target=leader", "--duration", "60", "--fault-interval", "5", "--fault-duration", "30",
    ]  # fmt: skip
    log = tmp_path / "kchaos-run.out"
    with log.open("w", encoding="utf-8") as out:
        harness = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=os.environ)
    staging = RunDir(run_dir).history_staging

    def kill_in_force() -> bool:
        if harness.poll() is not None:
            raise AssertionError(f"the run ended before its fault began:\n{log.read_text(encoding='utf-8')}")
        if not staging.exists():
            return False
        # Whole lines only: the writer may be half-way through handing a batch to the OS.
        lines = staging.read_text(encoding="utf-8").split("\n")[:-1]
        rows = [json.loads(line) for line in lines if line]
        started = [r for r in rows if r["process"] == "nemesis" and r["value"] == "start"]
        acknowledged = sum(1 for r in rows if r["f"] == "send" and r["type"] == "ok")
        return bool(started) and acknowledged > 100

    try:
        wait_until(kill_in_force, 240, "the leader kill to be in force with writes acknowledged")
        harness.send_signal(signal.SIGTERM)
        harness.wait(timeout=300)
    finally:
        if harness.poll() is None:
            harness.kill()
    output = log.read_text(encoding="utf-8")
    print(output)
    assert harness.returncode == 2, output
    assert f"interrupted; cleaned up. What was recorded is in {run_dir}; `kchaos check {run_dir}`" in output
    assert_no_leftovers()

    started = time.monotonic()
    checked = CliRunner().invoke(main, ["check", str(run_dir)])
    print(checked.output, f"(checked in {time.monotonic() - started:.0f}s)")
    results = json.loads((run_dir / "results.json").read_text(encoding="utf-8"))
    assert results["phases"]["stopped_during"] == "fault active"
    assert "read-to-end" in results["phases"]["missing"]
    assert results["summary"]["sends_acknowledged"] > 100
    assert all(a["verdict"] != "violation" for a in results["anomalies"].values()), results["anomalies"]
    assert results["anomalies"]["lost-write"]["checked"] is False
    assert results["anomalies"]["unseen"]["checked"] is False
    assert results["verdict"] == "unchecked"
    assert checked.exit_code == 2, checked.output
    assert "partial run (stopped during: fault active; missing: workload, heal, recovery, read-to-end" in (
        checked.output
    )
    assert "violation" not in checked.output
