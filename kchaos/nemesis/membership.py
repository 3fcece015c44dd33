"""Brokers joining and leaving the cluster while writes go on: `add-broker` and `remove-broker`.

An operator grows a cluster by starting a new broker and moving replicas onto it, and shrinks it by moving
every replica off a broker (draining it), then shutting it down and unregistering it (decommissioning).
Both are done here as an operator does them, with Kafka's reassignment tool inside a broker (the one
`reassign` uses) and the cluster tool's `unregister` (KRaft), on spare brokers the cluster started with
(`--spare-brokers`): their sidecars hold their addresses from the start, their brokers start when one joins.

- `add-broker` starts a spare as a new broker and, once it has registered, moves one replica (a follower,
  or with `replica=leader` the leader) of every partition of the run's topic onto it. The effect is every
  one of those reassignments completed: the new broker copied each log and is in sync.
- `remove-broker` drains its target: every replica it holds, of any topic (the run's, the group and
  transaction state), moves to a broker that holds none of that partition; where no member is free (three
  brokers, three replicas), a spare joins and takes them, as a replacement. Once drained, the broker is
  shut down and unregistered. The effect is that no partition lists it and no broker counts it registered.
  With KRaft and combined nodes the broker is a controller too, so its controller stops with it: the quorum
  runs one voter short until the broker returns.

Each heals back to the cluster it started from, so either can be repeated and mixed: an added broker is
drained and decommissioned again (a spare once more), a removed one starts again, registers and takes its
replicas back (and a spare that replaced it is decommissioned). Healing is a sequence of steps, each
started once the one before has completed as every answering broker sees it, so `healed()` takes the next
step when it finds the last one done.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Literal

from kchaos.harness.cluster_error import ClusterError
from kchaos.harness.kafka_node import INTERNAL_PORT
from kchaos.harness.metadata import PartitionState
from kchaos.model.fault_record import FaultRecord
from kchaos.model.faults.membership import MembershipRecord
from kchaos.nemesis.fault import Carriers, Fault, TargetUnresolved, describe_nodes
from kchaos.nemesis.reassign import completed, moved_replicas, run_reassignment

#: A partition of some topic, as the reassignment tool names it.
Placement = tuple[str, int]
#: The replica list asked for each partition.
Plan = dict[Placement, tuple[int, ...]]

#: The cluster tool's class, with `unregister` (KRaft): in the tools module from Kafka 3.5, in core before.
CLUSTER_TOOLS = ("org.apache.kafka.tools.ClusterTool", "kafka.tools.ClusterTool")

#: Where a membership fault is, its steps in order. Applying: `joining` waits for a started spare to
#: register, `moving` for replicas to move onto or off brokers, `applied` holds. Healing: `returning` and
#: `rejoining` bring a removed broker back, `restoring` waits for replicas to move back, `retiring` for a
#: spare to be drained before it is decommissioned; `done` when the cluster is as the fault found it.
Stage = Literal[
    "idle", "joining", "moving", "applied", "returning", "rejoining", "restoring", "retiring", "done"
]


def drain_plan(
    placements: Mapping[Placement, PartitionState],
    node: int,
    members: list[int],
    back: Mapping[Placement, tuple[int, ...]],
    choose: Callable[[Placement, list[int]], int],
) -> Plan:
    """The replica lists that move every replica `node` holds off it: a partition in `back` returns to the
    list it had there, any other has `node` replaced by one of `members` that holds none of it, chosen by
    `choose` (given the partition and those members). A partition with no such member is left out: the
    caller says why that cannot be."""
    plan: Plan = {}
    for placement, state in sorted(placements.items()):
        if node not in state.replicas:
            continue
        if placement in back:
            plan[placement] = back[placement]
            continue
        free = [m for m in members if m != node and m not in state.replicas]
        if free:
            plan[placement] = moved_replicas(state.replicas, node, choose(placement, free))
    return plan


class Membership(Fault):
    """What both membership faults share: reassignments submitted as one plan and followed until they have
    completed, spares joining, drained brokers shut down and unregistered."""

    RECORD = MembershipRecord

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.stage: Stage = "idle"
        #: The reassignment asked for last, and the lists each moved partition had before the fault.
        self.asked: Plan = {}
        self.before: Plan = {}
        #: The spare this fault started (-1: none).
        self.joined = -1
        #: What each decommissioning's unregistration answered, for the stop row.
        self.unregistered: dict[int, str] = {}

    def _submit(self, plan: Plan) -> None:
        self.asked = plan
        if plan:
            run_reassignment(self.cluster, self.key, plan, "--execute")

    def _moved(self) -> bool:
        """Every partition of the last plan shows exactly its new replicas, all in sync, to every answering
        broker (no plan: nothing to wait for)."""
        for topic in sorted({topic for topic, _ in self.asked}):
            views = self.cluster.metadata.views(topic)
            if not views:
                return False
            for (name, partition), target in self.asked.items():
                if name != topic:
                    continue
                for view in views:
                    state = view.partitions.get(partition)
                    if state is None or not completed(state, target):
                        return False
        return True

    def _registered(self, node: int, present: bool = True) -> bool:
        """Every answering broker other than `node` counts it among the registered (`present`), or none
        does."""
        others = [n for n, member in self.cluster.nodes.items() if n != node and member.state == "running"]
        views = self.cluster.metadata.views(self.topic, others)
        return bool(views) and all((node in view.brokers) == present for view in views)

    def _join_spare(self) -> int:
        if not self.cluster.spares:
            raise TargetUnresolved(
                f"{self.key}: no spare broker left to start (every one of --spare-brokers is in the cluster)"
            )
        spare = min(self.cluster.spares)
        self.cluster.join(spare)
        self.joined = spare
        return spare

    def _decommission(self, node: int) -> None:
        """Shuts drained broker `node` down (controlled) and, with KRaft, unregisters it, as an operator
        retires a broker: a broker merely shut down stays registered, fenced, in the controller's view."""
        self.cluster.leave(node)
        if self.cluster.metadata_mode != "kraft":
            self.unregistered[node] = "ZooKeeper dropped its registration when it shut down"
            return
        runner = next(n for _, n in sorted(self.cluster.nodes.items()) if n.state == "running")
        bootstrap = f"{runner.hostname}:{INTERNAL_PORT}"
        for tool in CLUSTER_TOOLS:
            try:
                runner.run_tool(tool, "unregister", "--bootstrap-server", bootstrap, "--id", str(node))
            except ClusterError as exc:
                self.unregistered[node] = f"unregister failed: {str(exc)[-300:]}"
                if "Could not find or load main class" in str(exc):
                    continue
                return
            self.unregistered[node] = "unregistered"
            return

    def _members(self) -> list[int]:
        return sorted(n for n, node in self.cluster.nodes.items() if node.state == "running")

    def _drain_off(
        self,
        node: int,
        back: Mapping[Placement, tuple[int, ...]] | None = None,
        placements: Mapping[Placement, PartitionState] | None = None,
        pin: bool = False,
    ) -> None:
        """Submits the moves of every replica `node` holds to the other running members (`drain_plan`),
        from `placements` as given or as a running node describes them now. `pin`: the fault's drain, whose
        choice of the broker taking each replica a replay keeps to (`keep_choice`); healing's drains come
        after its stop row, which records what it chose, so they draw afresh."""
        found = self.cluster.metadata.placements() if placements is None else placements
        members = [n for n in self._members() if n != node]
        self._submit(drain_plan(found, node, members, back or {}, self._taker if pin else self._draw))

    def _draw(self, placement: Placement, free: list[int]) -> int:
        return self.rng.choice(free)

    def _taker(self, placement: Placement, free: list[int]) -> int:
        """The broker that takes `placement`'s replica off a drained broker, drawn among `free`; in a replay
        the original's while it is still free to."""
        topic, partition = placement
        return self.keep_choice(
            f"broker taking {topic}-{partition}", [self._draw(placement, free)], free,
            "the brokers free to take it", free=False,
        )[0]  # fmt: skip

    def stop(self) -> FaultRecord:
        if self.active:
            self.active = False
            if self.stage == "idle":
                self.stage = "done"  # a start that gave up before changing anything
            else:
                self._begin_healing()
        return self.record(
            stage=self.stage, unregistered={str(n): said for n, said in self.unregistered.items()}
        )

    def _begin_healing(self) -> None:
        """The first step back (each fault's own): what must not wait for `healed()`, which a run stopped
        early never asks."""

    def healed(self) -> bool:
        if self.stage != "done":
            self._heal_step()
            return False
        return super().healed()

    def _heal_step(self) -> None:
        """Takes the next step back once the last one is done."""


