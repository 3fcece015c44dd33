"""A broker's disk replaced (`replace-disk`): the broker dies with its disk, and comes back on a new, empty
one, as after a swap. In ZooKeeper mode the broker rewrites its own identity; on KRaft the new storage is
formatted again with the cluster's id, as an operator does, and `disk=all` takes the metadata log with it
(a combined node's one disk), `disk=data` leaves it (a metadata.log.dir kept on a disk of its own)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from kchaos.model.fault_definition import FaultDefinition, FaultKind
from kchaos.model.fault_options import Choice
from kchaos.model.fault_targets import Target
from kchaos.model.faults.process import ProcessRecord

ORDER = 92
#: Dark red-brown: a node's disk replaced. While it holds the node is down, as after a crash, and it
#: comes back with nothing: to every rule a crash, the node down and its leaderships moved; once back it
#: is no in-sync replica until it has fetched everything again.
DISK_REPLACED = FaultKind("disk-replaced", "crash", "#843c39")


@dataclass(frozen=True)
class ReplaceDiskRecord(ProcessRecord):
    """What a disk swap records beside a crash's: which disk, and the files and bytes each node's start
    removed."""

    disk: str | None = None
    removed: Mapping[str, tuple[int, int] | None] | None = None


DEFINITIONS = (
    FaultDefinition(
        "replace-disk",
        DISK_REPLACED,
        (
            Target("target", "leader"),
            Choice(
                "disk",
                "all",
                ("all", "data"),
                "all: every file of its log dirs, the KRaft metadata log among them; data: all but the "
                "metadata log and the storage's identity, as a data disk swapped beside a metadata disk",
            ),
        ),
        needs_kchaos_image=True,
    ),
)
