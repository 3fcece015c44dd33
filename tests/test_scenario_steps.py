"""A crafted scenario's first step, the leader it aims at, waits until the nodes agree on one.

A CI run once read the leader of a fresh cluster while one node had not yet answered: `leader_of` said -1,
the scenario cut "the leader's" replication, waited 90 s for an ISR of [-1], and failed on
`power-loss:target=-1`. The metadata here is written by hand, with no broker behind it. And a scenario's
steps end when the run is asked to stop.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pandas as pd
import pytest

import kchaos.nemesis.scenario_steps
from kchaos.model.events import SCENARIO
from kchaos.model.history import HistoryWriter
from kchaos.model.run_files import RunDir
from kchaos.nemesis.scenario_ends import StepFailed
from kchaos.nemesis.scenario_steps import agreed_leader
from kchaos.nemesis.schedule import Nemesis


class Answers:
    """`leader_of` answering `leaders` in turn, then the last one for ever; records what it was asked."""

    def __init__(self, *leaders: int) -> None:
        self.leaders = list(leaders)
        self.asked: list[tuple[str, int]] = []

    def leader_of(self, topic: str, partition: int) -> int:
        self.asked.append((topic, partition))
        return self.leaders.pop(0) if len(self.leaders) > 1 else self.leaders[0]


def nemesis_over(metadata: Answers) -> Nemesis:
    cluster = SimpleNamespace(metadata=metadata, nodes={1: None, 2: None, 3: None})
    return Nemesis(cast(Any, cluster), cast(Any, None), "kchaos", 0, [])


def test_the_leader_is_the_one_the_nodes_agree_on_once_they_do() -> None:
    metadata = Answers(-1, -1, 2)
    assert agreed_leader(nemesis_over(metadata)) == 2
    assert metadata.asked == [("kchaos", 0)] * 3


def test_nodes_that_never_agree_end_the_scenario_naming_the_step(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kchaos.nemesis.scenario_steps, "AGREEMENT_TIMEOUT_S", 0.3)
    with pytest.raises(
        StepFailed, match=r"cannot go on: timed out after 0s waiting for a leader of partition 0"
    ):
        agreed_leader(nemesis_over(Answers(-1)))


def test_a_step_that_waited_in_vain_raises_where_an_observation_only_logs() -> None:
    nemesis = nemesis_over(Answers(-1))
    assert nemesis.await_condition(lambda: False, 0.1, "nothing", interval=0.02) is None
    with pytest.raises(StepFailed, match="waiting for the ISR to shrink"):
        nemesis.require(lambda: False, 0.1, "the ISR to shrink", interval=0.02)
    assert nemesis.require(lambda: True, 1, "anything") < 1


def test_a_stopped_run_ends_its_scenario_at_the_step_it_waits_on_and_records_what_it_saw(
    tmp_path: Path,
) -> None:
    """A request attack waits up to minutes per step; a run asked to stop (Ctrl-C, SIGTERM) must not wait
    them out, nor begin another fault: the scenario ends at its wait, its observed row is still written,
    and the run has no error to report."""
    steps: list[str] = []

    def scenario(nemesis: Nemesis) -> None:
        nemesis.observed["reached"] = "the long wait"
        steps.append("waiting")
        nemesis.await_condition(lambda: False, 60, "a state that never comes", interval=0.02)
        steps.append("went on")  # never: the stop ends it at the wait
        nemesis.begin("pause:target=1")

    history = HistoryWriter(RunDir(tmp_path), "stopped")
    cluster = SimpleNamespace(metadata=Answers(1), nodes={1: None, 2: None, 3: None})
    nemesis = Nemesis(cast(Any, cluster), history, "kchaos", 0, [])
    nemesis.start(scenario, "a-long-one")
    while not steps:
        time.sleep(0.01)
    since = time.monotonic()
    nemesis.stop()
    assert time.monotonic() - since < 2 and nemesis.finished.is_set()
    assert steps == ["waiting"] and nemesis.error is None and nemesis.done == []
    rows = pd.read_parquet(history.finish())
    observed = rows[rows["f"] == SCENARIO]
    assert json.loads(observed["detail"].iloc[0]) == {"reached": "the long wait"}