class AddBroker(Membership):
    """A spare broker joins and takes one replica of every partition of the run's topic; healed by draining
    and decommissioning it again."""

    def start(self) -> FaultRecord:
        self.remember_leader()
        spare = self._join_spare()
        self.nodes = (spare,)
        self.active = True
        self.stage = "joining"
        return self.record(joined=spare, members=self._members())

    def effect_reached(self) -> bool:
        if self.stage == "joining":
            if self._registered(self.joined):
                self._move_onto(self.joined)
            return False
        if self.stage == "moving" and self._moved():
            self.stage = "applied"
        return self.stage == "applied"

    def _move_onto(self, node: int) -> None:
        placements = self.cluster.metadata.placements()
        plan: Plan = {}
        for (topic, partition), state in sorted(placements.items()):
            if topic != self.topic or node in state.replicas:
                continue
            if self.spec.option("replica") == "leader" and state.leader >= 0:
                drawn, among, what = state.leader, [state.leader], "its leader"
            else:
                among = [n for n in state.replicas if n != state.leader] or list(state.replicas)
                drawn, what = self.rng.choice(among), "its followers"
            outgoing = self.keep_choice(
                f"replica of {topic}-{partition} moved", [drawn], among, what, free=False
            )[0]
            self.before[(topic, partition)] = state.replicas
            plan[(topic, partition)] = moved_replicas(state.replicas, outgoing, node)
        self._submit(plan)
        self.stage = "moving"

    def _begin_healing(self) -> None:
        self.stage = "retiring"  # a member holding replicas until drained: the cluster is whole meanwhile

    def _heal_step(self) -> None:
        if self.stage == "retiring":
            if self.asked and not self._moved():
                return  # a move onto it still running: drain once it has completed
            self._drain_off(self.joined, back=self.before)
            self.stage = "restoring"
        elif self.stage == "restoring" and self._moved():
            self._decommission(self.joined)
            self.stage = "done"

    def describe(self) -> str:
        replica = self.spec.option("replica")
        who = describe_nodes([self.joined]) if self.joined >= 0 else "a spare broker"
        return (
            f"start {who} as a new broker and move a {replica} replica of every partition of {self.topic} "
            "onto it; healed by draining and decommissioning it again"
        )


