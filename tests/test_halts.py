"""A broker that stopped serving by itself (`kchaos.nemesis.halts`): counted halted only once it has been
running, silent and held by no fault for the grace, and forgotten once it answers again, so the nemesis
stops waiting for a heal that cannot come and waits again for one that can. Stand-in clusters, no Kafka."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from kchaos.harness.metadata import MetadataView
from kchaos.nemesis.halts import HaltWatch


def test_a_running_node_silent_and_unheld_past_the_grace_is_halted() -> None:
    watch = HaltWatch(grace_s=60)
    running, answering = (1, 2, 3), (2, 3)
    assert watch.halted(running, answering, held=(), now=0) == []
    assert watch.halted(running, answering, held=(), now=59) == []
    assert watch.halted(running, answering, held=(), now=60) == [1]


def test_a_node_held_by_a_fault_stopped_or_answering_starts_over() -> None:
    watch = HaltWatch(grace_s=60)
    watch.halted((1, 2, 3), (2, 3), held=(), now=0)
    watch.halted((1, 2, 3), (2, 3), held=(1,), now=30)  # a kill took it: its silence is the fault's
    assert watch.halted((1, 2, 3), (2, 3), held=(), now=80) == [], "silent again only since 80"
    assert watch.halted((1, 2, 3), (2, 3), held=(), now=140) == [1]
    assert watch.halted((1, 2, 3), (1, 2, 3), held=(), now=150) == [], "restarted, it answers"
    assert watch.halted((2, 3), (2, 3), held=(), now=300) == [], "a node that is not running is a fault's"


def stand_in(answering: tuple[int, ...]) -> Any:
    nodes = {n: SimpleNamespace(state="running") for n in (1, 2, 3)}
    views = [MetadataView(n, frozenset({1, 2, 3}), {}) for n in answering]
    return SimpleNamespace(nodes=nodes, metadata=SimpleNamespace(views=lambda topic: views))


def test_the_cluster_cannot_heal_once_a_node_halted() -> None:
    watch = HaltWatch(grace_s=0)
    assert watch.cannot_heal(stand_in((1, 2, 3)), "t", held=()) is False
    assert watch.cannot_heal(stand_in((2, 3)), "t", held=()) is True
    assert watch.cannot_heal(stand_in((2, 3)), "t", held=(1,)) is False
