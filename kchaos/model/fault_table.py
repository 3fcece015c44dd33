"""Every fault kchaos has, in one table: its name on the command line, its kind, its options with their
defaults, what the guarantee oracle treats its kind as, and the colour the report shades its kind in.

Spec parsing, the schedule (through the class `nemesis` keeps for each row), the oracle and the report all
read this table, so what a fault is (`kill` on the command line, `crash` to the oracle, red in the report)
is said once: a new fault is one row here plus its class, a new kind one `FaultKind`.

Pure data (no Docker, no Kafka): the configuration validates specs against it before anything starts.
The kind is what a run's history records (`detail.kind`) and what the oracle and the report read back, so
a history keeps meaning the same thing however faults are renamed on the command line.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from kchaos.model.client_targets import is_client_target

#: What the oracle can make of a fault kind; each rule that depends on the faults asks for one of these.
Treatment = Literal["crash", "power-loss", "failover", "unclean-election", "none"]

#: What each treatment means to the oracle's rules, in the words `kchaos faults` prints.
TREATMENTS: dict[Treatment, str] = {
    "crash": "a crash: leadership may move, and its nodes count as down",
    "power-loss": "a power loss: leadership may move, its nodes count as down, and what their OS had not "
    "synced to disk is gone",
    "failover": "a failover: leadership may move",
    "unclean-election": "unclean leader election on: committed records may be lost",
    "none": "nothing: no rule depends on it",
}


@dataclass(frozen=True)
class FaultKind:
    """A family of faults as the history records it: what the oracle treats it as, its report colour."""

    name: str
    treated_as: Treatment
    colour: str


@dataclass(frozen=True)
class FaultDefinition:
    """One fault as the command line names it: its kind and its options with their defaults, and whether
    it needs an image kchaos built (`kchaos/kafka:<version>`, which carries the power cut's sync journal)."""

    name: str
    kind: FaultKind
    options: Mapping[str, str]
    needs_kchaos_image: bool = False
    #: Its kind when `target=zookeeper` hits the ZooKeeper node instead of brokers; None if it cannot.
    zookeeper_kind: FaultKind | None = None
    #: It acts on brokers' ZooKeeper sessions, so only a ZooKeeper-mode cluster has what it needs.
    needs_zookeeper: bool = False
    #: It kills a consumer-group member, so only a workload whose readers are group members has a target.
    needs_group_members: bool = False
    #: Its kind when its target is client processes (`producer-N`, `member-N`, `processor-N`, `clients`);
    #: None if it cannot hit them.
    client_kind: FaultKind | None = None
    #: The oldest release line it can run on, and why none before (None: every release kchaos runs).
    since: tuple[tuple[int, int], str] | None = None
    #: Whether a plan may start it while another fault holds (`--fault-overlap`): a fault that hits the
    #: nodes or client processes one target names, resolved as it starts, so it can keep off those another
    #: fault holds. Not the ones that move replicas or voters, damage files, fill a disk, change settings
    #: through the cluster, cut links of their own choosing or take down every node: they need the
    #: cluster whole, or all of it, while they run.
    overlaps: bool = False

    def kind_for(self, options: Mapping[str, str]) -> FaultKind:
        """The kind a spec of this fault records: a crash of ZooKeeper or of a client is no broker crash to
        the oracle."""
        target = options.get("target", "")
        if target == ZOOKEEPER_TARGET and self.zookeeper_kind is not None:
            return self.zookeeper_kind
        if is_client_target(target) and self.client_kind is not None:
            return self.client_kind
        return self.kind


#: Every kind, each in its own colour that says what it is; none is the report's grey for a kind this
#: table does not have (a history written elsewhere).
KINDS: dict[str, FaultKind] = {
    kind.name: kind
    for kind in (
        FaultKind("crash", "crash", "#d62728"),  # red: a node dies without warning
        FaultKind("power-loss", "power-loss", "#393b79"),  # indigo: a crash that takes the page cache too
        FaultKind("stop", "failover", "#8c564b"),  # brown: a node shut down in good order
        FaultKind("pause", "failover", "#9467bd"),  # purple: a node frozen in place
        FaultKind("partition", "failover", "#1f77b4"),  # blue: links cut
        FaultKind("degrade", "none", "#17becf"),  # light blue: links slowed, not cut
        FaultKind("unclean-election", "unclean-election", "#e377c2"),  # pink: a promise switched off
        FaultKind("reconfigure", "none", "#bcbd22"),  # olive: a setting changed
        # orange: the ZooKeeper node down or frozen. Brokers keep serving, but a session that expires
        # meanwhile moves the controller and the leaders of its broker, so leadership may move.
        FaultKind("zookeeper", "failover", "#ff7f0e"),
        # green: a client process dies, not a broker. The brokers and the log are untouched, so no rule of
        # the log's promises depends on it; what it costs a group is the group checks' to judge.
        FaultKind("client-crash", "none", "#2ca02c"),
        # light green: a client process frozen; grey-green: a client cut off from every broker. The log is
        # untouched, so neither excuses anything it lost.
        FaultKind("client-pause", "none", "#98df8a"),
        FaultKind("client-partition", "none", "#637939"),
        # tan: a replica moved to another broker; leadership moves when the leader's replica does.
        FaultKind("reassign", "failover", "#c49c94"),
        # rose: a broker joined or left the cluster, its replicas moved onto or off it by reassignment, a
        # drained broker shut down in good order. Leadership moves with a moved leader, nothing else.
        FaultKind("membership", "failover", "#e7969c"),
        # slate: a voter taken out of the KRaft quorum and put back. No broker is hit and no partition's
        # leadership moves with it, so it excuses nothing.
        FaultKind("quorum", "none", "#6b6ecf"),
        # plum: one file of one stopped replica damaged, then the node started again. It is killed, so
        # leadership may move (a failover); no rule excuses a loss for it: Kafka checks each batch's CRC when
        # it recovers a crashed broker's log, truncates at the damage and fetches the rest from the leader,
        # so with acks=all and another in-sync replica nothing acknowledged may be lost. It hits one node
        # (fault_spec refuses more): damage to every replica destroys what replication keeps, which no
        # promise covers, and treating it as a power loss would excuse what it did not do.
        FaultKind("corrupt", "failover", "#7b4173"),
        # dark yellow: a node's wall clock off. Kafka's replication does not run on wall clocks, and no
        # document lets a skewed clock lose an acknowledged write, so it excuses nothing.
        FaultKind("clock", "none", "#bd9e39"),
        # dark orange: a node's disk full. Kafka takes the log dir offline and, with none left, halts the
        # broker (KIP-112): to every rule it is a crash, the node down and its leaderships moved.
        FaultKind("disk-full", "crash", "#e6550d"),
    )
}

#: The target that names the ZooKeeper node (ZooKeeper mode only) instead of brokers.
ZOOKEEPER_TARGET = "zookeeper"

#: Every fault, with its options and their defaults. An empty default means "required or derived".
FAULTS: dict[str, FaultDefinition] = {
    fault.name: fault
    for fault in (
        # Process faults
        FaultDefinition(
            "kill",
            KINDS["crash"],
            {"target": "leader"},
            zookeeper_kind=KINDS["zookeeper"],
            client_kind=KINDS["client-crash"],
            overlaps=True,
        ),
        FaultDefinition(
            "power-loss",
            KINDS["power-loss"],
            {"target": "all", "tear": "none", "dirents": "kept"},
            needs_kchaos_image=True,
        ),
        FaultDefinition(
            "stop", KINDS["stop"], {"target": "leader"}, zookeeper_kind=KINDS["zookeeper"], overlaps=True
        ),
        FaultDefinition(
            "pause",
            KINDS["pause"],
            {"target": "leader"},
            zookeeper_kind=KINDS["zookeeper"],
            client_kind=KINDS["client-pause"],
            overlaps=True,
        ),
        FaultDefinition("rolling-restart", KINDS["stop"], {"target": "all"}),
        # Network faults (iptables in each node's namespace)
        FaultDefinition(
            "isolate",
            KINDS["partition"],
            {"target": "leader"},
            client_kind=KINDS["client-partition"],
            overlaps=True,
        ),
        FaultDefinition("cut-replication", KINDS["partition"], {}),
        FaultDefinition("halves", KINDS["partition"], {}),
        FaultDefinition("ring", KINDS["partition"], {}),
        FaultDefinition("bridge", KINDS["partition"], {}),
        FaultDefinition("cut-clients", KINDS["partition"], {"target": "leader"}, overlaps=True),
        FaultDefinition("one-way", KINDS["partition"], {"from": "leader", "to": "followers", "port": "any"}),
        FaultDefinition("cut-zookeeper", KINDS["partition"], {"target": "controller"}, needs_zookeeper=True),
        # Degraded links (tc netem; skipped with a clear message where the kernel has no netem)
        FaultDefinition(
            "latency", KINDS["degrade"], {"target": "leader", "ms": "200", "jitter": "50"}, overlaps=True
        ),
        FaultDefinition("loss", KINDS["degrade"], {"target": "leader", "percent": "20"}, overlaps=True),
        FaultDefinition("bandwidth", KINDS["degrade"], {"target": "leader", "kbit": "256"}, overlaps=True),
        # Configuration faults
        FaultDefinition("unclean-election", KINDS["unclean-election"], {"scope": "topic", "trigger": "true"}),
        FaultDefinition("min-isr", KINDS["reconfigure"], {"value": "1"}),
        # Membership faults (Kafka's reassignment tool)
        FaultDefinition(
            "reassign",
            KINDS["reassign"],
            {"replica": "follower", "interrupt": "false"},
            since=((2, 5), "the reassignment tool takes --bootstrap-server (KIP-455) from 2.5"),
        ),
        FaultDefinition(
            "add-broker",
            KINDS["membership"],
            {"replica": "follower"},
            since=((2, 5), "the reassignment tool takes --bootstrap-server (KIP-455) from 2.5"),
        ),
        FaultDefinition(
            "remove-broker",
            KINDS["membership"],
            {"target": "leader"},
            since=((2, 5), "the reassignment tool takes --bootstrap-server (KIP-455) from 2.5"),
        ),
        FaultDefinition(
            "remove-voter",
            KINDS["quorum"],
            {"target": "controller"},
            since=((3, 9), "KRaft quorums change their voters (KIP-853) from 3.9"),
        ),
        FaultDefinition(
            "add-voter",
            KINDS["quorum"],
            {},
            since=((3, 9), "KRaft quorums change their voters (KIP-853) from 3.9"),
        ),
        # Clock faults (the clock shift kchaos images preload into the broker)
        FaultDefinition(
            "clock",
            KINDS["clock"],
            {"target": "leader", "mode": "jump", "offset": "60000", "period": "1000"},
            needs_kchaos_image=True,
            overlaps=True,
        ),
        # A full disk (the library kchaos images preload fails writes under the log dirs)
        FaultDefinition("disk-full", KINDS["disk-full"], {"target": "leader"}, needs_kchaos_image=True),
        # Disk faults (a stopped replica's files, through Docker's archive API)
        FaultDefinition(
            "corrupt",
            KINDS["corrupt"],
            {"target": "followers", "file": "segment", "how": "flip", "bytes": "64"},
        ),
        # Client faults (the harness's own consumer-group members)
        FaultDefinition("kill-member", KINDS["client-crash"], {"target": "random"}, needs_group_members=True),
    )
}


def faults_taking_zookeeper() -> tuple[str, ...]:
    """The faults `target=zookeeper` can aim at the ZooKeeper node."""
    return tuple(name for name, fault in FAULTS.items() if fault.zookeeper_kind is not None)


def faults_taking_clients() -> tuple[str, ...]:
    """The faults a client target (`kchaos.model.client_targets`) can aim at client processes."""
    return tuple(name for name, fault in FAULTS.items() if fault.client_kind is not None)


def kinds_treated_as(*treatments: Treatment) -> frozenset[str]:
    """The names of the kinds the oracle treats as any of `treatments`."""
    return frozenset(kind.name for kind in KINDS.values() if kind.treated_as in treatments)


def options_text(options: Mapping[str, str]) -> str:
    """`target=leader ms=200`: the options with their defaults as a spec would spell them; `-` for none."""
    return " ".join(f"{key}={value}" for key, value in options.items()) or "-"


def listing() -> list[tuple[str, str, str, str]]:
    """(name, kind, options with defaults, what the oracle treats it as) per fault, for `kchaos faults`."""
    return [
        (fault.name, fault.kind.name, options_text(fault.options), TREATMENTS[fault.kind.treated_as])
        for fault in FAULTS.values()
    ]
