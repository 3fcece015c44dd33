"""Faults that fire on state (`when=`): the words, their refusals, the plan that arms them beside the fault
before them, the states read from stand-in metadata, and the nemesis that fires or skips them.

No Kafka: the metadata is made up, with known ground truth, and the faults are the overlap tests' stand-ins.
What the triggers find on real brokers (KIP-101's loss on 0.10.2.2) is measured in docs/scenarios.md.
"""

from __future__ import annotations

import json
import random
from dataclasses import replace
from itertools import islice, pairwise
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest
from click.testing import CliRunner

from kchaos.checkers.stories.timeline import fault_line
from kchaos.harness.metadata import MetadataView, PartitionState
from kchaos.model.config import ConfigError, load_config
from kchaos.model.events import SKIPPED, START
from kchaos.model.fault_mix import parse_mix
from kchaos.model.fault_options import SpecError
from kchaos.model.fault_plan import PlannedFault, fault_sequence
from kchaos.model.fault_spec import parse_spec
from kchaos.model.fault_triggers import ARMED_PAST_END_S, MAX_AFTER_S, TRIGGERS
from kchaos.nemesis import triggers
from kchaos.runner.cli import main
from tests.test_fault_overlap import JOURNAL, run_plan
from tests.test_plan import Settings
from tests.test_replay import StandIn, started


def test_every_fault_that_may_overlap_takes_when_and_prints_it_back() -> None:
    spec = parse_spec("kill:target=2:when=leader-down")
    assert spec.when == "leader-down" and dict(spec.options)["target"] == "2"
    assert str(spec) == "kill:target=2:when=leader-down"
    assert parse_spec(str(spec)) == spec
    assert str(parse_spec("kill:when=time")) == "kill"


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("kill:when=soon", "when='soon' is no state kchaos observes; choose from time"),
        ("kill:when=leader-down:when=isr-shrunk", "option when is given twice"),
        ("one-way:when=leader-down", "one-way needs the cluster to itself"),
        ("kill:whence=x", "kill takes target=..., when=STATE"),
    ],
)
def test_a_state_kchaos_cannot_fire_on_is_refused_with_the_fix(text: str, says: str) -> None:
    with pytest.raises(SpecError, match=says.replace("(", r"\(").replace(")", r"\)")):
        parse_spec(text)


def test_a_mix_lists_its_states_after_its_kinds_and_refuses_what_it_cannot_draw() -> None:
    mix = parse_mix("mix:kinds=kill,pause:when=leader-down,follower-behind")
    assert mix.kinds == ("kill", "pause") and mix.triggers == ("leader-down", "follower-behind")
    assert parse_mix(str(mix)) == mix
    for text, says in [
        ("mix:kinds=kill:when=", "lists an empty state"),
        ("mix:kinds=kill:when=time", "which a mix always draws"),
        ("mix:kinds=kill:when=isr-shrunk,isr-shrunk", "isr-shrunk named twice"),
        ("mix:kinds=kill:when=later", "no state kchaos observes"),
        ("mix:kinds=one-way,reassign:when=isr-shrunk", "none of one-way, reassign may overlap"),
    ]:
        with pytest.raises(SpecError, match=says):
            parse_mix(text)


@pytest.mark.parametrize(
    ("values", "says"),
    [
        ({"nemesis": "kill:target=leader,kill:when=txn-outstanding"}, "only the txn, eos workloads"),
        ({"nemesis": "mix:kinds=kill,pause:when=request-held"}, "no request fault of the run holds"),
    ],
)
def test_a_state_the_run_can_never_be_in_is_refused_before_anything_starts(
    values: dict[str, Any], says: str
) -> None:
    with pytest.raises(ConfigError, match=says):
        load_config(duration=120.0, **values)


def test_a_fault_on_state_is_armed_as_the_fault_before_it_starts_and_through_its_hold() -> None:
    settings = Settings(nemesis=("kill:target=leader", "kill:when=leader-down"), duration=200.0)
    planned = list(islice(fault_sequence(settings), 4))
    clock, fired = planned[0], planned[1]
    assert parse_spec(clock.fault).when == "time" and clock.armed_s == 0.0
    assert parse_spec(fired.fault).when == "leader-down"
    assert fired.at == clock.at and fired.armed_s == clock.duration + ARMED_PAST_END_S
    assert 0 <= fired.after_s <= MAX_AFTER_S
    # The next fault's quiet period follows the end of the latest the armed fault could hold.
    assert planned[2].at >= fired.end == fired.at + fired.armed_s + fired.duration


