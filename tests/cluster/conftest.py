"""Helpers for tests that run real Kafka clusters in Docker: what a run left behind, what its faults did.

Clusters, nemeses and whole chaos runs come from the kchaos pytest plugin (`kchaos/runner/pytest_plugin.py`).
"""

from __future__ import annotations

import gzip
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import docker
import pandas as pd

from kchaos.harness.labels import RUN_LABEL, STDOUT_DIR_PREFIX
from kchaos.model.events import SCENARIO
from kchaos.model.history_files import history_path
from kchaos.model.run_files import RunDir
from kchaos.runner.outcome import RunOutcome

#: The `kchaos` command this interpreter installed, as a user runs it.
KCHAOS = str(Path(sys.executable).parent / "kchaos")


def assert_no_leftovers() -> None:
    """Every run must remove its containers and networks, and its clients' stdout files, whatever
    happened."""
    client = docker.from_env()
    left = client.containers.list(all=True, filters={"label": RUN_LABEL})
    networks = client.networks.list(filters={"label": RUN_LABEL})
    assert not left and not networks, f"left behind: {[c.name for c in left]} {[n.name for n in networks]}"
    stdouts = sorted(Path(tempfile.gettempdir()).glob(f"{STDOUT_DIR_PREFIX}*"))
    assert not stdouts, f"client stdout directories left behind: {stdouts}"


def nemesis_events(outcome: RunOutcome) -> pd.DataFrame:
    """The fault events of a run, with their JSON detail parsed."""
    history = pd.read_parquet(history_path(outcome.run_dir))
    events = history[history["process"] == "nemesis"].copy()
    events["detail"] = events["detail"].map(lambda text: json.loads(text) if text else {})
    return events


def scenario_observed(outcome: RunOutcome) -> dict[str, Any]:
    """What the run's named scenario observed while it drove its faults, as its history recorded it."""
    events = nemesis_events(outcome)
    rows = events[events["f"] == SCENARIO]
    assert len(rows) == 1, f"expected one scenario row, the history has {len(rows)}"
    return dict(rows["detail"].iloc[0])


_DUMPED_SEGMENT = re.compile(r"^Dumping \S*/([^/\s]+)-\d+/\S+\.log$")
_BATCH_CODEC = re.compile(r"\bcompresscodec: (\w+)")


def dumped_codecs(run_dir: Path) -> dict[str, set[str]]:
    """Per topic, the compression codecs of the record batches every broker's dump of the run shows
    (`replicas/broker-N.txt.gz`, Kafka's `DumpLogSegments`): how the clients' batches reached the log."""
    codecs: dict[str, set[str]] = {}
    for dump in sorted(RunDir(run_dir).replicas.glob("broker-*.txt.gz")):
        topic: str | None = None
        with gzip.open(dump, "rt", encoding="utf-8") as text:
            for line in text:
                segment = _DUMPED_SEGMENT.match(line)
                if segment is not None:
                    topic = segment.group(1)
                    continue
                codec = _BATCH_CODEC.search(line)
                if codec is not None and topic is not None:
                    codecs.setdefault(topic, set()).add(codec.group(1))
    return codecs


def kchaos_run(runs_dir: Path, run_id: str, *options: str) -> RunDir:
    """`kchaos run --runs-dir runs_dir --run-id run_id options...` as a user runs it: its output printed
    with how long it took; it must end with status 0 and leave nothing behind. Returns its run directory."""
    command = [KCHAOS, "run", "--runs-dir", str(runs_dir), "--run-id", run_id, *options]
    started = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True, timeout=900)
    print(done.stdout, done.stderr, f"(run took {time.monotonic() - started:.0f}s)")
    assert done.returncode == 0, done.stdout + done.stderr
    assert_no_leftovers()
    return RunDir(runs_dir / run_id)
