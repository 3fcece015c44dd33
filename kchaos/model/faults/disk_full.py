"""A node's disk full (`disk-full`): the library images kchaos builds preload into the broker fails every
write under its log dirs with ENOSPC."""

from __future__ import annotations

from kchaos.model.fault_definition import FaultDefinition, FaultKind
from kchaos.model.fault_targets import Target

ORDER = 90
#: Dark orange: a node's disk full. Kafka takes the log dir offline and, with none left, halts the broker
#: (KIP-112): to every rule it is a crash, the node down and its leaderships moved.
DISK_FULL = FaultKind("disk-full", "crash", "#e6550d")

DEFINITIONS = (
    FaultDefinition("disk-full", DISK_FULL, (Target("target", "leader"),), needs_kchaos_image=True),
)