def test_a_fault_on_state_is_never_armed_beside_another_armed_fault() -> None:
    settings = Settings(nemesis=("kill:when=isr-shrunk", "pause:when=leader-down"), duration=400.0)
    planned = list(islice(fault_sequence(settings), 6))
    for before, after in pairwise(planned):
        assert after.at > before.at, "each is armed on its own, at its own time"
        assert after.armed_s == after.duration + ARMED_PAST_END_S


def test_a_mix_without_states_draws_none_and_with_them_aims_each_fired_fault_at_its_state() -> None:
    values = {"duration": 900.0, "replication_factor": 3, "consumers": 0}
    plain = load_config(nemesis="mix:kinds=kill,pause", seed=4, **values)
    assert all(p.armed_s == 0 and parse_spec(p.fault).when == "time" for p in fault_sequence_of(plain))
    fired = []
    for seed in range(20):
        config = load_config(nemesis="mix:kinds=kill,pause:when=leader-down,isr-shrunk", seed=seed, **values)
        planned = fault_sequence_of(config)
        assert all(parse_spec(p.fault).when == "time" for p in planned[:2]), "the first round is on the clock"
        for before, item in pairwise(planned):
            spec = parse_spec(item.fault)
            if spec.when != "time":
                fired.append(spec)
                assert item.at == before.at and parse_spec(before.fault).when == "time"
                assert spec.target in TRIGGERS[spec.when].aims
    assert {spec.when for spec in fired} == {"leader-down", "isr-shrunk"}


def fault_sequence_of(config: Any) -> list[PlannedFault]:
    return list(islice(fault_sequence(config), 12))


# --- the states, read from stand-in metadata ----------------------------------------------------------


class Metadata:
    """Views of partition 0 as given, one per answering node; `leader_of` agrees when they do."""

    def __init__(self, *states: tuple[int, PartitionState]) -> None:
        self.states = list(states)

    def views(self, topic: str) -> list[MetadataView]:
        return [MetadataView(node, frozenset({1, 2, 3}), {0: state}) for node, state in self.states]

    def leader_of(self, topic: str, partition: int) -> int:
        leaders = {state.leader for _, state in self.states}
        return leaders.pop() if len(leaders) == 1 else -1


def stand_in(metadata: Metadata, held: dict[str, tuple[int, ...]] | None = None) -> Any:
    """A nemesis whose faults in force (`held`: fault key -> nodes) hold what they name."""
    holding = {node: key for key, nodes in (held or {}).items() for node in nodes}
    return SimpleNamespace(
        cluster=SimpleNamespace(metadata=metadata), topic="t", partition=0, holding=lambda: holding
    )


WHOLE = PartitionState(0, 1, (1, 2, 3), (1, 2, 3))


def test_leader_down_holds_while_a_fault_holds_the_leader_the_running_nodes_still_name() -> None:
    metadata = Metadata((2, WHOLE), (3, WHOLE))
    assert triggers.LeaderDown(stand_in(metadata, {"kill#1": (3,)})).holds() is None
    said = triggers.LeaderDown(stand_in(metadata, {"kill#1": (1,)})).holds()
    assert said == "partition 0's leader, node 1, is held by kill#1 and the running nodes still name it"
    replaced = Metadata((2, replace(WHOLE, leader=2)), (3, replace(WHOLE, leader=2)))
    assert triggers.LeaderDown(stand_in(replaced, {"kill#1": (1,)})).holds() is None
    torn = Metadata((2, WHOLE), (3, replace(WHOLE, leader=2)))
    assert triggers.LeaderDown(stand_in(torn, {"kill#1": (1,)})).holds() is None


