"""A replica moved to another broker with Kafka's reassignment tool (`reassign`), as an operator moves one
off a broker while writes go on."""

from __future__ import annotations

from dataclasses import dataclass

from kchaos.model.fault_definition import FaultDefinition, FaultKind, FaultSpec, RunShape
from kchaos.model.fault_options import Choice, Flag, SpecError
from kchaos.model.fault_record import FaultRecord

ORDER = 50
#: Tan: a replica moved to another broker; leadership moves when the leader's replica does.
REASSIGN = FaultKind("reassign", "failover", "#c49c94")

#: The releases whose reassignment tool the faults that move replicas use, and why none before.
REASSIGNMENT_TOOL = ((2, 5), "the reassignment tool takes --bootstrap-server (KIP-455) from 2.5")
#: Which replica `reassign` moves (of the fault partition) and `add-broker` (of every partition).
REASSIGNED_REPLICAS = ("follower", "leader")
REPLICA = Choice(
    "replica",
    "follower",
    REASSIGNED_REPLICAS,
    "which replica moves: reassign's of the fault partition, add-broker's of every partition of the topic",
)


def check_room(spec: FaultSpec, shape: RunShape) -> None:
    """Refuses a reassignment whose only replica can neither move nor be removed and added back."""
    if shape.replication_factor < 2 and shape.brokers <= shape.replication_factor:
        raise SpecError(
            f"{spec}: reassign moves a replica onto a broker that holds none of the partition, or, when "
            "every broker holds one, removes a replica and adds it back; with --brokers "
            f"{shape.brokers} and --replication-factor {shape.replication_factor} the only replica can do "
            "neither: raise --brokers or --replication-factor to 2"
        )


@dataclass(frozen=True)
class ReassignRecord(FaultRecord):
    """What a reassignment records: the replicas before and after, each step submitted, which replica
    went and which came, and whether the incoming broker was killed mid-way."""

    leader_before: int | None = None
    replicas_before: tuple[int, ...] | None = None
    replicas_after: tuple[int, ...] | None = None
    steps: tuple[tuple[int, ...], ...] | None = None
    outgoing: int | None = None
    incoming: int | None = None
    interrupted: bool | None = None


DEFINITIONS = (
    FaultDefinition(
        "reassign",
        REASSIGN,
        (REPLICA, Flag("interrupt", "false")),
        since=REASSIGNMENT_TOOL,
        check_shape=check_room,
    ),
)
