"""How faults are named on the command line: `name[:option=value]...`, e.g. `pause:target=controller`.

This module is pure (no Docker, no Kafka) so the configuration can validate a whole nemesis before
anything starts. The faults and their options are `kchaos.model.fault_table`'s, so `--help`, `kchaos faults`
and the error messages all list the same faults and options.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Literal

from kchaos.model.client_names import DEFAULT_CLIENT
from kchaos.model.client_targets import (
    CLIENTS_TARGET,
    MEMBER_NAMES,
    client_target_refusal,
    is_client_target,
)
from kchaos.model.corruption import BYTES_RANGE, CORRUPT_FILES, HOWS, METADATA_FILES
from kchaos.model.fault_table import FAULTS, ZOOKEEPER_TARGET, faults_taking_clients, faults_taking_zookeeper
from kchaos.model.releases import Release
from kchaos.model.workload_names import IN_A_GROUP, SENDS, TRANSACTIONAL

#: Who a fault hits. Numbers name nodes (`2`, or `1+3` for several).
#: What a one-way fault drops: every packet, or only the senders' answers on their inter-broker listener
#: (records a follower fetched, a controller request's acknowledgement) while everything else still flows.
ONE_WAY_PORTS = ("any", "inter-broker")

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

TARGETS = (
    "leader", "followers", "controller", "controllers", "random", "minority", "majority", "all",
    *COORDINATOR_TARGETS,
)  # fmt: skip
#: The target that names every KRaft controller: the dedicated ones (`--controllers`), or else every node
#: that votes in the quorum.
CONTROLLERS_TARGET = "controllers"
#: The first node id of a dedicated KRaft controller (`--controllers`): 101, 102, ..., apart from the
#: brokers' 1..N and the spares after them, so a node's id says which it is.
FIRST_CONTROLLER_ID = 101

#: Every name the command line accepts for a fault.
FAULT_NAMES = tuple(FAULTS)

#: The first two faults' old names, now refused with their spelling today: two names for one fault made
#: matrices, run directory names and the report disagree about what ran.
RETIRED_NAMES = {"kill-leader": "kill:target=leader", "isolate-leader": "isolate:target=leader"}

#: The whole-number options: the least and greatest value that means something, and what the number
#: counts. A value outside would be refused by `tc`, do nothing (`loss:percent=0`), or stop every write
#: for a reason other than the fault under test; better refused before a cluster starts.
NUMBERS: dict[str, tuple[int, int | None, str]] = {
    "bytes": (*BYTES_RANGE, "bytes of one file flipped, zeroed or cut off by corrupt"),
    "ms": (1, 60_000, "milliseconds of added delay; beyond a minute, cut the link with isolate instead"),
    "jitter": (0, 60_000, "milliseconds the delay varies by"),
    "percent": (1, 100, "percent of packets dropped"),
    "kbit": (1, None, "kilobits per second"),
    "value": (1, None, "the topic's min.insync.replicas while the fault holds"),
    "period": (100, 60_000, "milliseconds between a strobing clock's swings"),
}

#: The options that take true or false.
FLAGS = ("trigger", "interrupt")
#: How `clock` moves a clock, and how far `offset` may go in each mode (milliseconds; per second for drift):
#: a jump past a day would reach the topics' 7-day retention, and a drift past 1,000 ms a second would
#: stop or reverse time.
ClockMode = Literal["jump", "strobe", "drift"]
CLOCK_MODES: dict[ClockMode, int] = {"jump": 86_400_000, "strobe": 86_400_000, "drift": 1_000}
#: How `power-loss` leaves a file with unsynced bytes: cut at its synced size, cut inside its first unsynced
#: write, or that write's length kept with its second half zeros (powercut.c says how each is made).
TEARS = ("none", "cut", "zeros")
#: Whether `power-loss` keeps the names created since their directory was last synced, or loses them.
DIRENTS = ("kept", "lost")
#: Which replica `reassign` moves (of the fault partition) and `add-broker` (of every partition).
REASSIGNED_REPLICAS = ("follower", "leader")
#: The faults that start brokers the cluster holds in reserve (`--spare-brokers`), and those that need one.
NEEDS_SPARE = ("add-broker",)


@dataclass(frozen=True)
class FaultSpec:
    """A parsed fault: its name and every option, defaults filled in."""

    name: str
    options: tuple[tuple[str, str], ...]

    def option(self, key: str) -> str:
        return dict(self.options)[key]

    def __str__(self) -> str:
        defaults = FAULTS[self.name].options
        changed = [f"{k}={v}" for k, v in self.options if defaults.get(k) != v]
        return ":".join([self.name, *changed])


class SpecError(ValueError):
    """A fault spec names an unknown fault, option or target; the message lists what is accepted."""


#: The `--nemesis` value for a run without faults; alone, as no other fault list means it.
NO_FAULTS = "none"


def split_nemesis(text: str) -> tuple[str, ...]:
    """The faults a comma-separated `--nemesis` names; none for `none`.

    Refuses what used to silently mean something else: an empty list or an empty item (read as no faults,
    so a typo ran a run without faults that reported `ok`), and `none` listed with faults (which ran them).
    """
    parts = [part.strip() for part in text.split(",")]
    if not any(parts):
        raise SpecError(f"{text!r} names no fault; write {NO_FAULTS} for no faults")
    if not all(parts):
        raise SpecError(
            f"{text!r} has an empty item between commas; remove the extra comma (write {NO_FAULTS} for no "
            "faults)"
        )
    if NO_FAULTS in parts:
        if len(parts) > 1:
            faults = ",".join(part for part in parts if part != NO_FAULTS)
            raise SpecError(
                f"{NO_FAULTS} means no faults, yet {text!r} lists faults with it; write {NO_FAULTS} alone, "
                f"or only the faults ({faults})"
            )
        return ()
    return tuple(parts)


def parse_spec(text: str) -> FaultSpec:
    name, *parts = text.strip().split(":")
    if name in RETIRED_NAMES:
        raise SpecError(f"fault {name!r} is retired; write {RETIRED_NAMES[name]} instead")
    if name not in FAULTS:
        raise SpecError(f"unknown fault {name!r}; choose from {', '.join(FAULT_NAMES)}")
    options = dict(FAULTS[name].options)
    given: dict[str, str] = {}
    for part in parts:
        key, sep, value = part.partition("=")
        if not sep or key not in options:
            accepted = ", ".join(f"{k}=..." for k in FAULTS[name].options) or "no options"
            raise SpecError(f"{name}: option {part!r} not understood; {name} takes {accepted}")
        if key in given:  # the last value silently won, so the run was not the one written
            raise SpecError(
                f"{name}: option {key} is given twice ({key}={given[key]}, then {key}={value}); give it once"
            )
        given[key] = options[key] = value
    for key in ("target", "from", "to"):
        if key in options:
            if FAULTS[name].needs_group_members:
                check_member_target(name, options[key])
            else:
                check_target(name, options[key], key)
    for key, (low, high, what) in NUMBERS.items():
        if key in options:
            check_number(name, key, options[key], low, high, what)
    if name == "latency" and int(options["jitter"]) > int(options["ms"]):
        raise SpecError(
            f"latency: jitter ({options['jitter']}) exceeds ms ({options['ms']}): a delay cannot go below "
            f"0 ms; use jitter={options['ms']} or less, or raise ms"
        )
    for key in FLAGS:
        if key in options and options[key] not in ("true", "false"):
            raise SpecError(f"{name}: {key} must be true or false, got {options[key]!r}")
    if name == "one-way" and options["port"] not in ONE_WAY_PORTS:
        raise SpecError(
            f"one-way: port must be one of {', '.join(ONE_WAY_PORTS)}, got {options['port']!r}; "
            "inter-broker drops only what the senders answer on their inter-broker listener"
        )
    if name in ("reassign", "add-broker") and options["replica"] not in REASSIGNED_REPLICAS:
        of = "the fault partition" if name == "reassign" else "every partition of the topic"
        raise SpecError(
            f"{name}: replica must be {' or '.join(REASSIGNED_REPLICAS)} (which replica of {of} moves), got "
            f"{options['replica']!r}"
        )
    if name == "remove-broker":
        check_one_node(name, options["target"], "drains and decommissions one broker")
    if name == "remove-voter":
        check_one_node(name, options["target"], "takes one voter out of the KRaft quorum")
    if name == "power-loss":
        check_power_loss(options)
    if name == "clock":
        check_clock(options["mode"], options["offset"])
    if name == "corrupt":
        check_corrupt(options)
    if name == "unclean-election" and options["scope"] not in ("topic", "cluster"):
        raise SpecError("unclean-election: scope must be topic or cluster")
    return FaultSpec(name, tuple(sorted(options.items())))


def check_number(fault: str, key: str, value: str, low: int, high: int | None, what: str) -> None:
    """Refuses a numeric option that is not a whole number within its bounds, naming them and the default."""
    example = f"e.g. {fault}:{key}={FAULTS[fault].options[key]}"
    if not value.isdigit():
        raise SpecError(f"{fault}: {key} must be a whole number ({what}), got {value!r}; {example}")
    if int(value) < low or (high is not None and int(value) > high):
        bounds = f"from {low} to {high}" if high is not None else f"at least {low}"
        raise SpecError(f"{fault}: {key} must be {bounds} ({what}), got {value}; {example}")


def check_power_loss(options: dict[str, str]) -> None:
    """Refuses a way of tearing files or of treating directory entries that `power-loss` does not have."""
    if options["tear"] not in TEARS:
        raise SpecError(
            f"power-loss: tear must be one of {', '.join(TEARS)} (a file cut at its synced size, cut inside "
            f"its first unsynced write, or that write kept with zeros), got {options['tear']!r}; "
            "e.g. power-loss:tear=cut"
        )
    if options["dirents"] not in DIRENTS:
        raise SpecError(
            f"power-loss: dirents must be one of {', '.join(DIRENTS)} (whether names created since their "
            f"directory was last synced survive), got {options['dirents']!r}; e.g. power-loss:dirents=lost"
        )


def check_clock(mode: str, offset: str) -> None:
    """Refuses a clock mode kchaos does not have, and an offset that is not a signed whole number of
    milliseconds other than 0 within the mode's bound."""
    if mode not in CLOCK_MODES:
        raise SpecError(
            f"clock: mode must be one of {', '.join(CLOCK_MODES)} (a jump, a swing back and forth every "
            f"period ms, or a gain of offset ms each second), got {mode!r}"
        )
    bound = CLOCK_MODES[mode]
    digits = offset[1:] if offset[:1] in ("-", "+") else offset
    if not digits.isdigit() or int(offset) == 0 or abs(int(offset)) > bound:
        drift = mode == "drift"
        unit = "gained each second (negative: lost)" if drift else "ahead (negative: behind)"
        example = -100 if drift else -60000
        raise SpecError(
            f"clock: offset must be a whole number of milliseconds {unit} from -{bound} to {bound}, not 0, "
            f"for mode={mode}; got {offset!r}; e.g. clock:mode={mode}:offset={example}"
        )


