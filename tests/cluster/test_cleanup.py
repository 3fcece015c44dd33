"""A crashed or interrupted harness leaves no containers or networks behind and loses no recorded history."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import docker
import pandas as pd
import pytest
from click.testing import CliRunner

from kchaos.harness.image import BASE_TAG
from kchaos.harness.labels import HOST_LABEL, PID_LABEL, RUN_LABEL, sweep
from kchaos.model.config import load_config
from kchaos.model.history_files import history_path
from kchaos.runner.cli import main
from kchaos.runner.pytest_plugin import SessionOptions
from kchaos.runner.run import execute
from tests.cluster.conftest import assert_no_leftovers
from tests.cluster.fault_steps import QUICK_TIMERS

pytestmark = pytest.mark.cluster


def dead_pid() -> int:
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


def test_sweep_removes_what_a_dead_harness_left_and_spares_a_live_one() -> None:
    client = docker.from_env()
    host = socket.gethostname()
    orphan_labels = {RUN_LABEL: "orphan", PID_LABEL: str(dead_pid()), HOST_LABEL: host}
    live_labels = {RUN_LABEL: "live", PID_LABEL: str(os.getpid()), HOST_LABEL: host}
    network = client.networks.create("kchaos-orphan-net", labels=orphan_labels)
    orphan = client.containers.run(BASE_TAG, "sleep infinity", detach=True, labels=orphan_labels,
                                   network=network.name)  # fmt: skip
    live = client.containers.run(BASE_TAG, "sleep infinity", detach=True, labels=live_labels)
    try:
        removed = sweep(client)
        names = {c.name for c in client.containers.list(all=True, filters={"label": RUN_LABEL})}
        assert orphan.name not in names
        assert live.name in names
        assert f"network {network.name}" in removed
    finally:
        sweep(client, run_id="live")
        sweep(client, run_id="orphan")


def test_a_broker_that_cannot_start_fails_the_run_at_once_with_its_own_words(tmp_path: Path) -> None:
    """A node whose broker exits while starting (here: a setting Kafka rejects) must not be waited for until
    the readiness deadline (180 s): `kchaos run` fails as the harness failing (exit 2), names the node and
    says what the broker said, keeps its log and leaves nothing behind."""
    started = time.monotonic()
    result = CliRunner().invoke(
        main, ["run", "--runs-dir", str(tmp_path), "--broker-config", "num.network.threads=two"]
    )
    elapsed = time.monotonic() - started

    assert result.exit_code == 2, result.output
    assert elapsed < 90, f"the start took {elapsed:.0f}s to give up"
    assert "kafka-1 exited with code 1 while starting" in result.output, result.output
    assert "Invalid value two for configuration num.network.threads" in result.output, result.output
    (run_dir,) = tmp_path.iterdir()
    assert "num.network.threads" in (run_dir / "logs" / "kafka-1.log").read_text(encoding="utf-8")
    assert_no_leftovers()


def test_interrupted_run_heals_removes_everything_and_keeps_its_history(tmp_path: Path) -> None:
    # The isolated leader fenced after 4 s without heartbeats (QUICK_TIMERS), so a 6 s fault has its effect:
    # 3 to 9 s, and the tail to 19.
    config = load_config(runs_dir=tmp_path, nemesis="isolate:target=leader", duration=19, fault_interval=3,
                         fault_duration=6, broker_config=QUICK_TIMERS)  # fmt: skip

    def interrupt_after_faults(message: str) -> None:
        print(f"* {message}")
        if message.startswith("healed"):
            raise KeyboardInterrupt("simulated Ctrl-C")

    with pytest.raises(KeyboardInterrupt):
        execute(config, progress=interrupt_after_faults)

    history = pd.read_parquet(history_path(config.run_dir))
    acknowledged = history[(history["f"] == "send") & (history["type"] == "ok")]
    assert len(acknowledged) > 100
    phases = history[history["process"] == "nemesis"]["value"].tolist()
    assert phases == ["start", "stop"]
    assert (config.run_dir / "logs" / "kafka-1.log").stat().st_size > 0
    assert_no_leftovers()


HOLDING_TEST = """
import time


