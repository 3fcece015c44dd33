"""A partition reassignment while writes go on: one replica of the fault partition moves to a broker that
held none of it, the operator's routine move (draining a broker, rebalancing) that the controller carries
out in steps: the incoming replica is added and copies the log, joins the ISR, and only then is the
outgoing one removed, leadership moving with it when it was the leader.

Done with Kafka's own reassignment tool inside a broker (`kafka-reassign-partitions`, through the
reassignment API of KIP-455 since 2.5), as an operator does it. `interrupt=true` kills the incoming broker
before it has caught up: the reassignment then waits with one replica short until the broker is back, and
the controller must not remove the outgoing replica meanwhile. The window is made, not hoped for: a
follower's first fetch takes up to `replica.fetch.max.bytes` (1 MiB) whatever the replication throttle, so
a young partition is copied in one fetch, about 0.1 s, which no poll of the metadata reliably catches (a CI
run missed it). The incoming broker's fetches are therefore cut (its connections to the other brokers'
replication listener) from before the reassignment is submitted until it has been killed.

When every broker already holds a replica (3 brokers, replication factor 3, the default run), there is no
broker to move onto, so the move is a round trip through the same steps: the replica is removed (its broker
deletes its copy of the log) and, once that has completed, added back, so the same broker copies the whole
log again from the leader, as a broker drained and restored does. `interrupt=true` then kills it while it
copies.

The new placement stays after the fault: a reassignment is not undone, and the cluster counts as healed
once it has completed and every replica is in sync.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from kchaos.harness.cluster import KafkaCluster
from kchaos.harness.cluster_error import ClusterError
from kchaos.harness.kafka_node import INTERNAL_PORT
from kchaos.harness.metadata import PartitionState
from kchaos.model.fault_record import FaultRecord
from kchaos.model.faults.reassign import ReassignRecord
from kchaos.nemesis.fault import Carriers, Fault, FaultUnsupported, TargetUnresolved, describe_nodes
from kchaos.nemesis.netfilter import Cuts

#: The tool's class: in the tools module from Kafka 3.7 (KAFKA-14595), in the core jar before.
REASSIGN_TOOLS = (
    "org.apache.kafka.tools.reassign.ReassignPartitionsCommand",
    "kafka.admin.ReassignPartitionsCommand",
)
#: Where the reassignment's JSON is written inside the broker that runs the tool.
PLAN_FILE = "/tmp/kchaos-reassignment.json"


def moved_replicas(replicas: tuple[int, ...], outgoing: int, incoming: int) -> tuple[int, ...]:
    """The replica list with `outgoing` replaced by `incoming` in its place: the first replica is the
    preferred leader, so moving the leader makes the incoming broker the one the controller prefers."""
    return tuple(incoming if node == outgoing else node for node in replicas)


def removed_replica(replicas: tuple[int, ...], outgoing: int) -> tuple[int, ...]:
    """The replica list without `outgoing`: the first half of a round trip."""
    return tuple(node for node in replicas if node != outgoing)


def completed(state: PartitionState, target: tuple[int, ...]) -> bool:
    """The reassignment to `target` is over as a broker sees it: exactly the target replicas, all in sync,
    one of them leading. While it runs, the replicas listed are the old and new ones together."""
    return set(state.replicas) == set(target) and set(state.isr) == set(target) and state.leader in target


class Reassign(Fault):
    """Moves one replica (`replica=leader` or `follower`) of the fault partition to a broker without one,
    or, when every broker holds one, removes it and adds it back."""

    RECORD = ReassignRecord

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.before: tuple[int, ...] = ()
        #: The replica lists asked for, in order: one for a move, two for a round trip.
        self.steps: tuple[tuple[int, ...], ...] = ()
        self.target: tuple[int, ...] = ()
        self.incoming = -1
        self.killed = False
        #: The cut that keeps an interrupted reassignment's incoming broker from fetching until its kill.
        self.cuts = Cuts(self.cluster, self.key)

    @property
    def interrupts(self) -> bool:
        return self.spec.option("interrupt") == "true"

    def start(self) -> FaultRecord:
        self.remember_leader()
        view = self._any_view()
        if view is None or self.partition not in view.partitions:
            raise TargetUnresolved(f"{self.key}: no running node describes partition {self.partition}")
        state = view.partitions[self.partition]
        self.before = tuple(state.replicas)
        if self.spec.option("replica") == "leader":
            leader = self.current_leader()
            outgoing = self.pick(leader, (leader,), "the leader")
        else:
            followers = [n for n in self.before if n != state.leader]
            if not followers:
                raise TargetUnresolved(f"{self.key}: partition {self.partition} has no follower to move")
            outgoing = self.pick(self.rng.choice(followers), followers, "the followers")
        spare = sorted(n for n in self.cluster.nodes if n not in self.before)
        if spare:
            self.incoming = self.pick(self.rng.choice(spare), spare, "the brokers without a replica", 1)
            self.steps = (moved_replicas(self.before, outgoing, self.incoming),)
        elif len(self.before) > 1:
            self.incoming = outgoing
            self.steps = (removed_replica(self.before, outgoing), self.before)
        else:
            raise TargetUnresolved(f"{self.key}: partition {self.partition}'s only replica cannot be removed")
        self.nodes = (outgoing, self.incoming)
        self.active = True
        self._submit(self.steps[0])
        return self.record(
            leader_before=self.leader_before, replicas_before=list(self.before),
            replicas_after=list(self.steps[-1]), steps=[list(step) for step in self.steps],
            outgoing=outgoing, incoming=self.incoming,
        )  # fmt: skip

    def _submit(self, target: tuple[int, ...], interrupt: bool = True) -> None:
        """Asks for `target`; the step that adds the incoming replica is the one `interrupt=true` cuts off
        from fetching first (unless `interrupt` is False: the fault has stopped, nothing will kill it)."""
        self.target = target
        if interrupt and self.interrupts and self.target == self.steps[-1]:
            for node_id in self.cluster.nodes:
                if node_id != self.incoming:
                    self.cuts.cut_port(node_id, self.incoming, INTERNAL_PORT)
        self._tool("--execute")

    def effect_reached(self) -> bool:
        """Completed as every answering broker sees it; with `interrupt=true`, the incoming broker killed
        while the reassignment lists it but it is not in sync, and fenced by the others. A round trip's
        removal is submitted first; once it has completed everywhere, the replica is added back."""
        if self.target != self.steps[-1]:
            if self._completed_everywhere():
                self._submit(self.steps[self.steps.index(self.target) + 1])
            return False
        if not self.interrupts:
            return self._completed_everywhere()
        if not self.killed:
            view = self._any_view()
            state = view.partitions.get(self.partition) if view is not None else None
            if state is None or self.incoming not in state.replicas or self.incoming in state.isr:
                return False  # the reassignment not yet begun (the cut keeps it from catching up)
            self.cluster.node(self.incoming).kill()
            self.killed = True
            self.cuts.remove_all()
        return self.fenced_by_majority((self.incoming,))

    def stop(self) -> FaultRecord:
        if self.active:
            self.cuts.remove_all()
            if self.killed:
                self.await_sessions_expired([self.incoming])
                self.cluster.node(self.incoming).restart()
            self.active = False
        return self.record(interrupted=self.killed)

    def healed(self) -> bool:
        """The reassignment (every step of it) has completed and the cluster is whole. A round trip stopped
        before its removal completed is finished here: the replica is added back, never left out."""
        if self.steps and self.target != self.steps[-1] and self._completed_everywhere():
            self._submit(self.steps[-1], interrupt=False)
            return False
        return (
            super().healed()
            and bool(self.steps)
            and self.target == self.steps[-1]
            and self._completed_everywhere()
        )

    def _completed_everywhere(self) -> bool:
        """Every answering broker sees the reassignment completed (a broker that does not describe the
        partition yet, just restarted, sees it not completed)."""
        views = self.cluster.metadata.views(self.topic)
        return bool(views) and all(
            self.partition in view.partitions and completed(view.partitions[self.partition], self.target)
            for view in views
        )

    def describe(self) -> str:
        if not self.target:
            replica = self.spec.option("replica")
            return f"move a {replica} replica of partition {self.partition} to a broker without one"
        outgoing, incoming = self.nodes
        interrupted = (
            f", killing {describe_nodes([incoming])} before it catches up" if self.interrupts else ""
        )
        lists = " -> ".join(str(list(step)) for step in (self.before, *self.steps))
        if len(self.steps) > 1:
            return (
                f"remove partition {self.partition}'s replica on {describe_nodes([outgoing])}, then add it "
                f"back (replicas {lists}){interrupted}"
            )
        return (
            f"move partition {self.partition}'s replica on {describe_nodes([outgoing])} to "
            f"{describe_nodes([incoming])} (replicas {lists}){interrupted}"
        )

    def _tool(self, *action: str) -> str:
        """Runs the reassignment tool for this fault's target in a running broker other than the incoming
        one."""
        plan = {(self.topic, self.partition): self.target}
        return run_reassignment(self.cluster, self.key, plan, *action, avoid=(self.incoming,))


def run_reassignment(
    cluster: KafkaCluster,
    key: str,
    plan: Mapping[tuple[str, int], Sequence[int]],
    *action: str,
    avoid: Collection[int] = (),
) -> str:
    """Runs Kafka's reassignment tool with `action` (`--execute`) for `plan` (each partition's replica list
    asked for), inside the first running broker not in `avoid`, as an operator does; FaultUnsupported when
    the release's tool has no `--bootstrap-server` (before 2.5)."""
    node = next(
        (n for node_id, n in sorted(cluster.nodes.items()) if node_id not in avoid and n.state == "running"),
        None,
    )
    if node is None:
        raise TargetUnresolved(f"{key}: no running broker to run the reassignment tool on")
    partitions = [
        {"topic": topic, "partition": partition, "replicas": list(replicas)}
        for (topic, partition), replicas in sorted(plan.items())
    ]
    node.kafka_exec(
        [
            "sh",
            "-c",
            f'printf "%s" "$1" > {PLAN_FILE}',
            "sh",
            json.dumps({"version": 1, "partitions": partitions}),
        ]
    )
    bootstrap = f"{node.hostname}:{INTERNAL_PORT}"
    missing = ""
    for tool in REASSIGN_TOOLS:
        try:
            return node.run_tool(
                tool, "--bootstrap-server", bootstrap, "--reassignment-json-file", PLAN_FILE, *action
            )
        except ClusterError as exc:
            if "Could not find or load main class" not in str(exc):
                if "bootstrap-server" in str(exc) and "not a recognized option" in str(exc):
                    raise FaultUnsupported(
                        f"{key}: this release's reassignment tool takes no --bootstrap-server "
                        "(it came in Kafka 2.5, KIP-455); the fault is skipped"
                    ) from None
                raise
            missing = str(exc)
    raise ClusterError(f"{key}: no node has a reassignment tool ({', '.join(REASSIGN_TOOLS)}): {missing}")


#: The faults this module carries out (`kchaos.model.faults`), by name and aim.
CARRIES_OUT: Carriers = {
    ("reassign", "nodes"): Reassign,
}