#: The targets that may name more than one node, which `corrupt` refuses.
MANY_NODES = ("minority", "majority", "all", "controllers")


def check_corrupt(options: dict[str, str]) -> None:
    """Refuses a file or way of damage `corrupt` does not have, and a target that names several nodes: it
    damages one replica, since damage to every replica destroys what replication keeps (see its kind)."""
    if options["file"] not in CORRUPT_FILES:
        raise SpecError(
            f"corrupt: file must be one of {', '.join(CORRUPT_FILES)} (which file of the replica is "
            f"damaged), got {options['file']!r}; e.g. corrupt:file=index"
        )
    if options["how"] not in HOWS:
        raise SpecError(
            f"corrupt: how must be one of {', '.join(HOWS)} (bits inverted, the file cut, or bytes zeroed), "
            f"got {options['how']!r}; e.g. corrupt:how=truncate"
        )
    check_one_node(
        "corrupt",
        options["target"],
        "damages one replica (damage to every replica destroys what replication keeps, which Kafka promises "
        "nothing about)",
    )


def check_one_node(fault: str, target: str, why: str) -> None:
    """Refuses a target that may name several nodes, for a fault that hits one (`why` says what it does)."""
    if target in MANY_NODES or "+" in target:
        raise SpecError(
            f"{fault}: target={target} may name several nodes, and {fault} {why}; use followers (one "
            "drawn), leader, controller, random or one node id like 2"
        )


