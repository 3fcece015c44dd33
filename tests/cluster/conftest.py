"""Fixtures for tests that run real Kafka clusters in Docker: one cluster at a time, always torn down."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import docker
import pandas as pd
import pytest

from harness.config import load_config
from harness.history import history_path
from harness.labels import RUN_LABEL
from harness.run import RunOutcome, execute
from nemesis.schedule import Scenario

ChaosRun = Callable[..., RunOutcome]


def assert_no_leftovers() -> None:
    """Every run must remove its containers and networks, whatever happened."""
    client = docker.from_env()
    left = client.containers.list(all=True, filters={"label": RUN_LABEL})
    networks = client.networks.list(filters={"label": RUN_LABEL})
    assert not left and not networks, f"left behind: {[c.name for c in left]} {[n.name for n in networks]}"


@pytest.fixture
def chaos_run(tmp_path: Path) -> Iterator[ChaosRun]:
    """One whole chaos run (cluster, workload, faults, final read, Spark check); returns its outcome."""

    def run(scenario: Scenario | None = None, **overrides: Any) -> RunOutcome:
        config = load_config(runs_dir=tmp_path / "runs", **overrides)
        return execute(config, progress=lambda message: print(f"* {message}"), scenario=scenario)

    yield run
    assert_no_leftovers()


def nemesis_events(outcome: RunOutcome) -> pd.DataFrame:
    """The fault events of a run, with their JSON detail parsed."""
    history = pd.read_parquet(history_path(outcome.run_dir))
    events = history[history["process"] == "nemesis"].copy()
    events["detail"] = events["detail"].map(lambda text: json.loads(text) if text else {})
    return events
