"""`kchaos run --client java` as a user runs it, on a real cluster: the producers are the release's own Java
client, each a process in a container of its own on the run's network, recorded from what it prints; a
leader killed under them, the run is checked like any other and removes their containers too."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from kchaos.harness.client_image import client_tag
from kchaos.model.events import INVOKE, OK, SEND, producer_process
from kchaos.model.history import history_path
from kchaos.model.run_files import RunDir
from tests.cluster.conftest import assert_no_leftovers

pytestmark = pytest.mark.cluster

#: The installed command, as a user runs it (beside the interpreter of the virtualenv).
KCHAOS = str(Path(sys.executable).parent / "kchaos")


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
    config = json.loads(files.config.read_text(encoding="utf-8"))
    assert config["client"] == "java"
    assert config["client_image"] == client_tag(config["kafka_version"])
    results = json.loads(files.results.read_text(encoding="utf-8"))
    assert results["verdict"] == "ok", results
    assert results["summary"]["sends_acknowledged"] > 0

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
        assert f"{process}: Java client {config['kafka_version']} started" in harness_log