def check_target(fault: str, target: str, key: str = "target") -> None:
    if target in TARGETS:
        return
    if is_client_target(target):
        if key == "target" and fault in faults_taking_clients():
            return
        raise SpecError(
            f"{fault}: {key}={target} is a client process; client processes can be the target of "
            f"{', '.join(faults_taking_clients())} (e.g. pause:target=producer-0, "
            f"kill:target={CLIENTS_TARGET})"
        )
    if target == ZOOKEEPER_TARGET:
        if key == "target" and fault in faults_taking_zookeeper():
            return
        raise SpecError(
            f"{fault}: {key}=zookeeper not understood; the ZooKeeper node can be the target of "
            f"{', '.join(faults_taking_zookeeper())}, and cut-zookeeper cuts brokers off from it "
            "(cut-zookeeper:target=all is ZooKeeper isolated)"
        )
    parts = target.split("+")
    if all(part.isdigit() and int(part) > 0 for part in parts):
        if len({int(part) for part in parts}) < len(parts):
            raise SpecError(f"{fault}: target {target!r} names a node twice; name each node once")
        return
    raise SpecError(
        f"{fault}: target {target!r} not understood; use {', '.join(TARGETS)} or node ids like 2 or 1+3"
    )


def check_member_target(fault: str, target: str) -> None:
    """A member fault aims at `random` or one member by its process name (`member-1`, `processor-0`)."""
    if target != "random" and not MEMBER_TARGET.fullmatch(target):
        raise SpecError(
            f"{fault}: target {target!r} not understood; use random or a member's process name: member-N "
            "(--workload group) or processor-N (--workload eos), N from 0 to --consumers - 1"
        )