class RemoveBroker(Membership):
    """A member is drained (a spare joining to take what no member can), shut down and unregistered;
    healed by starting it again and moving its replicas back."""

    def start(self) -> FaultRecord:
        self.remember_leader()
        victim = self.choose(self.spec.option("target"))
        if victim not in self.cluster.nodes:
            raise TargetUnresolved(
                f"{self.key}: {describe_nodes([victim])} is no broker (a dedicated controller)"
            )
        self.nodes = (victim,)
        placements = self.cluster.metadata.placements()
        if not placements:
            raise TargetUnresolved(f"{self.key}: no running node describes the cluster's partitions")
        held = {p: s.replicas for p, s in placements.items() if victim in s.replicas}
        members = [n for n in self._members() if n != victim]
        stuck = [p for p, replicas in held.items() if not set(members) - set(replicas)]
        if stuck and not self.cluster.spares:
            topic, partition = stuck[0]
            raise TargetUnresolved(
                f"{self.key}: {len(stuck)} partition(s) on {describe_nodes([victim])} (e.g. "
                f"{topic}-{partition}) have a replica on every other broker, so draining it needs a spare: "
                "raise --spare-brokers"
            )
        self.before = dict(held)
        self.active = True
        if stuck:
            self._join_spare()
            self.stage = "joining"
        else:
            self._drain(placements)
        return self.record(
            removed=victim, joined=self.joined if self.joined >= 0 else None, holds=len(held), members=members
        )

    def _drain(self, placements: Mapping[Placement, PartitionState] | None = None) -> None:
        self._drain_off(self.nodes[0], placements=placements, pin=True)
        self.stage = "moving"

    def effect_reached(self) -> bool:
        victim = self.nodes[0]
        if self.stage == "joining":
            if self._registered(self.joined):
                self._drain()
            return False
        if self.stage == "moving" and self._moved():
            self._decommission(victim)
            self.stage = "applied"
        return self.stage == "applied" and self._registered(victim, present=False)

    def _begin_healing(self) -> None:
        victim = self.nodes[0]
        if victim in self.cluster.nodes:
            self.stage = "returning"  # stopped before it was shut down: its replicas go back once drained
        else:
            self.cluster.join(victim)  # it registers anew, holding nothing; its replicas follow
            self.stage = "rejoining"

    def _heal_step(self) -> None:
        victim = self.nodes[0]
        drained = self.stage == "returning" and (not self.asked or self._moved())
        if drained or (self.stage == "rejoining" and self._registered(victim)):
            self._restore()
        elif self.stage == "restoring" and self._moved():
            if self.joined < 0:
                self.stage = "done"
                return
            self._drain_off(self.joined)
            self.stage = "retiring"
        elif self.stage == "retiring" and self._moved():
            self._decommission(self.joined)
            self.stage = "done"

    def _restore(self) -> None:
        """Moves every replica the drained broker held back to the list its partition had before."""
        self._submit(dict(self.before))
        self.stage = "restoring"

    def describe(self) -> str:
        who = describe_nodes(self.nodes) if self.nodes else f"the {self.spec.option('target')}"
        spare = f", {describe_nodes([self.joined])} joining to take its replicas" if self.joined >= 0 else ""
        return (
            f"drain {who} (every replica it holds moved to other brokers{spare}), shut it down and "
            "unregister it; healed by starting it again and moving its replicas back"
        )


#: The faults this module carries out (`kchaos.model.faults`), by name and aim.
CARRIES_OUT: Carriers = {
    ("add-broker", "nodes"): AddBroker,
    ("remove-broker", "nodes"): RemoveBroker,
}
