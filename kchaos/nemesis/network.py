"""Network faults: iptables drops between nodes (and between clients and a broker).

With KRaft every node is a controller too, so a cut changes both who leads partitions and who holds the
controller quorum. In ZooKeeper mode the quorum is the ZooKeeper node's, and a broker is fenced only when
its ZooKeeper session expires: a fault that splits the cluster therefore says which side ZooKeeper is on
and cuts the other side off from it too, as a real partition between racks would. Each fault's
`effect_reached` says what Kafka must visibly do in response: fence the cut-off side, move leadership away
from it, or shrink an ISR across a cut link.
"""

from __future__ import annotations

from abc import abstractmethod
from typing import Any, ClassVar

from kchaos.harness.kafka_node import CLIENT_PORT, INTERNAL_PORT
from kchaos.model.fault_record import FaultRecord
from kchaos.model.faults.network import CutRecord
from kchaos.nemesis.fault import Carriers, Fault, FaultUnsupported, TargetUnresolved, describe_nodes
from kchaos.nemesis.netfilter import Cuts

#: ZooKeeper's place among the node ids of a ring (broker ids start at 1).
ZOOKEEPER = 0


def needs_three(fault: str, count: int) -> None:
    if count < 3:
        raise FaultUnsupported(
            f"{fault} needs at least 3 nodes, the cluster has {count}; the fault is skipped"
        )


class NetworkFault(Fault):
    """A fault that cuts links: its rules, the sides it split the nodes into."""

    RECORD: ClassVar[type[FaultRecord]] = CutRecord

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.cuts = Cuts(self.cluster, self.key)
        self.sides: list[list[int]] = []

    def start(self) -> FaultRecord:
        self.remember_leader()
        self.active = True
        self.apply()
        return self.record(sides=self.sides, links=sorted(set(self.cuts.links)))

    @abstractmethod
    def apply(self) -> None: ...

    def stop(self) -> FaultRecord:
        self.cuts.remove_all()
        self.active = False
        return self.record()

    def effect_reached(self) -> bool:
        """An ISR shrank across a cut link, or a node on a cut link (or cut off from ZooKeeper) was fenced."""
        touched = {n for link in self.cuts.links for n in link} | set(self.cuts.off_zookeeper)
        fenced = self.some_fenced(touched) or self.controller_fenced(touched)
        return fenced or self.isr_shrank(self.cuts.links)

    def controller_fenced(self, nodes: set[int]) -> bool:
        """ZooKeeper mode: a broker that names itself controller no longer lists one of `nodes`.

        There the controller alone decides who is registered and tells the others, and a cut may keep it
        from telling some of them: its own answer is the cluster's. A controller cut off from ZooKeeper
        still names itself, but lists itself too, so it never counts its own fencing.
        """
        if self.cluster.zookeeper is None:
            return False
        for node_id, node in self.cluster.nodes.items():
            answer = self.cluster.metadata.answer_of(node_id, self.topic) if node.state == "running" else None
            if answer is not None and answer.controller_id == node_id and nodes - set(answer.brokers):
                return True
        return False

    def zookeeper_side(self, cut_off: list[int]) -> str:
        """The description's note that `cut_off` lost ZooKeeper too; empty without ZooKeeper."""
        if self.cluster.zookeeper is None:
            return ""
        return f"; {describe_nodes(cut_off)} cut off from ZooKeeper too"

    def others(self, group: tuple[int, ...] | list[int]) -> list[int]:
        """The brokers outside `group`: the ones whose metadata answers say what the cut did."""
        return [n for n in sorted(self.cluster.nodes) if n not in group]

    def everyone_else(self, group: tuple[int, ...] | list[int]) -> list[int]:
        """Every node outside `group`, dedicated controllers too: what a node isolated is cut off from."""
        return [n for n in sorted(self.cluster.servers) if n not in group]

    def shuffled(self) -> list[int]:
        nodes = sorted(self.cluster.nodes)
        self.rng.shuffle(nodes)
        return nodes


class Isolate(NetworkFault):
    """Cuts the target nodes off from all other nodes, the ZooKeeper node too in ZooKeeper mode (else the
    cut-off brokers would keep their sessions and never be fenced); clients on the host still reach every
    broker."""

    def apply(self) -> None:
        self.nodes = self.resolve(self.spec.option("target"))
        self.sides = [list(self.nodes), self.everyone_else(self.nodes)]
        if not self.sides[1]:
            target = self.spec.option("target")
            raise TargetUnresolved(f"{self.key}: target {target!r} leaves no other node to cut it off from")
        self.cuts.separate(*self.sides)
        for node_id in self.nodes:
            self.cuts.cut_from_zookeeper(node_id)

    def effect_reached(self) -> bool:
        return self.fenced_by_majority(self.nodes)

    def describe(self) -> str:
        others = "all other nodes and ZooKeeper" if self.cluster.zookeeper is not None else "all other nodes"
        return f"isolate {describe_nodes(self.nodes) or self.spec.option('target')} from {others}"