def test_hold(kafka_cluster):
    print("cluster up:", kafka_cluster.run_id, flush=True)
    time.sleep(600)
"""


def test_a_test_session_stopped_with_sigterm_removes_its_cluster(
    tmp_path: Path, kchaos_options: SessionOptions
) -> None:
    """CI cancelling a suite sends pytest SIGTERM while a `kafka_cluster` test runs: the session ends as
    interrupted (exit 2) with its fixtures torn down, so the cluster's containers and network are gone
    when it exits, not left for the next run's sweep."""
    (tmp_path / "test_hold.py").write_text(HOLDING_TEST, encoding="utf-8")
    session = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-s", "-q", "-p", "no:cacheprovider", "test_hold.py",
         "--kchaos-kafka-version", kchaos_options.kafka_version],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        assert session.stdout is not None
        seen: list[str] = []
        for line in session.stdout:  # ends when the session does, if it never gets a cluster up
            seen.append(line)
            if "cluster up:" in line:
                break
        assert seen and "cluster up:" in seen[-1], "".join(seen)
        session.send_signal(signal.SIGTERM)
        rest, _ = session.communicate(timeout=180)
        assert session.returncode == pytest.ExitCode.INTERRUPTED, "".join(seen) + rest
        assert_no_leftovers()
    finally:
        if session.poll() is None:
            session.kill()
            session.wait()
        sweep(docker.from_env())  # what the session left, if the assertions above failed


def staged_rows(run_dir: Path) -> list[dict[str, object]]:
    """The rows a run has handed to the OS so far, read as a crashed run's staging file is."""
    staging = run_dir / "history" / "history.ndjson"
    if not staging.is_file():
        return []
    lines = staging.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines[:-1]]  # the last line may be half written


def test_a_harness_killed_with_sigkill_leaves_nothing_within_30s_and_spares_another_session(
    tmp_path: Path,
) -> None:
    """SIGKILL runs no cleanup in the harness, yet its watchdog removes the run's containers and network
    within 30 s, with nobody running `kchaos clean`; another live session's container stays, and what the
    harness had recorded before it died is on disk."""
    client = docker.from_env()
    other = client.containers.run(BASE_TAG, "sleep infinity", detach=True,
                                  labels={RUN_LABEL: "other-session", PID_LABEL: str(os.getpid()),
                                          HOST_LABEL: socket.gethostname()})  # fmt: skip
    run_dir = tmp_path / "killed"
    harness = subprocess.Popen(
        [sys.executable, "-m", "kchaos.runner.cli", "run", "--runs-dir", str(tmp_path), "--run-id", "killed",
         "--nemesis", "kill:target=leader", "--duration", "90", "--fault-duration", "30"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 240
        while not any(row.get("process") == "nemesis" and row.get("value") == "start"
                      for row in staged_rows(run_dir)):  # fmt: skip
            assert harness.poll() is None, f"the run ended before its fault began (exit {harness.returncode})"
            assert time.monotonic() < deadline, "no fault began within 240 s"
            time.sleep(0.5)
        own = {"label": f"{PID_LABEL}={harness.pid}"}
        assert client.containers.list(filters=own), "the run's containers carry its pid"

        harness.send_signal(signal.SIGKILL)  # mid-fault: a killed leader, writes going on
        harness.wait()
        killed_at = time.monotonic()
        while client.containers.list(all=True, filters=own, ignore_removed=True) or client.networks.list(
            filters=own
        ):
            assert time.monotonic() - killed_at < 30, "the killed harness's containers outlived it by 30 s"
            time.sleep(0.5)

        assert other.name in {c.name for c in client.containers.list(filters={"label": RUN_LABEL})}
        rows = staged_rows(run_dir)
        assert any(row.get("f") == "send" and row.get("type") == "ok" for row in rows)
        assert any(row.get("process") == "nemesis" and row.get("value") == "start" for row in rows)
    finally:
        if harness.poll() is None:
            harness.kill()
            harness.wait()
        other.remove(force=True)
        sweep(client, run_id="killed")
