"""Faults of ZooKeeper mode: the ZooKeeper node down or frozen (`kill`, `stop`, `pause` with
`target=zookeeper`), and brokers cut off from it (`cut-zookeeper`)."""

from __future__ import annotations

from dataclasses import dataclass

from kchaos.model.fault_definition import FaultDefinition, FaultKind
from kchaos.model.fault_record import FaultRecord
from kchaos.model.fault_targets import Target
from kchaos.model.faults.network import PARTITION

ORDER = 25
#: Orange: the ZooKeeper node down or frozen. Brokers keep serving, but a session that expires meanwhile
#: moves the controller and the leaders of its broker, so leadership may move.
ZOOKEEPER = FaultKind("zookeeper", "failover", "#ff7f0e")


@dataclass(frozen=True)
class ZooKeeperRecord(FaultRecord):
    """What a fault of the ZooKeeper node records: the partition's leader when it struck."""

    leader_before: int | None = None
    zookeeper: bool | None = None


DEFINITIONS = (
    FaultDefinition("cut-zookeeper", PARTITION, (Target("target", "controller"),), needs_zookeeper=True),
)
