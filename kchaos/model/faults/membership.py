"""Brokers joining and leaving the cluster: a spare broker added and given replicas (`add-broker`), a
broker drained and decommissioned (`remove-broker`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from kchaos.model.fault_definition import FaultDefinition, FaultKind, FaultSpec, RunShape
from kchaos.model.fault_options import SpecError
from kchaos.model.fault_record import FaultRecord
from kchaos.model.fault_targets import FIRST_CONTROLLER_ID, OneNode, node_ids
from kchaos.model.faults.reassign import REASSIGNMENT_TOOL, REPLICA

ORDER = 60
#: Rose: a broker joined or left the cluster, its replicas moved onto or off it by reassignment, a drained
#: broker shut down in good order. Leadership moves with a moved leader, nothing else.
MEMBERSHIP = FaultKind("membership", "failover", "#e7969c")


def check_spare(spec: FaultSpec, shape: RunShape) -> None:
    """Refuses `add-broker` without a spare broker to start."""
    if shape.spare_brokers < 1:
        raise SpecError(
            f"{spec}: starts a spare broker the cluster was started with, and the run has none; pass "
            "--spare-brokers 1 (or more)"
        )


def check_drain(spec: FaultSpec, shape: RunShape) -> None:
    """Refuses `remove-broker` aimed at a dedicated controller (it holds no replica to drain), where the
    drained broker's replicas have nowhere to go (every other broker holds one of the partition: the run's
    topic with its replication factor, the internal topics with up to 3) and no spare can take them, or
    where, with KRaft, shutting a combined node down leaves its quorum without a majority."""
    target = spec.option("target")
    if shape.controllers and (
        target == "controller" or any(n >= FIRST_CONTROLLER_ID for n in node_ids(target))
    ):
        raise SpecError(
            f"{spec}: target={target} is a dedicated controller (--controllers {shape.controllers}), which "
            "holds no replica to drain; name a broker: leader, followers, random or a node id from 1 to "
            f"{shape.brokers}"
        )
    internal = min(3, shape.brokers)
    if shape.spare_brokers < 1 and shape.brokers - 1 < max(shape.replication_factor, internal):
        raise SpecError(
            f"{spec}: the drained broker's replicas need brokers that hold none of their partition, and with "
            f"--brokers {shape.brokers}, --replication-factor {shape.replication_factor} (internal topics "
            f"{internal}) every other broker holds one; pass --spare-brokers 1 (a spare joins to take them) "
            "or raise --brokers"
        )
    if shape.metadata == "kraft" and not shape.controllers and shape.brokers < 3:
        raise SpecError(
            f"{spec}: with KRaft each of the {shape.brokers} node(s) is a controller too, and shutting one "
            "down leaves the quorum without a majority; use --brokers 3 or more, or --controllers"
        )


@dataclass(frozen=True)
class MembershipRecord(FaultRecord):
    """What a membership change records: the broker that joined or was removed, the members then, how
    many replicas it held, how far it got, and what each unregistration answered."""

    joined: int | None = None
    removed: int | None = None
    members: tuple[int, ...] | None = None
    holds: int | None = None
    stage: str | None = None
    unregistered: Mapping[str, str] | None = None


DEFINITIONS = (
    FaultDefinition("add-broker", MEMBERSHIP, (REPLICA,), since=REASSIGNMENT_TOOL, check_shape=check_spare),
    FaultDefinition(
        "remove-broker",
        MEMBERSHIP,
        (OneNode("target", "leader", why="drains and decommissions one broker"),),
        since=REASSIGNMENT_TOOL,
        check_shape=check_drain,
    ),
)
