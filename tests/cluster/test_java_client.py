"""The Java client's producers on a real cluster: `kchaos run --client java` as a user runs it (each
producer the release's own Java client in a container of its own, recorded from what it prints; a leader
killed under them, the run is checked like any other and removes their containers too), and a Java client
process killed mid-run, whose acknowledged sends must all be in the log and whose sends in flight are
indeterminate."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from kchaos.harness.client_image import client_tag, ensure_client_image
from kchaos.model.config import load_config
from kchaos.model.events import FINAL_READ, INFO, INVOKE, OK, SEND, producer_process
from kchaos.model.history import HistoryWriter
from kchaos.model.history_files import history_path
from kchaos.model.run_files import RunDir
from kchaos.model.waiting import wait_until
from kchaos.runner.pytest_plugin import ClusterFactory, SessionOptions
from kchaos.workloads.final_read import final_read
from kchaos.workloads.processes.java.producer import JavaProducerWorkload
from tests.cluster.conftest import assert_no_leftovers

pytestmark = pytest.mark.cluster

#: The installed command, as a user runs it (beside the interpreter of the virtualenv).
KCHAOS = str(Path(sys.executable).parent / "kchaos")


# Nightly: CI makes the same `kchaos run --client java` and asserts the same of its producers in
# tests/cluster/test_client_faults.py::test_a_java_client_killed_by_the_nemesis_is_restarted_and_loses_nothing
# _it_acknowledged, and runs Java producers under a broker fault in tests/cluster/test_java_transactions.py.
@pytest.mark.nightly
def test_a_run_with_the_java_client_passes_and_its_sends_are_the_java_workers(tmp_path: Path) -> None:
    command = [
        KCHAOS, "run", "--client", "java", "--runs-dir", str(tmp_path), "--run-id", "java",
        "--duration", "20", "--nemesis", "kill:target=leader", "--fault-interval", "3",
        "--fault-duration", "5",
    ]  # fmt: skip
    started = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True, timeout=900)
    print(done.stdout, done.stderr, f"(run took {time.monotonic() - started:.0f}s)")
    assert done.returncode == 0, done.stdout + done.stderr
    assert_no_leftovers()  # the producers' containers went with the cluster's

    files = RunDir(tmp_path / "java")
    results = json.loads(files.results.read_text(encoding="utf-8"))
    assert results["verdict"] == "ok", results
    assert results["summary"]["sends_acknowledged"] > 0

    assert_sends_are_the_java_workers(files)


def assert_sends_are_the_java_workers(files: RunDir) -> None:
    """A `--client java` run's sends were made by the Java client of the release it names
    (`java_client_version`: `--java-client-version`, else the cluster's own) in its own processes: each
    producer invoked and acknowledged sends, said which client it started as, and left its own log."""
    config = json.loads(files.config.read_text(encoding="utf-8"))
    assert config["client"] == "java"
    assert config["client_image"] == client_tag(config["java_client_version"])
    history = pd.read_parquet(history_path(files.path))
    sends = history[history["f"] == SEND]
    producers = [producer_process(n) for n in range(config["producers"])]
    for process in producers:
        own = sends[sends["process"] == process]
        assert (own["type"] == INVOKE).sum() > 0 and (own["type"] == OK).sum() > 0, process
        # Recorded from the worker: its client said so when it started, and its own log is kept.
        assert (files.logs / f"{process}.log").exists()
    harness_log = files.harness_log.read_text(encoding="utf-8")
    for process in producers:
        assert f"{process}: client {config['java_client_version']} started" in harness_log


@pytest.mark.nightly  # CI: the same promise through the nemesis, tests/cluster/test_client_faults.py
def test_a_killed_java_client_loses_nothing_it_acknowledged_and_its_sends_in_flight_are_indeterminate(
    kafka_cluster_factory: ClusterFactory, kchaos_options: SessionOptions, tmp_path: Path
) -> None:
    """SIGKILL, as a crashed application: no drain, no last callbacks. The history keeps every `ok` the
    process printed before it died; each send it had invoked and not answered is `info` with the reason,
    and the other producer writes on. Every send acknowledged is in the final read of the log."""
    version = kchaos_options.kafka_version
    config = load_config(client="java", producers=2, rate=2000, message_timeout_ms=10000)
    history = HistoryWriter(RunDir(tmp_path), "java-kill")
    with kafka_cluster_factory.started("javakill") as cluster:
        workload = JavaProducerWorkload(config, cluster, history, ensure_client_image(version), version)
        try:
            workload.start()
            victim, survivor = workload.producers
            wait_until(lambda: history.count(SEND, OK) > 2000, 60, "2000 sends acknowledged")
            killed_at = time.time()
            victim.client.kill()
            victim.thread.join(30)
            assert not victim.thread.is_alive(), "the killed client's stdout never ended"
            acked_at_kill = history.count(SEND, OK)
            wait_until(lambda: history.count(SEND, OK) > acked_at_kill + 500, 60, "the survivor writing on")
        finally:
            workload.stop()
        final_read(cluster.bootstrap, {config.topic: config.partitions}, history, 60)
    rows = pd.read_parquet(history.finish())
    assert_no_leftovers()

    sends = rows[rows["f"] == SEND]
    read = set(rows.loc[rows["f"] == FINAL_READ, "value"])
    # The killed process's own sends: the workload restarts it, and its next process writes values of its own.
    dead = sends[
        (sends["process"] == victim.recorder.process)
        & sends["value"].str.startswith(f"{victim.recorder.process}-")
    ]
    outcomes = dead[dead["type"] != INVOKE]
    # Each invoke answered exactly once: by the process, or as indeterminate once it was dead.
    assert sorted(outcomes["value"]) == sorted(dead.loc[dead["type"] == INVOKE, "value"])
    in_flight = outcomes[outcomes["type"] == INFO]
    assert len(in_flight) > 0, "nothing was in flight at the kill: the test did not test it"
    assert set(in_flight["error"]) == {"the client process ended (exit 137) without reporting the send"}
    acknowledged = set(outcomes.loc[outcomes["type"] == OK, "value"])
    print(f"killed client: {len(acknowledged)} acknowledged, {len(in_flight)} in flight at the kill")
    assert len(acknowledged) > 500
    assert acknowledged <= read, f"acknowledged by the killed client, not in the log: {acknowledged - read}"
    alive = sends[(sends["process"] == survivor.recorder.process) & (sends["type"] == OK)]
    assert set(alive["value"]) <= read, (
        f"acknowledged by the survivor, not in the log: {set(alive['value']) - read}"
    )
    # The other producer wrote on after the kill: the workload is not the killed process's. (How many each
    # had acknowledged before is a race of JVM starts, not a promise.)
    assert (alive["wall_time"] > killed_at).sum() > 0, (
        "the surviving producer acknowledged nothing after the kill"
    )
