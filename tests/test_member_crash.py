"""A group member crashed on the nemesis's order, without a cluster: the fault's spec and the runs that may
ask for it, the member's thread abandoning its client (destroyed, never closed) and coming back with a new
one, and the fault's reading of the group's reaction, driven through a scripted group."""

from __future__ import annotations

import gc
import random
import threading
import time
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any, ClassVar, cast

import pandas as pd
import pytest
from confluent_kafka import Consumer

from kchaos.harness.cluster import KafkaCluster
from kchaos.model.config import ConfigError, load_config
from kchaos.model.events import INFO, MEMBER_CRASH, MEMBER_RESTART, group_process
from kchaos.model.fault_options import SpecError
from kchaos.model.fault_record import FaultRecord
from kchaos.model.fault_spec import parse_spec
from kchaos.model.history import HistoryWriter
from kchaos.model.history_files import history_path
from kchaos.model.run_files import RunDir
from kchaos.model.waiting import wait_until
from kchaos.nemesis import members as member_faults
from kchaos.nemesis.fault import FaultUnsupported, TargetUnresolved
from kchaos.nemesis.members import GroupMembers, KillMember, settled
from kchaos.workloads.in_harness import group_consumer
from kchaos.workloads.in_harness.group_consumer import (
    SESSION_TIMEOUT_MS,
    GroupMember,
    GroupThreads,
    group_settings,
)

#: Nothing listens here: a client starts, subscribes and polls without ever reaching a broker.
NOWHERE = "127.0.0.1:1"


def test_kill_member_targets_random_or_a_member_by_name() -> None:
    assert parse_spec("kill-member").option("target") == "random"
    assert parse_spec("kill-member:target=member-2").option("target") == "member-2"
    assert parse_spec("kill-member:target=processor-0").option("target") == "processor-0"
    for bad in ("leader", "member-x", "2", "member-01"):
        with pytest.raises(SpecError, match="member-N"):
            parse_spec(f"kill-member:target={bad}")


def settings(**overrides: Any) -> dict[str, Any]:
    values: dict[str, Any] = {"run_id": "t", "nemesis": "kill-member", "workload": "group", "consumers": 3}
    return values | overrides


def test_kill_member_runs_only_where_a_group_has_another_member_to_take_over() -> None:
    assert load_config(**settings()).nemesis == ("kill-member",)
    assert load_config(**settings(nemesis="kill-member:target=member-2")).consumers == 3
    with pytest.raises(ConfigError, match="--workload sends runs no consumer group; use --workload group"):
        load_config(**settings(workload="sends"))
    with pytest.raises(ConfigError, match="--consumers 1 runs one member alone; use --consumers 2"):
        load_config(**settings(consumers=1))
    with pytest.raises(ConfigError, match="has members member-0 to member-2; name one of them"):
        load_config(**settings(nemesis="kill-member:target=member-3"))
    with pytest.raises(ConfigError, match="name one of them"):
        load_config(**settings(nemesis="kill-member:target=processor-0"))


def test_members_have_a_session_a_short_run_sees_expire() -> None:
    assert group_settings(NOWHERE, "member-0", "g", "sync")["session.timeout.ms"] == SESSION_TIMEOUT_MS
    assert 6_000 <= SESSION_TIMEOUT_MS <= 10_000


class TrackedConsumer(Consumer):
    """A real librdkafka consumer that a weak reference can watch and that counts its closes."""

    made: ClassVar[list[weakref.ref[TrackedConsumer]]] = []
    closes: ClassVar[int] = 0

    def __init__(self, config: dict[str, Any]) -> None:
        super().__init__(config)
        TrackedConsumer.made.append(weakref.ref(self))

    def close(self, *args: Any, **kwargs: Any) -> None:
        TrackedConsumer.closes += 1
        super().close(*args, **kwargs)


