"""What every fault is: a small object with explicit state that starts, stops, and knows its effect.

`start()` and `stop()` do the deed; `effect_reached()` and `healed()` say, from Kafka's own metadata, whether
the cluster has reacted, so a schedule can wait for the reaction instead of guessing how long it takes.
Targets (`leader`, `controller`, `minority`, ...) are resolved when the fault starts, against the cluster as
it is then; random choices come from the schedule's seeded generator. A replay (`kchaos run --replay`)
pins each fault to the nodes the original's fault of its key hit (`pinned`) and the choices it made beyond
them (`pinned_choices`): resolving keeps to them while they are valid for the target now, and otherwise
chooses as it would have and says why (`re_chosen`).
"""

from __future__ import annotations

import random
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import PurePosixPath
from typing import Any, ClassVar

from kchaos.harness.cluster import KafkaCluster
from kchaos.harness.cluster_error import ClusterError
from kchaos.harness.metadata import GROUP_OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC
from kchaos.model.events import first_transactional_process, group_name, transactional_name
from kchaos.model.fault_definition import Aim, FaultSpec
from kchaos.model.fault_record import FaultRecord
from kchaos.model.fault_table import kind_of
from kchaos.model.fault_targets import COORDINATOR_TARGETS, SUCCESSOR
from kchaos.model.waiting import WaitTimeout, wait_for, wait_until
from kchaos.model.workload_names import SENDS
from kchaos.nemesis.pinning import Pinned

#: The longest a restart waits for ZooKeeper to drop a killed broker's registration: its session timeout
#: (`zookeeper.session.timeout.ms`: 6 s before Kafka 2.5, 18 s from it) and ZooKeeper's own tick beyond.
SESSION_EXPIRY_TIMEOUT = 60.0

#: How long a fault waits for the running nodes to agree on the partition's leader before it gives up: a
#: node slow to answer a metadata request, or a view one update behind, makes them disagree for a moment.
LEADER_AGREEMENT_TIMEOUT = 15.0


#: The selectors that draw their nodes with the seeded generator: any free node could have been drawn.
DRAWN = ("random", "minority", "majority")

#: The classes a nemesis module carries its faults out with, by the fault's name and what a spec of it aims
#: at (`kchaos.model.fault_definition.Aim`); `kchaos.nemesis.schedule` collects them.
Carriers = Mapping[tuple[str, Aim], type["Fault"]]


class FaultError(RuntimeError):
    """A fault could not be applied or removed."""


class FaultUnsupported(FaultError):
    """This machine cannot apply the fault (e.g. no netem in the kernel); the schedule skips it."""


class TargetUnresolved(FaultError):
    """The fault's targets name no node right now (no followers, no agreed leader); the schedule skips it.

    Starting it anyway would record a fault that hit nothing, and a run would be judged as if it had.
    """


