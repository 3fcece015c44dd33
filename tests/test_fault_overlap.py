"""Overlapping faults (`--fault-overlap`): planned from the seed, only between faults that may meet, never
in the first round; carried out beside each other, the second keeping off what the first holds.

The plan is pure arithmetic; the runner is driven here by stand-in faults that record when they start,
stop and are asked whether the cluster healed, on a stand-in cluster of three node ids: what it tests is
the order the nemesis keeps, not what Kafka does (the real-cluster test is in tests/cluster).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, replace
from itertools import combinations, islice, pairwise
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kchaos.model.config import ConfigError, load_config
from kchaos.model.events import NEMESIS_PROCESS, SKIPPED, START
from kchaos.model.fault_plan import PlannedFault, fault_sequence, may_overlap
from kchaos.model.fault_record import FaultRecord
from kchaos.model.fault_spec import parse_spec
from kchaos.model.fault_table import FAULTS
from kchaos.model.history import HistoryWriter
from kchaos.model.run_files import RunDir
from kchaos.nemesis.carriers import fault_classes
from kchaos.nemesis.fault import Fault
from kchaos.nemesis.schedule import Nemesis
from tests.test_plan import Settings

SPECS = ("kill", "pause", "isolate", "latency", "min-isr", "reassign", "clock:target=random", "kill:target=2")


#: Two faults that may meet, drawn freely after the first round, every later one overlapping if it may.
OVERLAPPING = Settings(
    nemesis=("kill", "pause"), schedule="random", duration=600.0, fault_duration=10.0,
    fault_duration_max=20.0, fault_interval=5.0, fault_overlap=1.0,
)  # fmt: skip


def windows_meet(a: PlannedFault, b: PlannedFault) -> bool:
    return a.at < b.end and b.at < a.end


@settings(max_examples=200)
@given(
    nemesis=st.lists(st.sampled_from(SPECS), min_size=1, max_size=4, unique=True),
    schedule_name=st.sampled_from(["fixed", "random"]),
    seed=st.integers(0, 2**32),
    overlap=st.sampled_from([0.0, 0.3, 1.0]),
)
def test_only_faults_that_may_meet_overlap_and_never_in_the_first_round(
    nemesis: list[str], schedule_name: str, seed: int, overlap: float
) -> None:
    planned = list(
        islice(
            fault_sequence(
                replace(
                    OVERLAPPING,
                    nemesis=tuple(nemesis),
                    schedule=schedule_name,
                    seed=seed,
                    fault_overlap=overlap,
                )
            ),
            len(nemesis) + 20,
        )
    )
    assert [p.at for p in planned] == sorted(p.at for p in planned)
    first_round = planned[: len(nemesis)]
    assert not any(windows_meet(a, b) for a, b in combinations(first_round, 2))
    for a, b in combinations(planned, 2):
        if windows_meet(a, b):
            assert overlap > 0
            names = {parse_spec(a.fault).name, parse_spec(b.fault).name}
            assert len(names) == 2 and all(FAULTS[name].overlaps for name in names), (a, b)


def test_without_overlap_no_window_meets_another_and_with_it_the_seed_decides_which_do() -> None:
    alone = list(islice(fault_sequence(replace(OVERLAPPING, fault_overlap=0.0)), 30))
    assert not any(windows_meet(a, b) for a, b in combinations(alone, 2))
    always = list(islice(fault_sequence(OVERLAPPING), 30))
    assert always == list(islice(fault_sequence(OVERLAPPING), 30))  # same seed, same plan
    # kill and pause may meet: after the first round, a fault that follows the other one starts inside its
    # window, unless a fault of its own name still holds there (then once all have ended).
    inside = 0
    for n, (before, after) in enumerate(pairwise(always[1:]), start=2):
        if parse_spec(before.fault).name == parse_spec(after.fault).name:
            continue
        if before.at <= after.at < before.end:
            inside += 1
        else:
            assert after.at >= max(p.end for p in always[:n]), (before, after)
    assert inside >= 5
    some = list(islice(fault_sequence(replace(OVERLAPPING, fault_overlap=0.5, seed=7)), 40))
    meeting = sum(windows_meet(a, b) for a, b in pairwise(some))
    assert 0 < meeting < 39


def test_a_fault_meets_no_other_of_its_name_nor_one_that_needs_the_cluster_whole() -> None:
    kill = PlannedFault("kill#1", "kill:target=1", 0, 10)
    assert may_overlap([kill], "pause:target=2")
    assert not may_overlap([kill], "kill:target=2")
    assert not may_overlap([kill], "reassign")
    assert not may_overlap([PlannedFault("reassign#1", "reassign", 0, 10)], "kill")
    assert not may_overlap([], "kill")


@pytest.mark.parametrize(
    ("nemesis", "named"),
    [("kill", "only kill"), ("reassign,min-isr", "none"), ("kill,kill:target=2", "only kill")],
)
def test_an_overlap_that_could_never_happen_is_refused_naming_the_faults(nemesis: str, named: str) -> None:
    with pytest.raises(ConfigError) as refused:
        load_config(nemesis=nemesis, fault_overlap=0.5, duration=300)
    assert f"--nemesis names {named} of them" in str(refused.value)
    assert (
        "kill, stop, pause, isolate, cut-clients, latency, loss, bandwidth, hold, drop, delay, clock"
        in str(refused.value)
    )
    assert load_config(nemesis="kill,pause", fault_overlap=0.5, duration=300).fault_overlap == 0.5


def test_a_scenario_refuses_the_overlap_it_would_not_use() -> None:
    with pytest.raises(ConfigError, match="--fault-overlap"):
        load_config(scenario="kip-101-hw-truncation", fault_overlap=0.5)


# --- the runner ------------------------------------------------------------------------------------


@dataclass
class Journal:
    """What the stand-in faults did, in order, with when."""

    said: list[tuple[str, str, float]]

    def add(self, what: str, key: str) -> None:
        self.said.append((what, key, time.monotonic()))

    def of(self, what: str) -> list[str]:
        return [key for said, key, _ in self.said if said == what]

    def when(self, what: str, key: str) -> float:
        return next(at for said, k, at in self.said if said == what and k == key)


JOURNAL = Journal([])


class StandIn(Fault):
    """A fault that hits the nodes its target names and does nothing to them but note it."""

    def start(self) -> FaultRecord:
        self.nodes = self.resolve(self.spec.option("target"))
        self.active = True
        JOURNAL.add("start", self.key)
        return self.record()

    def stop(self) -> FaultRecord:
        if self.active:
            self.active = False
            JOURNAL.add("stop", self.key)
        return self.record()

    def effect_reached(self) -> bool:
        return True

    def describe(self) -> str:
        return f"stand-in {self.spec}"

    def healed(self) -> bool:
        JOURNAL.add("healed", self.key)
        return True


def run_plan(tmp_path: Path, planned: list[PlannedFault], monkeypatch: pytest.MonkeyPatch) -> pd.DataFrame:
    """`planned` carried out by a nemesis over stand-in faults; its history's nemesis rows."""
    JOURNAL.said.clear()
    for name in ("kill", "pause"):
        monkeypatch.setitem(cast(dict[Any, Any], fault_classes()), (name, "nodes"), StandIn)
    nodes = {1: None, 2: None, 3: None}
    cluster = SimpleNamespace(nodes=nodes, servers=nodes)
    history = HistoryWriter(RunDir(tmp_path), "overlap")
    nemesis = Nemesis(cast(Any, cluster), history, "kchaos", 0, planned, effect_timeout=5, heal_timeout=5)
    nemesis.start()
    assert nemesis.finished.wait(20), "the plan did not end"
    assert nemesis.error is None, nemesis.error
    rows = pd.read_parquet(history.finish())
    return rows[rows["process"] == NEMESIS_PROCESS].reset_index(drop=True)


