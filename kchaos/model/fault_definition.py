"""What a fault is, as one value: its name, its kind, its typed options, where it can aim, what it needs of
the cluster, and the checks that refuse a spec no run of it could honour.

Each fault kind defines its faults in a module of its own under `kchaos.model.faults`, found by its name;
`kchaos.model.fault_table` collects them, the parser (`kchaos.model.fault_spec`), `kchaos faults` and the
docs read them there, the nemesis registers its classes against them and the oracle reads their kinds. So a
new fault is its definition, its nemesis class, its test and its paragraph in docs/faults.md, and nothing
else to edit.

Pure data and pure checks (no Docker, no Kafka): the configuration validates specs before anything starts.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Literal, Protocol, runtime_checkable

from kchaos.model.client_names import DEFAULT_CLIENT
from kchaos.model.client_targets import is_client_target
from kchaos.model.fault_options import Option
from kchaos.model.workload_names import SENDS

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

#: The target that names the ZooKeeper node (ZooKeeper mode only) instead of brokers.
ZOOKEEPER_TARGET = "zookeeper"

#: What a spec aims at, which picks the class that carries it out and the kind it records: brokers and
#: controllers (`nodes`), the ZooKeeper node, or client processes.
Aim = Literal["nodes", "zookeeper", "clients"]


@dataclass(frozen=True)
class FaultKind:
    """A family of faults as the history records it: what the oracle treats it as, its report colour."""

    name: str
    treated_as: Treatment
    colour: str


#: The option every fault takes (`kchaos.model.fault_triggers` says which states it names), and its
#: default: start on the plan's clock.
WHEN = "when"
TIME = "time"


@dataclass(frozen=True)
class FaultSpec:
    """A parsed fault: its name and every option, defaults filled in (`defaults` says which were given,
    so the spec prints as it was written)."""

    name: str
    options: tuple[tuple[str, str], ...]
    defaults: tuple[tuple[str, str], ...] = field(default=(), compare=False, repr=False)
    #: The state it fires on (`kchaos.model.fault_triggers`), or the plan's clock.
    when: str = TIME

    def option(self, key: str) -> str:
        return dict(self.options)[key]

    @property
    def target(self) -> str:
        """Its `target` option; empty for a fault that takes none."""
        return dict(self.options).get("target", "")

    def __str__(self) -> str:
        defaults = dict(self.defaults)
        changed = [f"{k}={v}" for k, v in self.options if defaults.get(k) != v]
        fired = [f"{WHEN}={self.when}"] if self.when != TIME else []
        return ":".join([self.name, *changed, *fired])


@runtime_checkable
class RunShape(Protocol):
    """What decides whether a spec fits a run: `RunConfig` has all of it."""

    @property
    def brokers(self) -> int: ...
    @property
    def replication_factor(self) -> int: ...
    @property
    def metadata(self) -> str: ...
    @property
    def workload(self) -> str: ...
    @property
    def consumers(self) -> int: ...
    @property
    def client(self) -> str: ...
    @property
    def producers(self) -> int: ...
    @property
    def spare_brokers(self) -> int: ...
    @property
    def controllers(self) -> int: ...
    @property
    def spare_controllers(self) -> int: ...


@dataclass(frozen=True)
class Shape:
    """A run's shape as plain values: a `RunShape` that can key a cache, or stand for a run in a test."""

    brokers: int
    replication_factor: int
    metadata: str = "kraft"
    workload: str = SENDS
    consumers: int = 0
    client: str = DEFAULT_CLIENT
    producers: int = 1
    spare_brokers: int = 0
    controllers: int = 0
    spare_controllers: int = 0

    @classmethod
    def of(cls, shape: RunShape) -> Shape:
        return cls(
            shape.brokers, shape.replication_factor, shape.metadata, shape.workload, shape.consumers,
            shape.client, shape.producers, shape.spare_brokers, shape.controllers, shape.spare_controllers,
        )  # fmt: skip


#: A fault's own check of its options together (`latency`'s jitter against its ms), given its options.
OptionsCheck = Callable[[Mapping[str, str]], None]
#: A fault's own check against the run's shape, after the checks every fault gets (`fault_spec`).
ShapeCheck = Callable[[FaultSpec, RunShape], None]


def _no_check(*_: object) -> None:
    """The check of a fault that needs none beyond its options' own."""


@dataclass(frozen=True)
class FaultDefinition:
    """One fault as the command line names it: its kind, its typed options, and what it needs."""

    name: str
    kind: FaultKind
    options: tuple[Option, ...] = ()
    #: It needs an image kchaos built (`kchaos/kafka:<version>`: the power cut's sync journal, the clock
    #: shift, the full disk's library).
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
    #: Its check of its options together, once each passed its own.
    check_options: OptionsCheck = _no_check
    #: Its check against the run's shape, once the checks every fault gets have passed.
    check_shape: ShapeCheck = _no_check

    @property
    def defaults(self) -> dict[str, str]:
        """Its options with their defaults (an empty default: required or derived)."""
        return {option.key: option.default for option in self.options}

    def aim(self, options: Mapping[str, str]) -> Aim:
        """What a spec of it with `options` hits: the ZooKeeper node or client processes where it can hit
        them and its target names them, else nodes."""
        target = options.get("target", "")
        if target == ZOOKEEPER_TARGET and self.zookeeper_kind is not None:
            return "zookeeper"
        if is_client_target(target) and self.client_kind is not None:
            return "clients"
        return "nodes"

    def kind_for(self, options: Mapping[str, str]) -> FaultKind:
        """The kind a spec of this fault records: a crash of ZooKeeper or of a client is no broker crash to
        the oracle."""
        aim = self.aim(options)
        if aim == "zookeeper" and self.zookeeper_kind is not None:
            return self.zookeeper_kind
        if aim == "clients" and self.client_kind is not None:
            return self.client_kind
        return self.kind