def node_ids(target: str) -> tuple[int, ...]:
    """The node ids a target names (`1+3` -> 1, 3); none for a role such as `leader`, ZooKeeper or a
    group member."""
    if target in TARGETS or target == ZOOKEEPER_TARGET or MEMBER_TARGET.fullmatch(target):
        return ()
    if is_client_target(target):
        return ()
    return tuple(int(part) for part in target.split("+"))


def targets_text() -> str:
    """What a target can be, for the help text and `kchaos faults`."""
    return (
        f"{', '.join(TARGETS)} or node ids like 2 or 1+3 (with --controllers the controllers are 101, 102, "
        "...; controllers is every KRaft controller, dedicated or not); in ZooKeeper mode also zookeeper "
        f"(the ZooKeeper node, for {', '.join(faults_taking_zookeeper())}); with --client java or "
        f"librdkafka-process also producer-N, member-N (--workload group), processor-N (--workload eos), "
        f"with librdkafka-process consumer-N (a reader of --workload sends or txn) or {CLIENTS_TARGET} "
        f"(client processes, for {', '.join(faults_taking_clients())})"
    )


def fault_release_refusal(names: Iterable[str], kafka_version: str) -> str | None:
    """Why a fault of `names` cannot run on release `kafka_version` (the table's `since`), with the fix;
    None when every one can."""
    release = Release.parse(kafka_version)
    for name in sorted(names):
        since = FAULTS[name].since
        if since is not None and release.parts[:2] < since[0]:
            line = ".".join(map(str, since[0]))
            return (
                f"nemesis: {name} needs Kafka {line} or later ({since[1]}); --kafka-version {kafka_version} "
                f"is older: use a release from {line} on, or leave {name} out"
            )
    return None


def hits_zookeeper(spec: FaultSpec) -> bool:
    """The fault aims at the ZooKeeper node, or at brokers' sessions with it."""
    return FAULTS[spec.name].needs_zookeeper or dict(spec.options).get("target") == ZOOKEEPER_TARGET


