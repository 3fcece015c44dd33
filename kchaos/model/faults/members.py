"""A consumer-group member crashed (`kill-member`): the harness's own group members (`--workload group`
or `eos`), a dead client process as far as the coordinator can tell."""

from __future__ import annotations

from dataclasses import dataclass

from kchaos.model.fault_definition import FaultDefinition, FaultSpec, RunShape
from kchaos.model.fault_options import SpecError
from kchaos.model.fault_record import FaultRecord
from kchaos.model.fault_targets import MEMBER_WORKLOADS, MemberTarget
from kchaos.model.faults.clients import CLIENT_CRASH

ORDER = 110


def check_members(spec: FaultSpec, shape: RunShape) -> None:
    """Refuses a member fault whose workload runs no consumer group, or whose target is not one of its
    members (named as that workload names them)."""
    workload, members = shape.workload, shape.consumers
    name = MEMBER_WORKLOADS.get(workload)
    if name is None or members < 1:
        raise SpecError(
            f"{spec}: kills a consumer-group member, and --workload {workload} runs no consumer group; use "
            f"--workload {' or '.join(MEMBER_WORKLOADS)} (with --consumers 1 or more), or another fault"
        )
    if members < 2:
        raise SpecError(
            f"{spec}: a crashed member's partitions go to another member, and --consumers {members} runs "
            "one member alone; use --consumers 2 or more"
        )
    target = spec.option("target")
    if target != "random" and target not in {name(n) for n in range(members)}:
        raise SpecError(
            f"{spec}: --workload {workload} with --consumers {members} has members {name(0)} to "
            f"{name(members - 1)}; name one of them or use target=random"
        )


@dataclass(frozen=True)
class MemberRecord(FaultRecord):
    """What a member crash records: the member, the partitions it held, and whether it came back."""

    member: str | None = None
    partitions: tuple[int, ...] | None = None
    restarted: bool | None = None


DEFINITIONS = (
    FaultDefinition(
        "kill-member",
        CLIENT_CRASH,
        (MemberTarget("target", "random"),),
        needs_group_members=True,
        check_shape=check_members,
    ),
)