def start_details(rows: pd.DataFrame) -> pd.Series:
    """Each fault's start row's detail, by key."""
    return rows[rows["value"] == START].set_index("key")["detail"].map(json.loads)


def test_a_fault_planned_inside_anothers_window_starts_beside_it_and_heal_waits_for_both(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    planned = [
        PlannedFault("kill#1", "kill:target=1", 0.0, 1.0),
        PlannedFault("pause#2", "pause:target=random", 0.3, 0.3),
        PlannedFault("kill#3", "kill:target=1", 1.2, 0.2),
    ]
    rows = run_plan(tmp_path, planned, monkeypatch)
    assert JOURNAL.of("start") == ["kill#1", "pause#2", "kill#3"]
    assert JOURNAL.of("stop") == ["pause#2", "kill#1", "kill#3"]
    # Beside: the pause started while the kill held, about as long after it as planned.
    assert JOURNAL.when("start", "pause#2") < JOURNAL.when("stop", "kill#1")
    assert 0.2 < JOURNAL.when("start", "pause#2") - JOURNAL.when("start", "kill#1") < 0.6
    # Healing was awaited once both had ended, and before the next fault.
    healed = [at for said, key, at in JOURNAL.said if said == "healed" and key in ("kill#1", "pause#2")]
    assert len(healed) == 2
    assert min(healed) > JOURNAL.when("stop", "kill#1") and max(healed) < JOURNAL.when("start", "kill#3")
    starts = start_details(rows)
    assert starts["pause#2"]["beside"] == ["kill#1"]
    assert starts["pause#2"]["nodes"] in ([2], [3])  # drawn among the nodes the kill did not hold
    assert "beside" not in starts["kill#1"] and "beside" not in starts["kill#3"]


def test_a_fault_whose_target_another_holds_is_skipped_and_says_which(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    planned = [
        PlannedFault("kill#1", "kill:target=1", 0.0, 0.8),
        PlannedFault("pause#2", "pause:target=1", 0.2, 0.2),
    ]
    rows = run_plan(tmp_path, planned, monkeypatch)
    assert JOURNAL.of("start") == ["kill#1"]
    skipped = rows[rows["value"] == SKIPPED].iloc[0]
    assert skipped["key"] == "pause#2"
    assert "target '1' is node 1, which kill#1 holds" in skipped["error"]


def test_a_plan_without_overlaps_runs_one_fault_at_a_time_as_before(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    planned = [
        PlannedFault("kill#1", "kill:target=1", 0.0, 0.2),
        PlannedFault("pause#2", "pause:target=1", 0.3, 0.2),
    ]
    rows = run_plan(tmp_path, planned, monkeypatch)
    assert [said for said, _, _ in JOURNAL.said] == ["start", "stop", "healed", "start", "stop", "healed"]
    starts = start_details(rows)
    assert starts["pause#2"]["nodes"] == [1] and "beside" not in starts["pause#2"]


def test_a_fault_ended_with_the_last_row_before_its_lift_records_it_on_its_stop_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The stop row says which rows came before the fault began to be lifted: a transaction attack judges
    a frozen client's answer by it (`kchaos.nemesis.txn_attacks.window_evidence`), since a thawed client
    prints before the stop row is written. The record the nemesis returns and the row agree."""
    monkeypatch.setitem(cast(dict[Any, Any], fault_classes()), ("pause", "nodes"), StandIn)
    nodes = {1: None, 2: None, 3: None}
    history = HistoryWriter(RunDir(tmp_path), "held")
    nemesis = Nemesis(cast(Any, SimpleNamespace(nodes=nodes, servers=nodes)), history, "kchaos", 0, [])
    fault = nemesis.begin("pause:target=1")
    assert fault is not None
    stopped = nemesis.end(fault, held_through_row=7)
    assert stopped is not None and stopped.held_through_row == 7
    rows = pd.read_parquet(history.finish())
    stop = rows[(rows["process"] == NEMESIS_PROCESS) & (rows["value"] == "stop")]
    assert json.loads(stop["detail"].iloc[0])["held_through_row"] == 7