def check_cluster(
    spec: FaultSpec,
    brokers: int,
    replication_factor: int,
    metadata: str = "kraft",
    workload: str = SENDS,
    members: int = 0,
    client: str = DEFAULT_CLIENT,
    producers: int = 1,
    spare_brokers: int = 0,
    controllers: int = 0,
    spare_controllers: int = 0,
) -> None:
    """Refuses what a cluster of this shape does not have: a node id above `brokers` (nodes are numbered
    1..brokers), a min-isr value above the replication factor (every acks=all write would fail, whatever
    the fault), a ZooKeeper fault on a KRaft cluster, a coordinator the workload's clients do not use, a
    group member when the workload has no group or not that member (`members`: how many it runs), a
    client process when the run's clients are no processes (`client`) or not that one (`producers`), a
    membership fault without a broker to add or to move replicas to (`spare_brokers`), a KRaft controller
    target on a ZooKeeper-mode cluster, a node id that is no broker and no dedicated controller
    (`controllers` of them, ids from FIRST_CONTROLLER_ID), `add-voter` without a spare controller
    (`spare_controllers`) to make a voter.
    Apart from `parse_spec` because a spec alone is right for some run, just not this one.
    """
    options = dict(spec.options)
    if FAULTS[spec.name].needs_group_members:
        check_members(spec, workload, members)
        return
    target = options.get("target", "")
    if is_client_target(target):
        refused = client_target_refusal(str(spec), target, client, producers, workload, members)
        if refused is not None:
            raise SpecError(refused)
        return
    for key in ("target", "from", "to"):
        needs = COORDINATOR_TARGETS.get(options.get(key, ""))
        if needs is not None and workload not in needs:
            which = " or ".join(needs)
            raise SpecError(
                f"{spec}: {key}={options[key]} is the coordinator of the clients of --workload {which}; "
                f"--workload {workload} has none: use --workload {which} or another target"
            )
    if metadata != "zookeeper" and hits_zookeeper(spec):
        raise SpecError(
            f"{spec}: a KRaft cluster has no ZooKeeper; pass --metadata zookeeper (releases before 4.0), "
            "or hit the KRaft controller quorum instead, e.g. kill:target=controller or "
            "isolate:target=controller"
        )
    dedicated = range(FIRST_CONTROLLER_ID, FIRST_CONTROLLER_ID + controllers)
    for key in ("target", "from", "to"):
        if options.get(key) == CONTROLLERS_TARGET and metadata != "kraft":
            raise SpecError(
                f"{spec}: {key}=controllers are the KRaft quorum's voters, and a ZooKeeper-mode cluster has "
                "none; use target=controller (the broker ZooKeeper elected) or target=zookeeper"
            )
        unknown = [n for n in node_ids(options.get(key, "leader")) if n > brokers and n not in dedicated]
        if unknown:
            also = f", and controllers {dedicated[0]} to {dedicated[-1]}" if controllers else ""
            raise SpecError(
                f"{spec}: {key}={options[key]} names node {'+'.join(map(str, unknown))}, but the cluster "
                f"has {brokers} broker(s), numbered 1 to {brokers}{also}; name nodes from 1 to {brokers} or "
                "raise --brokers"
            )
    check_shape(spec, brokers, replication_factor)
    if spec.name == "reassign" and replication_factor < 2 and brokers <= replication_factor:
        raise SpecError(
            f"{spec}: reassign moves a replica onto a broker that holds none of the partition, or, when "
            "every broker holds one, removes a replica and adds it back; with --brokers "
            f"{brokers} and --replication-factor {replication_factor} the only replica can do neither: "
            "raise --brokers or --replication-factor to 2"
        )
    if spec.name == "remove-voter" and (metadata != "kraft" or (not controllers and brokers < 2)):
        raise SpecError(
            f"{spec}: takes a voter out of the KRaft quorum, which needs a KRaft cluster of 2 voters or more "
            "(with combined nodes, --brokers 2 or more; or --controllers)"
        )
    if spec.name == "add-voter" and (metadata != "kraft" or not controllers or spare_controllers < 1):
        raise SpecError(
            f"{spec}: makes a spare controller a voter of the KRaft quorum, and the run has none; pass "
            "--controllers 3 --spare-controllers 1 (KRaft)"
        )
    if spec.name in ("remove-broker", "remove-voter") and controllers:
        check_role_target(spec, brokers, controllers)
    if spec.name in ("add-broker", "remove-broker"):
        check_membership(spec, brokers, replication_factor, metadata, spare_brokers, controllers)
    if spec.name == "corrupt":
        check_corrupt_cluster(spec, replication_factor, metadata)
    if spec.name == "min-isr" and int(options["value"]) > replication_factor:
        raise SpecError(
            f"{spec}: value {options['value']} exceeds replication_factor ({replication_factor}): every "
            f"acks=all write would fail, whatever the fault; use value=1 to value={replication_factor}"
        )


def check_role_target(spec: FaultSpec, brokers: int, controllers: int) -> None:
    """Beside dedicated controllers, refuses `remove-broker` aimed at a controller (it holds no replica to
    drain) and `remove-voter` aimed at a broker (it has no vote to take)."""
    target = spec.option("target")
    ids = node_ids(target)
    names_controller = target == "controller" or any(n >= FIRST_CONTROLLER_ID for n in ids)
    if spec.name == "remove-broker" and names_controller:
        raise SpecError(
            f"{spec}: target={target} is a dedicated controller (--controllers {controllers}), which holds "
            f"no replica to drain; name a broker: leader, followers, random or a node id from 1 to {brokers}"
        )
    if spec.name == "remove-voter" and not names_controller:
        last = FIRST_CONTROLLER_ID + controllers - 1
        raise SpecError(
            f"{spec}: target={target} is a broker, and with --controllers {controllers} only the dedicated "
            f"controllers vote; use target=controller or a node id from {FIRST_CONTROLLER_ID} to {last}"
        )