class Fault(Pinned, ABC):
    """One fault instance. `key` (e.g. `pause#2`) ties its start and stop events together.

    Its name and kind are its spec's definition's (`kchaos.model.faults`), not the class's own: the class
    is registered against the definition (`CARRIES_OUT`), so the definition alone says what a fault is
    called and what the oracle makes of it.
    """

    def __init__(
        self, cluster: KafkaCluster, topic: str, partition: int, key: str, spec: FaultSpec, rng: random.Random
    ) -> None:
        self.cluster = cluster
        self.topic = topic
        self.partition = partition
        self.key = key
        self.spec = spec
        self.rng = rng
        self.nodes: tuple[int, ...] = ()
        self.leader_before = -1
        self.active = False
        #: What the faults in force when this one starts beside them hold (`holds`), by node id or client
        #: process name, with the key of the fault that holds each: its target keeps off them. Empty for a
        #: fault that starts alone, and for a crafted scenario's steps, which aim where they mean to.
        self.held_by: Mapping[int | str, str] = {}
        #: The leader the state it fired on named (`when=leader-down`), its targets' leader (`Fired`).
        self.seen_leader: int | None = None
        self.pinned: tuple[int, ...] | None = None  # set by a replay (`Pinned`)
        self.pinned_choices: Mapping[str, tuple[int | str, ...]] = {}  # set by a replay too
        self.chose: dict[str, tuple[int | str, ...]] = {}
        self.re_chosen: list[str] = []

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def kind(self) -> str:
        """What the history records and the oracle reasons about: crash, stop, pause, partition, ..."""
        return kind_of(self.spec)

    #: The record its start and stop rows carry: its kind's (`kchaos.model.faults.<kind>`), typed.
    RECORD: ClassVar[type[FaultRecord]] = FaultRecord

    @abstractmethod
    def start(self) -> FaultRecord:
        """Applies the fault; returns what was done, for the history."""

    @abstractmethod
    def stop(self) -> FaultRecord:
        """Removes the fault. Idempotent: a second call, or a call after a failed start, does nothing."""

    @abstractmethod
    def effect_reached(self) -> bool:
        """True once Kafka has reacted as the scenario expects (e.g. another replica leads)."""

    @abstractmethod
    def describe(self) -> str:
        """One sentence for the history and the report."""

    #: The run's `--workload`, set by the nemesis before the fault starts: whose transactional id
    #: `target=txn-coordinator` means.
    workload: str = SENDS

    def use_readers(self, readers: object) -> None:
        """Takes the run's readers, for a fault that acts on the run's own clients; a broker fault needs
        none, and ignores them."""
        del readers

    def healed(self) -> bool:
        """True once the cluster is whole again: every node answers and every replica is back in sync, and
        the quorum has a leader again when the fault hit dedicated controllers (brokers can be whole while
        the quorum is still electing)."""
        if not self.cluster.metadata.is_recovered(self.topic):
            return False
        if not self.nodes or not set(self.nodes) & set(self.cluster.controllers):
            return True
        try:
            self.cluster.metadata.active_controller()
        except ClusterError:
            return False
        return True

    def holds(self) -> tuple[int | str, ...]:
        """What it hits, once started, that no fault starting beside it may hit too: its nodes."""
        return self.nodes

    def record(self, **extra: Any) -> FaultRecord:
        """Its start or stop row's record: what every fault records, and `extra`, the fields its kind's
        record (`RECORD`) has beyond them."""
        return self.RECORD(
            kind=self.kind, nodes=tuple(self.nodes), spec=str(self.spec), description=self.describe(),
            re_chosen=self.re_chosen_reason(), chose=dict(self.chose) or None, **extra,
        )  # fmt: skip

    # --- targets ---------------------------------------------------------------------------------

    def resolve(self, selector: str, pin: bool = True) -> tuple[int, ...]:
        """The node ids a selector means right now; raises TargetUnresolved if that is no node at all, or
        a node another fault in force holds (`held_by`): a drawn selector (`random`, `minority`,
        `majority`) draws among the others. In a replay, the pinned nodes instead while the selector may
        name them now (`keep_pinned`); `pin=False` for a resolution the fault's nodes are not (a one-way
        cut's receivers, kept to by `keep_choice`) or are chosen among (`choose`)."""
        nodes = self._select(selector)
        if not nodes:
            others = sorted(set(self.held_by.values()))
            why = f" that {', '.join(others)} does not hold" if others else ""
            raise TargetUnresolved(f"{self.key}: target {selector!r} names no node{why} now")
        if pin:
            nodes = self.keep_pinned(
                nodes, self.eligible(selector, nodes), f"the nodes target {selector!r} may name"
            )
        self.refuse_held(selector, nodes, describe_nodes, "nodes")
        return nodes

    def eligible(self, selector: str, named: Sequence[int]) -> tuple[int, ...]:
        """The nodes `selector` may name now, given it named `named`: any free node for a drawn one
        (another draw could have named it), else exactly those (the role's holders, the ids given)."""
        if selector in DRAWN:
            return tuple(node for node in sorted(self.cluster.nodes) if node not in self.held_by)
        return tuple(named)

    def choose(self, selector: str) -> int:
        """One of the nodes `selector` names now, drawn; in a replay the original's choice while the
        selector may still name it."""
        named = self.resolve(selector, pin=False)
        return self.pick(
            self.rng.choice(named), self.eligible(selector, named), f"the nodes target {selector!r} may name"
        )

    def refuse_held(
        self, selector: str, hit: Sequence[int | str], spell: Callable[[list[Any]], str], what: str
    ) -> None:
        """TargetUnresolved when what `selector` names now (`hit`, nodes or client processes, spelled by
        `spell`) includes some a fault in force holds (`held_by`): a fault that overlaps another hits other
        `what`."""
        held = [thing for thing in hit if thing in self.held_by]
        if held:
            holders = ", ".join(sorted({self.held_by[thing] for thing in held}))
            raise TargetUnresolved(
                f"{self.key}: target {selector!r} is {spell(held)}, which {holders} holds; a fault that "
                f"overlaps another hits other {what}"
            )

    def _select(self, selector: str) -> tuple[int, ...]:
        all_nodes = sorted(self.cluster.nodes)
        count = len(all_nodes)
        free = [node for node in all_nodes if node not in self.held_by]
        if selector == "leader":
            return (self._targeted_leader(),)
        if selector == "followers":
            leader = self._targeted_leader()
            view = self._any_view()
            replicas = view.partitions[self.partition].replicas if view else tuple(all_nodes)
            return tuple(sorted(n for n in replicas if n != leader))
        if selector == SUCCESSOR:
            return self._successor()
        if selector == "controller":
            return (self.cluster.metadata.active_controller(),)
        if selector == "controllers":
            return self.cluster.voters
        if selector in COORDINATOR_TARGETS:
            return (self.coordinator(selector),)
        if selector == "random":
            return (self.rng.choice(free),) if free else ()
        if selector == "minority":
            return self._sample(free, max(1, (count - 1) // 2))
        if selector == "majority":
            return self._sample(free, count // 2 + 1)
        if selector == "all":
            return tuple(all_nodes)
        ids = tuple(sorted(int(part) for part in selector.split("+")))
        unknown = [n for n in ids if n not in self.cluster.servers]
        if unknown:
            raise TargetUnresolved(f"{self.key}: no node {unknown} in a cluster of {count}")
        return ids

    def _successor(self) -> tuple[int, ...]:
        """The in-sync replica the controller elects if the leader fails now: the first, in assignment
        order, other than the leader. In ZooKeeper mode the order is ZooKeeper's, as brokers before 0.11
        answer metadata with replicas in id order."""
        leader = self._targeted_leader()
        view = self._any_view()
        state = view.partitions.get(self.partition) if view is not None else None
        if state is None:
            return ()
        replicas = state.replicas
        if self.cluster.zookeeper is not None:
            replicas = self.cluster.zookeeper.replica_assignment(self.topic).get(self.partition, replicas)
        return next(((n,) for n in replicas if n != leader and n in state.isr), ())

    def _targeted_leader(self) -> int:
        """The leader a target is resolved against: `seen_leader`, else the agreed one now."""
        return self.seen_leader if self.seen_leader is not None else self.current_leader()

    def _sample(self, free: list[int], size: int) -> tuple[int, ...]:
        """`size` of the `free` nodes, drawn; none when fewer are free (faults in force hold the rest)."""
        return tuple(sorted(self.rng.sample(free, size))) if len(free) >= size else ()

    def current_leader(self, timeout: float = LEADER_AGREEMENT_TIMEOUT) -> int:
        """The leader the running nodes agree on, polled for up to `timeout` seconds before giving up."""
        return self._agreed_node(
            lambda: self.cluster.metadata.leader_of(self.topic, self.partition),
            timeout,
            f"a leader of partition {self.partition}",
            f"the running nodes do not agree on a leader of partition {self.partition}",
        )

    def coordinator(self, selector: str, timeout: float = LEADER_AGREEMENT_TIMEOUT) -> int:
        """The broker coordinating the run's first transactional client (`txn-coordinator`) or its
        consumer group (`group-coordinator`), as the running nodes agree, polled for up to `timeout`
        seconds: right after a failover the internal topic's partition may be leaderless a moment."""
        if selector == "txn-coordinator":
            process = first_transactional_process(self.workload)
            topic, key = TRANSACTION_STATE_TOPIC, transactional_name(self.cluster.run_id, process)
        else:
            topic, key = GROUP_OFFSETS_TOPIC, group_name(self.cluster.run_id)
        return self._agreed_node(
            lambda: self.cluster.metadata.coordinator(topic, key),
            timeout,
            f"the {selector}",
            f"the running nodes name no {selector} of {key} ({topic} is created by the first client that "
            "needs it)",
        )

    def _agreed_node(self, ask: Callable[[], int], timeout: float, what: str, unresolved: str) -> int:
        """The node `ask` names once it names one (-1: none, or the nodes disagree), asked for up to
        `timeout` seconds; TargetUnresolved, saying `unresolved`, if it never does."""
        try:
            return wait_for(ask, lambda node: node >= 0, timeout, f"the running nodes to agree on {what}")
        except WaitTimeout:
            raise TargetUnresolved(f"{self.key}: {unresolved} (waited {timeout:.0f}s)") from None

    def _any_view(self) -> Any:
        return next(iter(self.cluster.metadata.views(self.topic)), None)

    def remember_leader(self) -> None:
        self.leader_before = self.cluster.metadata.leader_of(self.topic, self.partition)

    def await_sessions_expired(self, nodes: Iterable[int] | None = None) -> dict[str, bool]:
        """Before a SIGKILLed broker starts again: in ZooKeeper mode, waits until ZooKeeper no longer lists
        `nodes` (this fault's, unless given) among its brokers (`/brokers/ids`). A broker started while its
        old session lives finds its id registered and exits ("node already exists"), as one fault that
        killed every broker at once, with nobody left to notice, met within its 15 s. Returns what the
        stop row records: nothing with KRaft (nothing to wait for), else `registrations_expired`, False if
        the wait ran out or ZooKeeper could not say (another fault holding it): the nodes are restarted all
        the same.
        """
        zookeeper = self.cluster.zookeeper
        if zookeeper is None:
            return {}
        killed = set(self.nodes if nodes is None else nodes)
        try:
            wait_until(
                lambda: not zookeeper.registered_brokers() & killed,
                SESSION_EXPIRY_TIMEOUT,
                f"{self.key}: ZooKeeper to expire the sessions of {describe_nodes(killed)}",
            )
        except WaitTimeout:
            return {"registrations_expired": False}
        return {"registrations_expired": True}

    def require_files(self, what: str, *paths: PurePosixPath) -> None:
        """FaultUnsupported, naming the nodes and `what` they lack, unless every target carries `paths`
        under its Kafka home (what a fault needs inside the broker, which only installations kchaos makes
        have: its images, and what it installs on a machine)."""
        exited = [
            n for n in self.nodes
            if self.cluster.node(n).state == "running" and self.cluster.node(n).exit_code() is not None
        ]  # fmt: skip
        if exited:
            raise FaultUnsupported(
                f"{self.key}: {describe_nodes(exited)} exited on its own and is down (its broker's log in "
                "logs/ says why); the fault is skipped"
            )
        unable = [n for n in self.nodes if not self.cluster.node(n).has_files(*paths)]
        if unable:
            raise FaultUnsupported(
                f"{self.key}: the image of {describe_nodes(unable)} has no {what}; use an image kchaos "
                "builds (leave --kafka-image out)"
            )

    # --- effects shared by several faults --------------------------------------------------------

    def fenced_by_majority(self, cut_off: Iterable[int]) -> bool:
        """The nodes outside `cut_off` hold a quorum and have fenced every node in it.

        With KRaft, when the cut-off side is itself a majority, the rest have no quorum and nothing changes
        in the metadata they can serve, so there is nothing to observe: the effect counts as reached. In
        ZooKeeper mode the quorum is ZooKeeper's, which no broker fault touches: any running rest fences.
        """
        cut = set(cut_off)
        rest = [n for n, node in self.cluster.nodes.items() if n not in cut and node.state == "running"]
        kraft = self.cluster.metadata_mode == "kraft"
        voters = set(self.cluster.voters)
        servers = self.cluster.servers
        voting = [v for v in voters - cut if v in servers and servers[v].state == "running"]
        if not rest or (kraft and len(voting) * 2 <= len(voters)):
            return True
        views = self.cluster.metadata.views(self.topic, rest)
        if len(views) != len(rest) or any(view.brokers & cut for view in views):
            return False
        if kraft and self.cluster.controllers and cut & voters:
            # Dedicated controllers fence no broker when one of them goes: what the quorum does is elect a
            # leader among the rest, if the one cut off led it.
            try:
                if self.cluster.metadata.active_controller(exclude=cut) in cut:
                    return False
            except ClusterError:
                return False
        if self.leader_before in cut and self.cluster.size > 1:
            leader = self.cluster.metadata.leader_of(self.topic, self.partition, among=rest)
            return leader >= 0 and leader not in cut
        return True

    def some_fenced(self, nodes: set[int]) -> bool:
        """Some of `nodes` is missing from the registered brokers that a majority of nodes report."""
        views = self.cluster.metadata.views(self.topic)
        if len(views) * 2 <= len(self.cluster.nodes):
            return False
        return any(
            sum(node not in view.brokers for view in views) * 2 > len(self.cluster.nodes) for node in nodes
        )

    def isr_shrank(self, pairs: Iterable[tuple[int, int]]) -> bool:
        """For some cut link (x, y), a partition led by x no longer counts y in sync."""
        for view in self.cluster.metadata.views(self.topic):
            for state in view.partitions.values():
                for x, y in pairs:
                    if state.leader == x and y in state.replicas and y not in state.isr:
                        return True
        return False


def describe_nodes(nodes: Iterable[int]) -> str:
    ids = list(nodes)
    if not ids:
        return "no node"
    return ("node " if len(ids) == 1 else "nodes ") + ", ".join(str(n) for n in ids)
