"""A consumer group under churn (`churn-members`): members killed, started again and restarted every few
seconds while the fault holds, on a schedule drawn with the seed, as an autoscaler and crashing pods treat
a group. The brokers are untouched: what is tested is the group protocol and the commits around each
rebalance, under either protocol and either commit mode."""

from __future__ import annotations

from dataclasses import dataclass

from kchaos.model.fault_definition import FaultDefinition, FaultSpec, RunShape
from kchaos.model.fault_options import Number, SpecError
from kchaos.model.fault_record import FaultRecord
from kchaos.model.fault_targets import MEMBER_WORKLOADS
from kchaos.model.faults.clients import CLIENT_CRASH

ORDER = 111

#: What one churn step does to a member: `kill` (it stays down, the group one smaller), `start` (a member
#: that was down joins again, the group one larger), `restart` (killed and started again at once: a bounce).
CHURN_ACTIONS = ("kill", "start", "restart")


def check_churn(spec: FaultSpec, shape: RunShape) -> None:
    """Refuses churn where the workload runs no consumer group, or a group of one (a member killed has no
    one to hand its partitions to)."""
    workload, members = shape.workload, shape.consumers
    if MEMBER_WORKLOADS.get(workload) is None or members < 2:
        raise SpecError(
            f"{spec}: churns a consumer group's members, and --workload {workload} with --consumers "
            f"{members} runs no group of two or more; use --workload {' or '.join(MEMBER_WORKLOADS)} with "
            "--consumers 2 or more (the group's size)"
        )


@dataclass(frozen=True)
class ChurnRecord(FaultRecord):
    """What churn records: each step (`[seconds since the fault started, action, member]`), how many of each
    action, and the members started again when it stopped."""

    every: int | None = None
    steps: tuple[tuple[float, str, str], ...] | None = None
    counts: dict[str, int] | None = None
    started_on_stop: tuple[str, ...] | None = None
    error: str | None = None


DEFINITIONS = (
    FaultDefinition(
        "churn-members",
        CLIENT_CRASH,
        (
            Number(
                "every",
                "3",
                1,
                300,
                "seconds between churn steps on average (each drawn with the seed from half to one and a "
                "half times this)",
            ),
        ),
        needs_group_members=True,
        check_shape=check_churn,
    ),
)
