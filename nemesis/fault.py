"""What every fault is: a small object with explicit state that starts, stops, and knows its effect.

`start()` and `stop()` do the deed; `effect_reached()` and `healed()` say, from Kafka's own metadata, whether
the cluster has reacted, so a schedule can wait for the reaction instead of guessing how long it takes.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar

from harness.cluster import KafkaCluster


class FaultError(RuntimeError):
    """A fault could not be applied or removed."""


class Fault(ABC):
    """One fault instance. `key` (e.g. `isolate-leader#2`) ties its start and stop events together."""

    name: ClassVar[str]
    kind: ClassVar[str]  # "crash" | "partition": what the guarantee oracle reasons about

    def __init__(self, cluster: KafkaCluster, topic: str, partition: int, key: str) -> None:
        self.cluster = cluster
        self.topic = topic
        self.partition = partition
        self.key = key
        self.nodes: tuple[int, ...] = ()
        self.active = False

    @abstractmethod
    def start(self) -> dict[str, Any]:
        """Applies the fault; returns what was done, for the history."""

    @abstractmethod
    def stop(self) -> dict[str, Any]:
        """Removes the fault. Idempotent: a second call, or a call after a failed start, does nothing."""

    @abstractmethod
    def effect_reached(self) -> bool:
        """True once Kafka has reacted to the fault as the scenario expects (e.g. another replica leads)."""

    @abstractmethod
    def describe(self) -> str:
        """One sentence for the history and the report."""

    def healed(self) -> bool:
        """True once the cluster is whole again: every node answers and every replica is back in sync."""
        return self.cluster.is_recovered(self.topic)

    def detail(self, **extra: Any) -> dict[str, Any]:
        return {"kind": self.kind, "nodes": list(self.nodes), "description": self.describe(), **extra}

    def _current_leader(self) -> int:
        leader = self.cluster.leader_of(self.topic, self.partition)
        if leader < 0:
            raise FaultError(
                f"{self.key}: the running nodes do not agree on a leader of partition {self.partition}"
            )
        return leader


class LeaderFault(Fault):
    """A fault aimed at the current leader of one partition; it has bitten once another node leads."""

    def _target_leader(self) -> int:
        self.nodes = (self._current_leader(),)
        return self.nodes[0]

    def effect_reached(self) -> bool:
        if self.cluster.size == 1:
            return True
        target = self.nodes[0]
        others = [n for n, node in self.cluster.nodes.items() if n != target and node.state == "running"]
        if not others:
            return False
        leader = self.cluster.leader_of(self.topic, self.partition, among=others)
        return leader >= 0 and leader != target

    def target_text(self) -> str:
        who = f"node {self.nodes[0]}" if self.nodes else "the leader"
        return f"{who}, leader of {self.topic}-{self.partition}"