def test_leader_changed_compares_with_the_leader_when_armed() -> None:
    metadata = Metadata((1, WHOLE))
    state = triggers.LeaderChanged(stand_in(metadata))
    state.arm()
    assert state.holds() is None
    metadata.states = [(2, replace(WHOLE, leader=2))]
    assert state.holds() == "partition 0's leader changed from node 1 to node 2"
    metadata.states = [(2, replace(WHOLE, leader=-1))]
    assert state.holds() is None


def test_isr_shrunk_and_follower_behind_tell_a_replica_left_out_from_one_a_fault_holds() -> None:
    shrunk = replace(WHOLE, isr=(1, 2))
    metadata = Metadata((1, shrunk), (2, shrunk), (3, shrunk))
    assert triggers.IsrShrunk(stand_in(metadata)).holds() == (
        "partition 0's in-sync replicas are [1,2] of [1,2,3], as node 1 reports"
    )
    assert triggers.IsrShrunk(stand_in(Metadata((1, WHOLE)))).holds() is None
    behind = triggers.FollowerBehind(stand_in(metadata)).holds()
    assert behind is not None and behind.startswith("node 3 answers, no fault holds it")
    # Down (it does not answer) or held by a fault in force: not a follower catching up.
    assert triggers.FollowerBehind(stand_in(Metadata((1, shrunk), (2, shrunk)))).holds() is None
    assert triggers.FollowerBehind(stand_in(metadata, {"pause#2": (3,)})).holds() is None


class Flicker(triggers.State):
    """Holds on the asks listed (1-based), not on the others."""

    def __init__(self, nemesis: Any, on: set[int]) -> None:
        super().__init__(nemesis)
        self.on, self.asked = on, 0

    def holds(self) -> str | None:
        self.asked += 1
        return f"ask {self.asked}" if self.asked in self.on else None


class Waits:
    """A nemesis's `await_condition`, without its logging: asks until true or `timeout` asks."""

    def await_condition(
        self, condition: Any, timeout: float, what: str, interval: float = 0.5
    ) -> float | None:
        return 0.0 if any(condition() for _ in range(int(timeout))) else None


@pytest.mark.parametrize(
    ("on", "after_s", "fired"),
    [({3}, 0.0, "ask 3"), ({3}, 60.0, None), (set(), 0.0, None)],
)
def test_a_state_fires_only_once_it_held_as_long_as_drawn(
    monkeypatch: pytest.MonkeyPatch, on: set[int], after_s: float, fired: str | None
) -> None:
    monkeypatch.setitem(triggers.STATES, "isr-shrunk", lambda nemesis: Flicker(nemesis, on))
    got = triggers.await_state(cast(Any, Waits()), "isr-shrunk", armed_s=10, after_s=after_s)
    assert (got.sentence if got else None) == fired


# --- the nemesis, firing or skipping ----------------------------------------------------------------