def check_membership(
    spec: FaultSpec,
    brokers: int,
    replication_factor: int,
    metadata: str,
    spare_brokers: int,
    controllers: int,
) -> None:
    """Refuses `add-broker` without a spare broker to start, and `remove-broker` where the drained broker's
    replicas have nowhere to go (every other broker holds one of the partition: the run's topic with
    `replication_factor`, the internal topics with up to 3) and no spare can take them, or where, with KRaft,
    shutting a combined node down leaves its quorum without a majority."""
    if spec.name in NEEDS_SPARE and spare_brokers < 1:
        raise SpecError(
            f"{spec}: starts a spare broker the cluster was started with, and the run has none; pass "
            "--spare-brokers 1 (or more)"
        )
    if spec.name != "remove-broker":
        return
    internal = min(3, brokers)
    if spare_brokers < 1 and brokers - 1 < max(replication_factor, internal):
        raise SpecError(
            f"{spec}: the drained broker's replicas need brokers that hold none of their partition, and with "
            f"--brokers {brokers}, --replication-factor {replication_factor} (internal topics {internal}) "
            "every other broker holds one; pass --spare-brokers 1 (a spare joins to take them) or raise "
            "--brokers"
        )
    if metadata == "kraft" and not controllers and brokers < 3:
        raise SpecError(
            f"{spec}: with KRaft each of the {brokers} node(s) is a controller too, and shutting one down "
            "leaves the quorum without a majority; use --brokers 3 or more, or --controllers"
        )


def check_corrupt_cluster(spec: FaultSpec, replication_factor: int, metadata: str) -> None:
    """Refuses damage to the metadata log or `quorum-state` of a ZooKeeper-mode cluster (it has neither),
    and damage to the only replica of a partition (with one replica, that is every replica)."""
    file = spec.option("file")
    if file in METADATA_FILES and metadata != "kraft":
        raise SpecError(
            f"{spec}: file={file} is a KRaft file, and a ZooKeeper-mode cluster has none; use --metadata "
            "kraft, or file=segment, index, timeindex or leader-epoch-checkpoint"
        )
    if replication_factor < 2:
        raise SpecError(
            f"{spec}: with --replication-factor {replication_factor} the damaged replica is every replica "
            "of the partition, whose damage Kafka promises nothing about; use --replication-factor 2 or more"
        )


#: Faults that split the cluster and the fewest brokers each needs to: `halves` two sides, `ring` and
#: `bridge` three nodes (kchaos.nemesis.network skips them on fewer, so the run would report faults that
#: never ran).
SPLITS_NEED = {"halves": 2, "ring": 3, "bridge": 3}


def check_shape(spec: FaultSpec, brokers: int, replication_factor: int) -> None:
    """Refuses a target the cluster's shape leaves empty or meaningless, which is known before it starts:
    followers of a partition with one replica, a minority of fewer than three nodes (one node of two is
    half, one of one is all), a split of too few brokers."""
    options = dict(spec.options)
    for key in ("target", "from", "to"):
        if options.get(key) == "followers" and replication_factor < 2:
            raise SpecError(
                f"{spec}: {key}=followers are the partition's other replicas, and --replication-factor "
                f"{replication_factor} has none; raise --replication-factor or use another {key}"
            )
        if options.get(key) == "minority" and brokers < 3:
            raise SpecError(
                f"{spec}: {key}=minority is fewer than half the nodes, and a cluster of {brokers} node(s) "
                "has no such group; use --brokers 3 or more, or name a node"
            )
    fewest = SPLITS_NEED.get(spec.name)
    if fewest is not None and brokers < fewest:
        raise SpecError(
            f"{spec}: needs at least {fewest} nodes, the cluster has {brokers}; use --brokers {fewest} or "
            "more, or another fault"
        )


def check_members(spec: FaultSpec, workload: str, members: int) -> None:
    """Refuses a member fault whose workload runs no consumer group, or whose target is not one of its
    `members` members (named as that workload names them)."""
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
