"""The KRaft controller quorum changed (KIP-853): a voter taken out (`remove-voter`), a spare controller
made a voter (`add-voter`)."""

from __future__ import annotations

from dataclasses import dataclass

from kchaos.model.fault_definition import FaultDefinition, FaultKind, FaultSpec, RunShape
from kchaos.model.fault_options import SpecError
from kchaos.model.fault_record import FaultRecord
from kchaos.model.fault_targets import FIRST_CONTROLLER_ID, OneNode, node_ids

ORDER = 70
#: Slate: a voter taken out of the KRaft quorum and put back. No broker is hit and no partition's
#: leadership moves with it, so it excuses nothing.
QUORUM = FaultKind("quorum", "none", "#6b6ecf")

#: The releases that change their voters, and why none before.
DYNAMIC_QUORUMS = ((3, 9), "KRaft quorums change their voters (KIP-853) from 3.9")


def check_voter(spec: FaultSpec, shape: RunShape) -> None:
    """Refuses `remove-voter` without a KRaft quorum of two voters or more (the quorum would be left with
    none), and, beside dedicated controllers, aimed at a broker (it has no vote to take)."""
    if shape.metadata != "kraft" or (not shape.controllers and shape.brokers < 2):
        raise SpecError(
            f"{spec}: takes a voter out of the KRaft quorum, which needs a KRaft cluster of 2 voters or more "
            "(with combined nodes, --brokers 2 or more; or --controllers)"
        )
    if shape.controllers == 1:
        raise SpecError(
            f"{spec}: takes a voter out of the KRaft quorum, and --controllers 1 is its only voter: the "
            "quorum would be left with none; use --controllers 2 or more (3 keeps a majority)"
        )
    target = spec.option("target")
    named = target == "controller" or any(n >= FIRST_CONTROLLER_ID for n in node_ids(target))
    if shape.controllers and not named:
        last = FIRST_CONTROLLER_ID + shape.controllers - 1
        raise SpecError(
            f"{spec}: target={target} is a broker, and with --controllers {shape.controllers} only the "
            f"dedicated controllers vote; use target=controller or a node id from {FIRST_CONTROLLER_ID} to "
            f"{last}"
        )


def check_spare_controller(spec: FaultSpec, shape: RunShape) -> None:
    """Refuses `add-voter` without a spare controller to make a voter; the fix names only what the run
    lacks (a user who passed --controllers 3 is not told to pass it)."""
    if shape.metadata != "kraft" or not shape.controllers or shape.spare_controllers < 1:
        missing = "--spare-controllers 1" if shape.controllers else "--controllers 3 --spare-controllers 1"
        raise SpecError(
            f"{spec}: makes a spare controller a voter of the KRaft quorum, and the run has none; pass "
            f"{missing} (KRaft)"
        )


@dataclass(frozen=True)
class QuorumRecord(FaultRecord):
    """What a quorum change records: the voter's directory id and what each tool answered (the upgrade
    to a dynamic quorum, the removal, the addition)."""

    directory_id: str | None = None
    upgraded: str | None = None
    removed: str | None = None
    added_back: str | None = None
    added: str | None = None


DEFINITIONS = (
    FaultDefinition(
        "remove-voter",
        QUORUM,
        (OneNode("target", "controller", why="takes one voter out of the KRaft quorum"),),
        since=DYNAMIC_QUORUMS,
        check_shape=check_voter,
    ),
    FaultDefinition("add-voter", QUORUM, since=DYNAMIC_QUORUMS, check_shape=check_spare_controller),
)
