"""`churn-members` against a scripted group (no cluster): steps drawn with the seed, a kill always leaving
two members up, every member up again on stop, and refused where there is no group to churn. The run on real
brokers is tests/cluster/test_churn.py."""

from __future__ import annotations

import random
import threading
import time
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import cast

import pytest

from kchaos.harness.cluster import KafkaCluster
from kchaos.model.config import ConfigError, load_config
from kchaos.model.fault_spec import parse_spec
from kchaos.nemesis.churn import ChurnMembers
from kchaos.nemesis.members import GroupMembers

NAMES = ["member-0", "member-1", "member-2", "member-3"]


@dataclass
class LiveGroup:
    """Members whose crashes and restarts are tracked, and that fail the test if one is crashed while
    down or started while up."""

    names: list[str]
    up: set[str] = field(default_factory=set)
    given: dict[str, int] = field(default_factory=dict)
    calls: list[tuple[str, str]] = field(default_factory=list)
    fewest_up: int = 99
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self.up = set(self.names)

    def member_names(self) -> list[str]:
        return list(self.names)

    def crash(self, process: str) -> frozenset[int]:
        with self.lock:
            assert process in self.up, f"crashed {process}, which was down"
            self.up.discard(process)
            self.fewest_up = min(self.fewest_up, len(self.up))
            self.calls.append(("crash", process))
            for other in self.up:  # the others are given its partitions
                self.given[other] = self.given.get(other, 0) + 1
        return frozenset()

    def restart(self, process: str) -> bool:
        with self.lock:
            assert process not in self.up, f"started {process}, which was up"
            self.up.add(process)
            self.calls.append(("restart", process))
        return True

    def assignment(self, process: str) -> frozenset[int]:
        return frozenset({0}) if process in self.up else frozenset()

    def assignments(self, process: str) -> int:
        return self.given.get(process, 0)

    def handed(self, process: str) -> int:
        return 1


class QuickChurn(ChurnMembers):
    """Churn whose waits are a twentieth of the drawn ones: the same draws, in a unit test's time."""

    def next_wait(self) -> float:
        return super().next_wait() / 20


def churn(group: LiveGroup, seed: int) -> ChurnMembers:
    cluster = SimpleNamespace(metadata=SimpleNamespace(is_recovered=lambda topic: True))
    fault = QuickChurn(
        cast(KafkaCluster, cluster), "t", 0, "churn-members#1", parse_spec("churn-members:every=1"),
        random.Random(seed),
    )  # fmt: skip
    fault.use_readers(group)
    return fault


def run_for(seconds: float, seed: int) -> tuple[LiveGroup, dict[str, object], bool, bool]:
    group = LiveGroup(list(NAMES))
    assert isinstance(group, GroupMembers)
    fault = churn(group, seed)
    fault.start()
    time.sleep(seconds)
    reached = fault.effect_reached()
    record = fault.stop().to_detail()
    return group, record, reached, fault.healed()


def test_churn_kills_starts_and_restarts_members_keeps_two_up_and_brings_every_one_back() -> None:
    group, record, reached, healed = run_for(0.5, seed=3)
    steps = cast(list[list[object]], record["steps"])
    assert len(steps) >= 3, record
    up = set(NAMES)
    for _, action, member in steps:
        if action == "kill":
            up.discard(str(member))
            assert len(up) >= 2, steps  # a kill leaves two up; a bounce only takes one down for a moment
        elif action == "start":
            up.add(str(member))
    assert group.fewest_up >= 1, group.calls
    assert group.up == set(NAMES), "every member is up again after stop"
    counts = cast(dict[str, int], record["counts"])
    assert sum(counts.values()) == len(steps)
    assert reached and healed
    # Each step is in the members' calls: a kill a crash, a start a restart, a restart both.
    expected = []
    for _, action, member in steps:
        expected += {"kill": [("crash", member)], "start": [("restart", member)]}.get(
            str(action), [("crash", member), ("restart", member)]
        )
    started_on_stop = [("restart", m) for m in cast(list[str], record["started_on_stop"])]
    assert group.calls == expected + started_on_stop


def test_the_same_seed_draws_the_same_steps() -> None:
    first = cast(list[list[object]], run_for(0.3, seed=11)[1]["steps"])
    second = cast(list[list[object]], run_for(0.3, seed=11)[1]["steps"])
    shared = min(len(first), len(second))
    assert shared >= 1
    assert [step[1:] for step in first[:shared]] == [step[1:] for step in second[:shared]]


@pytest.mark.parametrize(
    ("values", "says"),
    [
        ({"workload": "sends"}, "--workload sends with --consumers 1 runs no group of two or more"),
        ({"workload": "group", "consumers": 1}, "use --workload group or eos with --consumers 2 or more"),
        (
            {"workload": "group", "consumers": 3, "nemesis": "churn-members:every=0"},
            "every must be from 1 to 300",
        ),
    ],
)
def test_churn_without_a_group_to_churn_is_refused_before_anything_starts(
    values: dict[str, object], says: str
) -> None:
    with pytest.raises(ConfigError) as refused:
        load_config(**{"nemesis": "churn-members", **values})
    assert says in str(refused.value)


def test_members_the_workload_no_longer_takes_back_leave_nothing_to_heal() -> None:
    """Once the workload has stopped, a member down is not started again (the group is gone); the fault
    still heals with the cluster, and its stop row says which it started."""

    class StoppedGroup(LiveGroup):
        def restart(self, process: str) -> bool:
            return False

    group = StoppedGroup(list(NAMES))
    fault = churn(group, seed=3)
    fault.start()
    time.sleep(0.3)
    record = fault.stop().to_detail()
    assert record.get("started_on_stop", []) == [] and fault.healed()
