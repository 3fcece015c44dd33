"""One file of one stopped replica damaged (`corrupt`), through Docker's archive API; what is damaged and how
is `kchaos.model.corruption`'s."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kchaos.model.corruption import BYTES_RANGE, CORRUPT_FILES, HOWS, METADATA_FILES
from kchaos.model.fault_definition import FaultDefinition, FaultKind, FaultSpec, RunShape
from kchaos.model.fault_options import Choice, Number, SpecError
from kchaos.model.fault_record import FaultRecord
from kchaos.model.fault_targets import OneNode

ORDER = 100
#: Plum: one file of one stopped replica damaged, then the node started again. It is killed, so leadership
#: may move (a failover); no rule excuses a loss for it: Kafka checks each batch's CRC when it recovers a
#: crashed broker's log, truncates at the damage and fetches the rest from the leader, so with acks=all and
#: another in-sync replica nothing acknowledged may be lost. It hits one node: damage to every replica
#: destroys what replication keeps, which no promise covers, and treating it as a power loss would excuse
#: what it did not do.
CORRUPT = FaultKind("corrupt", "failover", "#7b4173")


def check_damaged_file(spec: FaultSpec, shape: RunShape) -> None:
    """Refuses damage to the metadata log or `quorum-state` of a ZooKeeper-mode cluster (it has neither),
    and damage to the only replica of a partition (with one replica, that is every replica)."""
    file = spec.option("file")
    if file in METADATA_FILES and shape.metadata != "kraft":
        raise SpecError(
            f"{spec}: file={file} is a KRaft file, and a ZooKeeper-mode cluster has none; use --metadata "
            "kraft, or file=segment, index, timeindex or leader-epoch-checkpoint"
        )
    if shape.replication_factor < 2:
        raise SpecError(
            f"{spec}: with --replication-factor {shape.replication_factor} the damaged replica is every "
            "replica of the partition, whose damage Kafka promises nothing about; use --replication-factor "
            "2 or more"
        )


@dataclass(frozen=True)
class CorruptRecord(FaultRecord):
    """What damage to a replica records: which file, where, how many bytes and the checksums around it,
    and how the broker came back: in sync after how long, or refusing the file."""

    leader_before: int | None = None
    corruption: Mapping[str, Any] | None = None
    registrations_expired: bool | None = None
    back_in_sync: bool | None = None
    back_after_s: float | None = None
    broker_said: tuple[str, ...] | None = None
    outcome: str | None = None
    original_put_back: bool | None = None


DEFINITIONS = (
    FaultDefinition(
        "corrupt",
        CORRUPT,
        (
            OneNode(
                "target",
                "followers",
                why="damages one replica (damage to every replica destroys what replication keeps, which "
                "Kafka promises nothing about)",
            ),
            Choice(
                "file",
                "segment",
                CORRUPT_FILES,
                "the fault partition's last segment, its indexes or its leader-epoch checkpoint; KRaft's "
                "metadata log or quorum-state",
            ),
            Choice("how", "flip", HOWS, "bits inverted, the file cut, or bytes zeroed"),
            Number("bytes", "64", *BYTES_RANGE, "bytes of one file flipped, zeroed or cut off by corrupt"),
        ),
        check_shape=check_damaged_file,
    ),
)