def test_a_crashed_member_abandons_its_client_unclosed_and_comes_back_with_a_new_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(group_consumer, "Consumer", TrackedConsumer)
    monkeypatch.setattr(TrackedConsumer, "made", [])
    monkeypatch.setattr(TrackedConsumer, "closes", 0)
    history = HistoryWriter(RunDir(tmp_path), "crash-test")
    process = group_process(1)
    member = GroupMember(
        process=process, settings=group_settings(NOWHERE, process, "g", "auto"), group="g", topic="t",
        commit="auto", history=history,
    )  # fmt: skip
    threads = GroupThreads([member])
    threads.start()
    try:
        wait_until(lambda: member.consumer is not None, 10, "the member's first client")
        member.assigned = frozenset({0, 2})  # as a rebalance would have given it
        assert threads.crash(process) == frozenset({0, 2})
        assert member.consumer is None
        gc.collect()
        assert TrackedConsumer.made[0]() is None, "the crashed member's client is still alive"
        assert TrackedConsumer.closes == 0, "a crash must not close (LeaveGroup, final commit)"
        assert threads.assignment(process) == frozenset() and member.held.is_set()
        assert threads.restart(process)
        assert member.consumer is not None and len(TrackedConsumer.made) == 2
        assert not member.held.is_set() and not member.orders.crash.is_set()
    finally:
        threads.stop()
    assert not threads.restart(process), "nothing comes back once the workload has stopped"
    assert TrackedConsumer.closes == 1, "the restarted client leaves the group in good order at the end"
    history.finish()
    rows = pd.read_parquet(history_path(tmp_path))
    mine = rows[rows["f"].isin([MEMBER_CRASH, MEMBER_RESTART])]
    assert list(mine["f"]) == [MEMBER_CRASH, MEMBER_RESTART]
    assert set(mine["type"]) == {INFO} and set(mine["process"]) == {process}
    assert '"partitions": [0, 2]' in str(mine["detail"].iloc[0])


@dataclass
class ScriptedGroup:
    """Members whose crashes, restarts and assignments the test sets by hand."""

    names: list[str]
    held: dict[str, frozenset[int]] = field(default_factory=dict)
    given: dict[str, int] = field(default_factory=dict)
    crashed: list[str] = field(default_factory=list)
    restarted: list[str] = field(default_factory=list)
    idle: set[str] = field(default_factory=set)

    def member_names(self) -> list[str]:
        return list(self.names)

    def crash(self, process: str) -> frozenset[int]:
        self.crashed.append(process)
        held, self.held[process] = self.held.get(process, frozenset()), frozenset()
        return held

    def restart(self, process: str) -> bool:
        self.restarted.append(process)
        return True

    def assignment(self, process: str) -> frozenset[int]:
        return self.held.get(process, frozenset())

    def assignments(self, process: str) -> int:
        return self.given.get(process, 0)

    def handed(self, process: str) -> int:
        """Every member holding partitions has been handed records, unless the test says otherwise."""
        return 0 if process in self.idle else 1

    def assign(self, process: str, *partitions: int) -> None:
        self.held[process] = frozenset(partitions)
        self.given[process] = self.given.get(process, 0) + 1


@dataclass
class RecoveredMetadata:
    """A whole cluster whose nodes describe the topic with `partitions` partitions."""

    partitions: int

    def is_recovered(self, topic: str) -> bool:
        return True

    def views(self, topic: str) -> list[SimpleNamespace]:
        return [SimpleNamespace(partitions=dict.fromkeys(range(self.partitions)))]


def kill_member(spec: str, readers: object, seed: int = 0, partitions: int | None = None) -> KillMember:
    """The fault over `readers`, on a topic of `partitions` partitions (by default as many as the scripted
    group holds)."""
    if partitions is None:
        held = [readers.assignment(n) for n in readers.names] if isinstance(readers, ScriptedGroup) else []
        partitions = len(frozenset().union(*held))
    cluster = SimpleNamespace(metadata=RecoveredMetadata(partitions))
    fault = KillMember(
        cast(KafkaCluster, cluster), "t", 0, "kill-member#1", parse_spec(spec), random.Random(seed)
    )
    fault.use_readers(readers)
    return fault


def test_the_fault_sees_the_group_hand_the_dead_members_partitions_to_the_others() -> None:
    group = ScriptedGroup(["member-0", "member-1", "member-2"])
    for name, partitions in zip(group.names, ((0, 1), (2, 3), (4, 5)), strict=True):
        group.assign(name, *partitions)
    assert isinstance(group, GroupMembers)
    fault = kill_member("kill-member:target=member-1", group)
    detail = fault.start().to_detail()
    assert (group.crashed, detail["member"], detail["partitions"], detail["kind"]) == (
        ["member-1"], "member-1", [2, 3], "client-crash",
    )  # fmt: skip
    assert not fault.effect_reached(), "nobody took anything over yet"
    group.assign("member-0", 0, 1, 2)
    assert not fault.effect_reached(), "partition 3 is still nobody's"
    group.assign("member-2", 3, 4, 5)
    assert fault.effect_reached()
    assert fault.stop().to_detail()["restarted"] and group.restarted == ["member-1"]
    assert not fault.healed(), "the new client has not been given its assignment yet"
    group.assign("member-1", 3)
    assert fault.healed()
    assert fault.stop().to_detail()["restarted"] and group.restarted == ["member-1"], "stop is idempotent"


