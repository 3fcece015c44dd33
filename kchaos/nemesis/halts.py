"""Brokers that stopped serving by themselves, which no heal brings back.

Kafka halts a broker on purpose in some states: before 0.11, a follower whose high watermark is past its
new leader's log end logs `FATAL ... Exiting because log truncation is not allowed` and shuts down (KIP-101's
loss, noticed), and its JVM may hang on instead of exiting, so its container still runs. No fault holds
it, so no fault's end restarts it, and every later wait for the cluster to heal would last its whole
timeout: a hunt's run that met one took 12 minutes instead of 4. `HaltWatch` says when a running node has
not answered for `grace_s` seconds while no fault held it, so the nemesis stops waiting for a heal that
cannot come; a later fault that restarts the node (a kill) makes it answer again, and the watch forgets it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Collection, Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kchaos.harness.cluster import KafkaCluster

log = logging.getLogger(__name__)

#: How long a running, unheld node may stay silent before it counts as halted: more than a restarted
#: broker takes to answer (its old ZooKeeper session expiring, then its start) on two busy cores.
GRACE_S = 60.0


class HaltWatch:
    """When each running node, held by no fault, last began to be silent; pure, fed what was seen."""

    def __init__(self, grace_s: float = GRACE_S) -> None:
        self.grace_s = grace_s
        self.silent_since: dict[int, float] = {}

    def halted(
        self, running: Collection[int], answering: Collection[int], held: Collection[int | str], now: float
    ) -> list[int]:
        """The nodes that have been running, silent and unheld for `grace_s` or longer at `now`; a node that
        answers, is held, or is not running starts over."""
        for node in list(self.silent_since):
            if node not in running or node in answering or node in held:
                del self.silent_since[node]
        for node in running:
            if node not in answering and node not in held:
                self.silent_since.setdefault(node, now)
        return sorted(node for node, since in self.silent_since.items() if now - since >= self.grace_s)

    def cannot_heal(self, cluster: KafkaCluster, topic: str, held: Collection[int | str]) -> bool:
        """Asks the cluster which nodes run and answer now; True (logged) when one has halted."""
        running = [n for n, node in cluster.nodes.items() if node.state == "running"]
        answering = {view.answered_by for view in cluster.metadata.views(topic)}
        now = time.monotonic()
        halted = self.halted(running, answering, held, now)
        if halted:
            silent = {node: self.silent_since[node] for node in halted}
            log.warning("not waiting for a heal: %s stopped answering by itself", halted_text(silent, now))
        return bool(halted)


def halted_text(nodes: Mapping[int, float], now: float) -> str:
    """The nodes a watch found halted, for the log: `node 1 (silent for 75 s)`."""
    return ", ".join(f"node {node} (silent for {now - since:.0f} s)" for node, since in sorted(nodes.items()))
