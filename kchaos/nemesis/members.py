"""Faults of the run's own clients: a consumer-group member that crashes, and comes back when it heals.

The brokers are untouched. What is tested is the group: the coordinator must notice the silent member
when its session times out, hand its partitions to the others, and those must resume from the group's
committed offsets, so every record the dead member was handed and did not commit is handed out again (at
least once: the documented duplicates), and nothing below a committed offset is skipped. How a thread of
the harness crashes like a process is `kchaos.workloads.in_harness.crash`'s to say; this module only orders
it, through what the run's readers offer (`GroupMembers`), and watches the group react.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from kchaos.model.fault_record import FaultRecord
from kchaos.model.faults.members import MemberRecord
from kchaos.model.waiting import WaitTimeout, wait_for, wait_until
from kchaos.nemesis.fault import Carriers, Fault, FaultUnsupported, TargetUnresolved

#: Longest a crash waits for the group to settle and its target to be reading: a group settles within
#: seconds of a rebalance.
READING_WAIT = 30.0


@runtime_checkable
class GroupMembers(Protocol):
    """The run's group members as the nemesis drives them
    (`kchaos.workloads.in_harness.group_consumer.GroupThreads`)."""

    def member_names(self) -> list[str]: ...

    def crash(self, process: str) -> frozenset[int]: ...

    def restart(self, process: str) -> bool: ...

    def assignment(self, process: str) -> frozenset[int]: ...

    def assignments(self, process: str) -> int: ...

    def handed(self, process: str) -> int: ...


class MemberFault(Fault):
    """A fault of the run's group members: it takes the run's readers and acts through what they offer
    (`GroupMembers`), refused for a run whose readers are no group's."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.members: GroupMembers | None = None

    def use_readers(self, readers: object) -> None:
        if isinstance(readers, GroupMembers):
            self.members = readers

    def _group(self) -> GroupMembers:
        if self.members is None:
            raise FaultUnsupported(f"{self.key}: this run's readers are no consumer group's members")
        return self.members


class KillMember(MemberFault):
    """Crashes one group member at start (no LeaveGroup, no last commit) and starts it again as a new
    client at stop. Its effect: the group rebalanced without it, every partition it held now another
    member's; healed once the new client was given its assignment and the cluster is whole."""

    RECORD = MemberRecord

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.member = ""
        self.held: frozenset[int] = frozenset()
        #: Assignments each other member had been given when the crash happened.
        self.before: dict[str, int] = {}
        #: Assignments the crashed member had been given when it was brought back (None: not brought back).
        self.restarted_at: int | None = None

    def start(self) -> FaultRecord:
        members = self._group()
        names = members.member_names()
        target = self.spec.option("target")
        if len(names) < 2:
            raise TargetUnresolved(f"{self.key}: one member alone has no one to hand its partitions to")
        if target != "random" and target not in names:
            raise TargetUnresolved(f"{self.key}: no member {target} among {', '.join(names)}")

        def reading(name: str) -> bool:
            return bool(members.assignment(name)) and members.handed(name) > 0

        # A member is crashed while it reads what it was given, not between a rebalance and its first
        # records: a crash there leaves nothing handed over for the group to hand out again. And only
        # once the group has settled: a member crashed while others are still joining has its partitions
        # revoked, and its offsets committed, by the rebalance they started, so again nothing is handed
        # out twice; and a member that was dropped from the group and does not know it yet holds
        # partitions that are another's.
        candidates = names if target == "random" else [target]
        partitions = self._partition_count()
        try:
            wait_until(
                lambda: settled(members, names, partitions) and any(reading(n) for n in candidates),
                READING_WAIT,
                "the group to settle with a member reading its partitions",
            )
        except WaitTimeout:
            held = ", ".join(f"{n} {sorted(members.assignment(n))}" for n in names)
            raise TargetUnresolved(
                f"{self.key}: within {READING_WAIT:.0f}s the group did not settle with "
                f"{' or '.join(candidates)} reading its partitions (each member's own view: {held})"
            ) from None
        if target == "random":
            readers = [n for n in names if reading(n)]
            drawn = self.rng.choice(readers)
            target = self.keep_choice("member", [drawn], readers, "the members reading their partitions")[0]
        self.member = target
        self.before = {name: members.assignments(name) for name in names if name != target}
        self.active = True
        self.held = members.crash(target)
        return self.record(member=target, partitions=sorted(self.held))

    def _partition_count(self) -> int:
        """How many partitions the group shares, as the first node that answers describes the topic."""
        try:
            views = wait_for(
                lambda: self.cluster.metadata.views(self.topic),
                bool,
                READING_WAIT,
                f"a node to describe {self.topic}",
            )
        except WaitTimeout:
            raise TargetUnresolved(
                f"{self.key}: no node described {self.topic} within {READING_WAIT:.0f}s"
            ) from None
        return len(views[0].partitions)

    def stop(self) -> FaultRecord:
        if self.active:
            self.active = False
            members = self._group()
            count = members.assignments(self.member)
            if members.restart(self.member):
                self.restarted_at = count
        return self.record(member=self.member, restarted=self.restarted_at is not None)

    def effect_reached(self) -> bool:
        """Another member was given an assignment since the crash, and together the others hold every
        partition the crashed member held: the coordinator expired its session and rebalanced."""
        members = self._group()
        rebalanced = any(members.assignments(name) > count for name, count in self.before.items())
        taken: set[int] = set()
        for name in self.before:
            taken |= members.assignment(name)
        return rebalanced and self.held <= taken

    def healed(self) -> bool:
        members = self._group()
        rejoined = self.restarted_at is None or members.assignments(self.member) > self.restarted_at
        return rejoined and super().healed()

    def describe(self) -> str:
        who = self.member or self.spec.option("target")
        return f"crash group member {who} (its client abandoned, never closed); a new client on stop"


def settled(members: GroupMembers, names: list[str], partitions: int) -> bool:
    """The members' own views make one whole assignment: every partition held by exactly one member, and
    as many members holding some as can (all of them, unless there are more members than partitions).
    A rebalance under way, or a member the group dropped that still believes it holds its partitions,
    breaks one or the other."""
    held = [members.assignment(name) for name in names]
    holders = [partitions_held for partitions_held in held if partitions_held]
    whole = frozenset().union(*held)
    return sum(map(len, holders)) == len(whole) == partitions and len(holders) == min(len(names), partitions)


#: The faults this module carries out (`kchaos.model.faults`), by name and aim.
CARRIES_OUT: Carriers = {
    ("kill-member", "nodes"): KillMember,
}