def reading_group(names: list[str], idle: tuple[str, ...] | set[str] = ()) -> ScriptedGroup:
    """A group each of whose members holds a partition and, unless `idle`, was handed records."""
    group = ScriptedGroup(names, idle=set(idle))
    for n, name in enumerate(names):
        group.assign(name, n)
    return group


def test_a_random_target_is_the_seeds_and_a_run_without_a_group_cannot_have_one() -> None:
    names = [group_process(n) for n in range(5)]
    chosen = {
        kill_member("kill-member", reading_group(names), seed).start().to_detail()["member"]
        for seed in range(20)
    }
    assert len(chosen) > 1 and chosen <= set(names)
    assert (
        kill_member("kill-member", reading_group(names), 3).start()
        == kill_member("kill-member", reading_group(names), 3).start()
    )
    # Only a member reading what it was given is crashed: one between a rebalance and its first records
    # would leave the group nothing to hand out again.
    idle = set(names[:4])
    assert {
        kill_member("kill-member", reading_group(names, idle), s).start().to_detail()["member"]
        for s in range(10)
    } == {names[4]}
    with pytest.raises(FaultUnsupported, match="no consumer group"):
        kill_member("kill-member", object()).start()
    with pytest.raises(TargetUnresolved, match="one member alone"):
        kill_member("kill-member", ScriptedGroup(["member-0"])).start()


def test_a_group_has_settled_when_its_members_views_make_one_whole_assignment() -> None:
    names = ["member-0", "member-1", "member-2"]

    def group(*held: tuple[int, ...]) -> ScriptedGroup:
        scripted = ScriptedGroup(names)
        for name, partitions in zip(names, held, strict=True):
            scripted.assign(name, *partitions)
        return scripted

    assert settled(group((0, 1), (2, 3), (4, 5)), names, 6)
    # The first member to join holds every partition while the others wait for the rebalance they asked for.
    assert not settled(group((0, 1, 2, 3, 4, 5), (), ()), names, 6)
    # A member the group dropped still believes it holds partition 1, which the group gave member-0.
    assert not settled(group((0, 1), (1,), (2,)), names, 3)
    # Partition 5 is nobody's yet.
    assert not settled(group((0, 1), (2, 3), (4,)), names, 6)
    # More members than partitions: one member holds nothing, and rightly.
    assert settled(group((0,), (1,), ()), names, 2)
    assert not settled(group((0, 1), (), ()), names, 2)


def test_a_member_is_crashed_only_once_the_group_has_settled() -> None:
    """The failures this prevents, both seen on a real cluster: member-2 crashed holding all six
    partitions while the other two were joining, so the rebalance they started committed everything it
    had been handed and nothing was handed out again; and a processor crashed while still believing it
    held a partition the group had already given another, so nobody had anything to take over."""
    names = ["member-0", "member-1", "member-2"]
    group = ScriptedGroup(names)
    group.assign("member-2", 0, 1, 2, 3, 4, 5)
    fault = kill_member("kill-member:target=member-2", group, partitions=6)
    started: list[FaultRecord] = []
    thread = threading.Thread(target=lambda: started.append(fault.start()))
    thread.start()
    try:
        time.sleep(1.0)
        assert group.crashed == [], "crashed while the others were still joining"
        for name, partitions in zip(names, ((0, 1), (2, 3), (4, 5)), strict=True):
            group.assign(name, *partitions)
    finally:
        thread.join(10)
    assert group.crashed == ["member-2"] and started[0].to_detail()["partitions"] == [4, 5]


def test_a_group_that_never_settles_is_no_target_and_says_what_each_member_held(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(member_faults, "READING_WAIT", 0.5)
    group = ScriptedGroup(["member-0", "member-1"])
    group.assign("member-0", 0, 1)
    with pytest.raises(TargetUnresolved, match=r"did not settle .* member-0 \[0, 1\], member-1 \[\]"):
        kill_member("kill-member", group, partitions=2).start()
    assert group.crashed == []