class Halves(NetworkFault):
    """Splits the cluster into two random halves (the smaller first) that cannot reach each other.

    In ZooKeeper mode ZooKeeper stays with the second half (the larger, or with an even count the one
    not named as the fault's nodes): the first is cut off from it too, so its sessions expire and it is
    fenced, as a KRaft minority is.
    """

    def apply(self) -> None:
        nodes = self.shuffled()
        half = len(nodes) // 2
        first = self.keep_pinned(sorted(nodes[:half]), sorted(nodes), "the nodes")
        self.sides = [list(first), sorted(set(nodes) - set(first))]
        self.nodes = first
        self.cuts.separate(*self.sides)
        for node_id in self.sides[0]:
            self.cuts.cut_from_zookeeper(node_id)

    def effect_reached(self) -> bool:
        return self.fenced_by_majority(self.sides[0])

    def describe(self) -> str:
        if not self.sides:
            return "split into two halves"
        return f"split into halves {self.sides}{self.zookeeper_side(self.sides[0])}"


class Ring(NetworkFault):
    """Majorities ring: every node still sees a majority, but no two nodes see the same one.

    Nodes are placed on a seeded ring and keep only links to their nearest neighbours. With three nodes
    that means one cut link: the two ends each see themselves and the middle node. In ZooKeeper mode the
    ZooKeeper node takes a seeded place on the ring like a broker (it is what fences brokers there): with
    three brokers the ring has four places, each cut off from the one opposite, so one broker loses
    ZooKeeper (and is fenced) and the two others lose each other.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        #: The places on the ring, in order; ZooKeeper's is `ZOOKEEPER`.
        self.ring: list[int] = []

    def apply(self) -> None:
        brokers = self.shuffled()
        needs_three(self.name, len(brokers))
        self.ring = brokers
        if self.cluster.zookeeper is not None:
            self.ring.insert(self.rng.randrange(len(brokers) + 1), ZOOKEEPER)
        count = len(self.ring)
        if count == 3:
            self.sever(self.ring[0], self.ring[2])
        else:
            reach = (count // 2 + 1) // 2  # neighbours on each side: 2*reach+1 >= a majority
            for i in range(count):
                for j in range(i + 1, count):
                    if min(j - i, count - (j - i)) > reach:
                        self.sever(self.ring[i], self.ring[j])
        self.sides = [[n for n in self.ring if n != ZOOKEEPER]]
        self.nodes = tuple(sorted({a for a, _ in self.cuts.links} | set(self.cuts.off_zookeeper)))

    def sever(self, a: int, b: int) -> None:
        if ZOOKEEPER in (a, b):
            self.cuts.cut_from_zookeeper(a + b - ZOOKEEPER)
        else:
            self.cuts.cut(a, b)

    def describe(self) -> str:
        if not self.ring:
            return "majorities ring"
        places = ", ".join("ZooKeeper" if n == ZOOKEEPER else str(n) for n in self.ring)
        return f"majorities ring [{places}]"


class Bridge(NetworkFault):
    """Two halves that cannot reach each other, joined by one node that reaches both.

    In ZooKeeper mode ZooKeeper stays with the bridge and the second half (the larger): the first half
    still reaches the bridge, but loses its sessions and is fenced.
    """

    def apply(self) -> None:
        nodes = self.shuffled()
        needs_three(self.name, len(nodes))
        bridge, rest = nodes[0], nodes[1:]
        half = len(rest) // 2
        left, right = sorted(rest[:half]), sorted(rest[half:])
        self.sides = [left, [bridge], right]
        self.nodes = (bridge,)
        self.cuts.separate(left, right)
        for node_id in left:
            self.cuts.cut_from_zookeeper(node_id)

    def describe(self) -> str:
        if not self.sides:
            return "bridge"
        left, bridge, right = self.sides
        return f"bridge: {left} | {bridge} | {right}{self.zookeeper_side(left)}"


class CutReplication(NetworkFault):
    """Followers can no longer fetch from the partition's leader; the controller quorum stays whole.

    Only the inter-broker listener between leader and followers is cut, so the leader keeps leading and,
    after `replica.lag.time.max.ms`, shrinks the ISR to itself: the setup for "last replica standing".
    In ZooKeeper mode a controller among the followers reaches the leader over that listener too: the
    shrink is committed, but the leader's own metadata stays stale until the cut heals.
    """

    def apply(self) -> None:
        now = self.current_leader()
        leader = self.pick(now, (now,), "the leader")
        followers = self.resolve("followers", pin=False)
        self.nodes = (leader,)
        self.sides = [[leader], list(followers)]
        for follower in followers:
            self.cuts.cut_port(leader, follower, INTERNAL_PORT)

    def describe(self) -> str:
        if not self.sides:
            return "cut replication from the leader to its followers"
        return f"cut replication from leader {self.sides[0][0]} to followers {self.sides[1]}"


class CutClients(NetworkFault):
    """Clients on the host can no longer reach the target brokers, which still reach each other."""

    def apply(self) -> None:
        self.nodes = self.resolve(self.spec.option("target"))
        for node_id in self.nodes:
            self.cuts.block_port(node_id, CLIENT_PORT)

    def effect_reached(self) -> bool:
        reachable = {
            view.answered_by for view in self.cluster.metadata.views(self.topic, list(self.cluster.nodes))
        }
        return not (reachable & set(self.nodes)) and any(
            set(self.nodes) <= view.brokers
            for view in self.cluster.metadata.views(self.topic, self.others(self.nodes))
        )

    def describe(self) -> str:
        return f"cut clients off {describe_nodes(self.nodes) or self.spec.option('target')}"


class OneWay(NetworkFault):
    """Packets from one group to another are dropped while the reverse direction still flows.

    With `port=inter-broker` only what the senders answer on their inter-broker listener is dropped: a
    follower's fetches still reach them but no records come back, and in ZooKeeper mode a controller's
    requests still arrive and take effect. Their KRaft quorum traffic and their own requests still flow.

    In ZooKeeper mode ZooKeeper reaches both groups, so nobody is fenced, and from 2.7 (KIP-497) only the
    controller commits an ISR change: when every packet the senders send it is dropped, the shrink a leader
    asks for never arrives and the metadata shows nothing, so the effect counts as reached (as for a KRaft
    minority). Older leaders write their ISR to ZooKeeper themselves; the shortcut counts it reached there
    too, which says less than the metadata would.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        #: The ZooKeeper-mode controller the senders can no longer reach, if they cannot.
        self.unreachable_controller: int | None = None

    def apply(self) -> None:
        sources = self.resolve(self.spec.option("from"))
        to = self.spec.option("to")
        named = [n for n in self.resolve(to, pin=False) if n not in sources]
        if not named:
            raise TargetUnresolved(f"{self.key}: no node in {to!r} outside the senders")
        eligible = [n for n in self.eligible(to, named) if n not in sources]
        receivers = self.keep_choice(
            "receivers", named, eligible, f"the nodes target {to!r} may name beside the senders"
        )
        self.nodes = sources
        self.sides = [list(sources), sorted(receivers)]
        destinations = self.sides[1]
        port = INTERNAL_PORT if self.spec.option("port") == "inter-broker" else None
        for source in sources:
            for destination in destinations:
                self.cuts.drop(source, destination, port)
        if self.cluster.zookeeper is not None and port is None:
            controller = self.cluster.metadata.active_controller()
            self.unreachable_controller = controller if controller in destinations else None

    def effect_reached(self) -> bool:
        return self.unreachable_controller is not None or super().effect_reached()

    def describe(self) -> str:
        if not self.sides:
            return f"drop packets from {self.spec.option('from')} to {self.spec.option('to')}"
        what = "inter-broker answers" if self.spec.option("port") == "inter-broker" else "packets"
        unheard = (
            f" (the controller, node {self.unreachable_controller}, cannot hear them)"
            if self.unreachable_controller is not None
            else ""
        )
        return f"drop {what} from {describe_nodes(self.sides[0])} to {describe_nodes(self.sides[1])}{unheard}"


#: The faults this module carries out (`kchaos.model.faults`), by name and aim.
CARRIES_OUT: Carriers = {
    ("isolate", "nodes"): Isolate,
    ("cut-replication", "nodes"): CutReplication,
    ("halves", "nodes"): Halves,
    ("ring", "nodes"): Ring,
    ("bridge", "nodes"): Bridge,
    ("cut-clients", "nodes"): CutClients,
    ("one-way", "nodes"): OneWay,
}