def test_a_fault_whose_state_holds_fires_beside_the_one_before_and_records_the_state(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(triggers.STATES, "leader-down", lambda nemesis: Flicker(nemesis, set(range(3, 99))))
    planned = [
        PlannedFault("kill#1", "kill:target=1", 0.0, 1.0),
        PlannedFault("pause#2", "pause:target=random:when=leader-down", 0.0, 0.3, armed_s=2.0),
    ]
    rows = run_plan(tmp_path, planned, monkeypatch)
    assert JOURNAL.of("start") == ["kill#1", "pause#2"]
    assert JOURNAL.when("start", "pause#2") < JOURNAL.when("stop", "kill#1")
    start = rows[(rows["value"] == START) & (rows["key"] == "pause#2")]["detail"].map(json.loads).iloc[0]
    assert start["fired_on"] == "ask 3" and start["beside"] == ["kill#1"]
    assert start["nodes"] in ([2], [3]) and start["armed_for_s"] >= 0


def test_a_fault_whose_state_never_holds_is_skipped_naming_the_state(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(triggers.STATES, "leader-down", lambda nemesis: Flicker(nemesis, set()))
    planned = [
        PlannedFault("kill#1", "kill:target=1", 0.0, 0.3),
        PlannedFault("pause#2", "pause:target=random:when=leader-down", 0.0, 0.3, armed_s=0.6),
    ]
    rows = run_plan(tmp_path, planned, monkeypatch)
    assert JOURNAL.of("start") == ["kill#1"]
    skipped = rows[rows["value"] == SKIPPED].iloc[0]
    assert skipped["key"] == "pause#2"
    assert skipped["error"] == "pause#2: the state leader-down did not hold while it was armed (0.6 s)"


def test_the_model_names_each_state_the_nemesis_reads() -> None:
    assert set(triggers.STATES) == set(TRIGGERS)


# --- the successor, the replica a state-fired fault aims at ---------------------------------------------


def successor_of(leader: int, replicas: tuple[int, ...], isr: tuple[int, ...], zookeeper: Any = None) -> Any:
    """What `target=successor` names on a stand-in cluster whose partition 0 is as given."""
    state = PartitionState(0, leader, replicas, isr)
    metadata = SimpleNamespace(
        leader_of=lambda *args, **kwargs: leader,
        views=lambda *args, **kwargs: [MetadataView(leader, frozenset({1, 2, 3}), {0: state})],
    )
    nodes = {n: SimpleNamespace(state="running") for n in (1, 2, 3)}
    on = SimpleNamespace(nodes=nodes, servers=nodes, metadata=metadata, controllers={}, zookeeper=zookeeper)
    return started("kill:target=successor", on, None).nodes


def test_the_successor_is_the_first_in_sync_replica_after_the_leader_in_assignment_order() -> None:
    assert successor_of(2, (2, 3, 1), (2, 3, 1)) == (3,)
    assert successor_of(2, (2, 3, 1), (1, 2)) == (1,), "a replica out of sync is not elected"
    # ZooKeeper mode: brokers before 0.11 list replicas in id order; ZooKeeper has the assignment's.
    zookeeper = SimpleNamespace(replica_assignment=lambda topic: {0: (1, 3, 2)})
    assert successor_of(1, (1, 2, 3), (1, 2, 3), zookeeper) == (3,)


def test_a_fault_fired_on_leader_down_aims_at_the_successor_of_the_leader_the_state_named() -> None:
    """The race a fresh-clone CI lost: leader-down held with node 2, the killed leader, still named; by the
    time the fault resolved its target the controller had fenced 2 and elected 3, and `successor`, asked of
    the new agreed leader, paused 1, the new leader's successor, not the replica the failover elected."""
    after_failover = PartitionState(0, 3, (2, 3, 1), (3, 1))
    metadata = SimpleNamespace(
        leader_of=lambda *args, **kwargs: 3,
        views=lambda *args, **kwargs: [MetadataView(3, frozenset({1, 3}), {0: after_failover})],
    )
    nodes = {n: SimpleNamespace(state="running") for n in (1, 2, 3)}
    on = SimpleNamespace(nodes=nodes, servers=nodes, metadata=metadata, controllers={}, zookeeper=None)
    fault = StandIn(
        cast(Any, on), "kchaos", 0, "pause#2", parse_spec("pause:target=successor"), random.Random(0)
    )
    assert fault.start().nodes == (1,), "unfired, it aims at the successor of the leader agreed now"
    fired = StandIn(
        cast(Any, on), "kchaos", 0, "pause#2", parse_spec("pause:target=successor"), random.Random(0)
    )
    fired.seen_leader = 2
    assert fired.start().nodes == (3,)


def test_kchaos_faults_lists_every_state_with_what_it_is() -> None:
    listed = CliRunner().invoke(main, ["faults"]).output
    assert "when=STATE: every fault takes when=STATE" in listed
    for trigger in TRIGGERS.values():
        assert f"  {trigger.name}: {trigger.help}" in listed
    assert "--shrink RUN_DIR" in CliRunner().invoke(main, ["hunt", "--help"]).output


def test_the_story_says_which_state_a_fault_fired_on() -> None:
    detail = {"description": "pause node 2 (successor)", "fired_on": "partition 0's leader, node 3, is held"}
    row = {"f": "pause", "key": "pause#5", "value": START, "detail": json.dumps(detail)}
    assert fault_line(row) == (
        "fault pause#5 begins: pause node 2 (successor), fired as partition 0's leader, node 3, is held"
    )
    assert fault_line({**row, "detail": json.dumps({"description": "kill node 3"})}) == (
        "fault pause#5 begins: kill node 3"
    )
