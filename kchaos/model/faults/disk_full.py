"""A node's disk full (`disk-full`): the library images kchaos builds preload into the broker fails every
write under its log dirs with ENOSPC."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from kchaos.model.fault_definition import FaultDefinition, FaultKind
from kchaos.model.fault_record import FaultRecord
from kchaos.model.fault_targets import Target

ORDER = 90
#: Dark orange: a node's disk full. Kafka takes the log dir offline and, with none left, halts the broker
#: (KIP-112): to every rule it is a crash, the node down and its leaderships moved.
DISK_FULL = FaultKind("disk-full", "crash", "#e6550d")


@dataclass(frozen=True)
class DiskFullRecord(FaultRecord):
    """What a full disk records: the first write each node's library refused, and what each broker said
    about its log dirs."""

    leader_before: int | None = None
    refused_write: Mapping[str, str | None] | None = None
    broker_said: Mapping[str, tuple[str, ...]] | None = None
    registrations_expired: bool | None = None


DEFINITIONS = (
    FaultDefinition("disk-full", DISK_FULL, (Target("target", "leader"),), needs_kchaos_image=True),
)
