"""Faults of the ZooKeeper node (ZooKeeper mode): its process down or frozen, brokers cut off from it.

In ZooKeeper mode a broker is alive to the cluster exactly as long as its ZooKeeper session, and the
controller is whichever broker holds the `/controller` znode. So the two ways to hurt ZooKeeper test
different promises:

- `kill`/`stop`/`pause` with `target=zookeeper` take ZooKeeper away from everyone. Brokers keep serving
  from what they know (no leader can change, no ISR change can be committed), and when ZooKeeper is back
  their sessions carry on, unless one expired meanwhile.
- `cut-zookeeper:target=...` cuts chosen brokers off from ZooKeeper and from nothing else: their sessions
  expire, the controller (or, when the controller was cut off, a newly elected one: the controller failover
  of seed 002) fences them and moves their leaderships, while they still reach the other brokers and
  clients, each still believing what it last knew.
"""

from __future__ import annotations

from typing import ClassVar

from kchaos.harness.cluster_error import ClusterError
from kchaos.harness.zookeeper import ZooKeeperNode
from kchaos.model.fault_record import FaultRecord
from kchaos.model.faults.zookeeper import ZooKeeperRecord
from kchaos.nemesis.fault import Carriers, Fault, FaultUnsupported, describe_nodes
from kchaos.nemesis.network import NetworkFault


def zookeeper_of(fault: Fault) -> ZooKeeperNode:
    """The cluster's ZooKeeper node; FaultUnsupported on a KRaft cluster (the configuration refuses that
    before a run starts, so this guards only direct use)."""
    if fault.cluster.zookeeper is None:
        raise FaultUnsupported(f"{fault.key}: a KRaft cluster has no ZooKeeper; the fault is skipped")
    return fault.cluster.zookeeper


class ZooKeeperOutage(Fault):
    """`kill`, `stop` or `pause` aimed at the ZooKeeper node: SIGKILL, SIGTERM or freeze, undone on stop."""

    RECORD = ZooKeeperRecord

    VERBS: ClassVar[dict[str, str]] = {"kill": "SIGKILL", "stop": "SIGTERM", "pause": "pause"}

    def start(self) -> FaultRecord:
        zookeeper = zookeeper_of(self)
        self.remember_leader()
        self.active = True
        {"kill": zookeeper.kill, "stop": zookeeper.terminate, "pause": zookeeper.pause}[self.name]()
        return self.record(leader_before=self.leader_before, zookeeper=True)

    def stop(self) -> FaultRecord:
        if self.active:
            zookeeper_of(self).restart()
            self.active = False
        return self.record()

    def effect_reached(self) -> bool:
        """ZooKeeper no longer answers, and the brokers still name the partition's leader: without
        ZooKeeper, Kafka keeps serving from what it knows."""
        if zookeeper_of(self).answers():
            return False
        return self.cluster.metadata.leader_of(self.topic, self.partition) >= 0

    def healed(self) -> bool:
        """ZooKeeper answers, a controller is elected again (one whose session expired meanwhile resigned),
        and every replica is back in sync."""
        if not zookeeper_of(self).answers():
            return False
        try:
            self.cluster.metadata.active_controller()
        except ClusterError:  # no running broker names one yet
            return False
        return super().healed()

    def describe(self) -> str:
        return f"{self.VERBS[self.name]} the ZooKeeper node (target=zookeeper); bring back on stop"


class CutZooKeeper(NetworkFault):
    """The targets lose ZooKeeper and nothing else: their sessions expire and the rest fence them."""

    def apply(self) -> None:
        zookeeper_of(self)
        self.nodes = self.resolve(self.spec.option("target"))
        self.sides = [list(self.nodes), self.others(self.nodes)]
        for node_id in self.nodes:
            self.cuts.cut_from_zookeeper(node_id)

    def effect_reached(self) -> bool:
        """The brokers that kept ZooKeeper fenced the cut-off ones, and moved any leadership they held (a
        cut-off controller is replaced first). With every broker cut off nobody can fence anyone: the
        brokers keep serving, as with ZooKeeper down."""
        if not self.sides[1]:
            return self.cluster.metadata.leader_of(self.topic, self.partition) >= 0
        return self.fenced_by_majority(self.nodes)

    def describe(self) -> str:
        who = describe_nodes(self.nodes) if self.nodes else self.spec.option("target")
        return f"cut {who} ({self.spec.option('target')}) off from ZooKeeper; every other link stays"


#: The faults this module carries out (`kchaos.model.faults`), by name and aim.
CARRIES_OUT: Carriers = {
    ("cut-zookeeper", "nodes"): CutZooKeeper,
    ("kill", "zookeeper"): ZooKeeperOutage,
    ("stop", "zookeeper"): ZooKeeperOutage,
    ("pause", "zookeeper"): ZooKeeperOutage,
}
