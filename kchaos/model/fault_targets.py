"""Who a fault hits: the roles (`leader`, `followers`, `controller`, ...), node ids (`2`, `1+3`), the
ZooKeeper node, the run's coordinators, client processes and group members, as target options and the
checks every fault's target gets.

Targets are resolved against the cluster as it is when a fault starts (`kchaos.nemesis.fault`); what can be
known before, from the spec and the run's shape, is refused here. Pure (no Docker, no Kafka).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from kchaos.model.client_targets import CLIENTS_TARGET, MEMBER_NAMES, is_client_target
from kchaos.model.fault_definition import ZOOKEEPER_TARGET
from kchaos.model.fault_options import Aims, Option, SpecError, is_whole_number
from kchaos.model.workload_names import IN_A_GROUP, TRANSACTIONAL

#: The coordinators a run's clients talk to, and the workloads whose clients have one: the transaction
#: coordinator of the first transactional client (`kchaos.model.events.first_transactional_process`), the
#: group coordinator of the consumer group; an eos processor is both.
COORDINATOR_TARGETS: dict[str, tuple[str, ...]] = {
    "txn-coordinator": TRANSACTIONAL,
    "group-coordinator": IN_A_GROUP,
}

#: The workloads whose readers are consumer-group members, and how each names its members: the processes a
#: fault that kills a member (`kill-member`) can target, besides `random`.
#: (`kchaos.model.client_targets` owns the naming; a member is also a client process other faults can hit.)
MEMBER_WORKLOADS: dict[str, Callable[[int], str]] = MEMBER_NAMES
MEMBER_TARGET = re.compile(r"(member|processor)-(0|[1-9][0-9]*)")

#: The in-sync replica the controller elects next if the leader fails now (`kchaos.nemesis.fault`).
SUCCESSOR = "successor"
TARGETS = (
    "leader", "followers", SUCCESSOR, "controller", "controllers", "random", "minority", "majority", "all",
    *COORDINATOR_TARGETS,
)  # fmt: skip
#: The target that names every KRaft controller: the dedicated ones (`--controllers`), or else every node
#: that votes in the quorum.
CONTROLLERS_TARGET = "controllers"
#: The first node id of a dedicated KRaft controller (`--controllers`): 101, 102, ..., apart from the
#: brokers' 1..N and the spares after them, so a node's id says which it is.
FIRST_CONTROLLER_ID = 101
#: The targets that may name more than one node, which a fault that hits one node refuses.
MANY_NODES = ("minority", "majority", "all", "controllers")
#: The options that name nodes: a fault's `target`, a one-way cut's `from` and `to`.
NODE_OPTIONS = ("target", "from", "to")


@dataclass(frozen=True)
class Target(Option):
    """Nodes by role or id, and where the fault can aim there, the ZooKeeper node or client processes."""

    def check(self, fault: str, value: str, aims: Aims) -> None:
        check_target(fault, value, self.key, aims)

    def accepts(self, aims: Aims) -> str:
        return targets_text(aims) if self.key == "target" else "as target"


@dataclass(frozen=True)
class OneNode(Target):
    """A target of a fault that hits one node (`why` says what it does to it): a role or id that may name
    several is refused."""

    why: str = ""

    def check(self, fault: str, value: str, aims: Aims) -> None:
        super().check(fault, value, aims)
        check_one_node(fault, value, self.why)


@dataclass(frozen=True)
class MemberTarget(Option):
    """A consumer-group member: `random`, or one by its process name (`member-1`, `processor-0`)."""

    def check(self, fault: str, value: str, aims: Aims) -> None:
        if value != "random" and not MEMBER_TARGET.fullmatch(value):
            raise SpecError(
                f"{fault}: target {value!r} not understood; use random or a member's process name: member-N "
                "(--workload group) or processor-N (--workload eos), N from 0 to --consumers - 1"
            )

    def accepts(self, aims: Aims) -> str:
        return (
            "random, or a member's process name: "
            + " or ".join(
                f"{name(0)[:-1]}N (--workload {workload})" for workload, name in MEMBER_WORKLOADS.items()
            )
            + ", N from 0 to --consumers - 1"
        )


def check_one_node(fault: str, target: str, why: str) -> None:
    """Refuses a target that may name several nodes, for a fault that hits one (`why` says what it does)."""
    if target in MANY_NODES or "+" in target:
        raise SpecError(
            f"{fault}: target={target} may name several nodes, and {fault} {why}; use followers (one "
            "drawn), leader, controller, random or one node id like 2"
        )


def check_target(fault: str, target: str, key: str, aims: Aims) -> None:
    if target in TARGETS:
        return
    if is_client_target(target):
        if key == "target" and aims.takes_clients:
            return
        raise SpecError(
            f"{fault}: {key}={target} is a client process; client processes can be the target of "
            f"{', '.join(aims.client_faults)} (e.g. pause:target=producer-0, "
            f"kill:target={CLIENTS_TARGET})"
        )
    if target == ZOOKEEPER_TARGET:
        if key == "target" and aims.takes_zookeeper:
            return
        raise SpecError(
            f"{fault}: {key}=zookeeper not understood; the ZooKeeper node can be the target of "
            f"{', '.join(aims.zookeeper_faults)}, and cut-zookeeper cuts brokers off from it "
            "(cut-zookeeper:target=all is ZooKeeper isolated)"
        )
    parts = target.split("+")
    if all(is_whole_number(part) and int(part) > 0 for part in parts):
        if len({int(part) for part in parts}) < len(parts):
            raise SpecError(f"{fault}: target {target!r} names a node twice; name each node once")
        return
    raise SpecError(
        f"{fault}: target {target!r} not understood; use {', '.join(TARGETS)} or node ids like 2 or 1+3"
    )


def node_ids(target: str) -> tuple[int, ...]:
    """The node ids a target names (`1+3` -> 1, 3); none for a role such as `leader`, ZooKeeper, a group
    member or a client process."""
    if target in TARGETS or target == ZOOKEEPER_TARGET or MEMBER_TARGET.fullmatch(target):
        return ()
    if is_client_target(target):
        return ()
    return tuple(int(part) for part in target.split("+"))


def targets_text(aims: Aims) -> str:
    """What a target can be, for the help text and `kchaos faults`."""
    return (
        f"{', '.join(TARGETS)} or node ids like 2 or 1+3 (with --controllers the controllers are 101, 102, "
        "...; controllers is every KRaft controller, dedicated or not); in ZooKeeper mode also zookeeper "
        f"(the ZooKeeper node, for {', '.join(aims.zookeeper_faults)}); with --client java or "
        f"librdkafka-process also producer-N, member-N (--workload group), processor-N (--workload eos), "
        f"with librdkafka-process consumer-N (a reader of --workload sends or txn) or {CLIENTS_TARGET} "
        f"(client processes, for {', '.join(aims.client_faults)})"
    )
