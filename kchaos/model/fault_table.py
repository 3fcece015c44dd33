"""Every fault kchaos has, collected from its definitions (`kchaos.model.faults`, one module per kind of
fault): by name, the kinds they record, and the listings `kchaos faults` and docs/faults.md show.

The modules are found, not listed: a new fault's module is read as soon as it exists. Spec parsing, the
schedule (through the classes `kchaos.nemesis` registers against these names), the oracle and the report
all read this table, so what a fault is (`kill` on the command line, `crash` to the oracle, red in the
report) is said once, in its definition.

Pure data (no Docker, no Kafka): the configuration validates specs against it before anything starts.
The kind is what a run's history records (`detail.kind`) and what the oracle and the report read back, so
a history keeps meaning the same thing however faults are renamed on the command line.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Mapping
from functools import cache

from kchaos.model import faults as definitions
from kchaos.model.fault_definition import TREATMENTS, FaultDefinition, FaultKind, FaultSpec, Treatment
from kchaos.model.fault_options import Aims


def _definitions() -> list[FaultDefinition]:
    """Every module's definitions, the modules in their `ORDER`."""
    modules = [
        importlib.import_module(f"{definitions.__name__}.{info.name}")
        for info in pkgutil.iter_modules(definitions.__path__)
    ]
    modules.sort(key=lambda module: int(module.ORDER))
    return [fault for module in modules for fault in module.DEFINITIONS]


#: Every fault, by the name `--nemesis` takes, in listing order.
FAULTS: dict[str, FaultDefinition] = {fault.name: fault for fault in _definitions()}


def _kinds() -> dict[str, FaultKind]:
    """The faults' own kinds in their order, then those they record aimed at ZooKeeper or clients."""
    found: dict[str, FaultKind] = {}
    for aimed in ("kind", "zookeeper_kind", "client_kind"):
        for fault in FAULTS.values():
            kind = getattr(fault, aimed)
            if kind is not None:
                found.setdefault(kind.name, kind)
    return found


#: Every kind a fault records, each in its own colour that says what it is; none is the report's grey for a
#: kind this table does not have (a history written elsewhere).
KINDS: dict[str, FaultKind] = _kinds()


def kind_of(spec: FaultSpec) -> str:
    """The kind a fault of `spec` records (as aimed: a crash of ZooKeeper or of a client is no broker
    crash to the oracle), whether it started or was skipped."""
    return FAULTS[spec.name].kind_for(dict(spec.options)).name


def faults_taking_zookeeper() -> tuple[str, ...]:
    """The faults `target=zookeeper` can aim at the ZooKeeper node."""
    return tuple(name for name, fault in FAULTS.items() if fault.zookeeper_kind is not None)


def faults_taking_clients() -> tuple[str, ...]:
    """The faults a client target (`kchaos.model.client_targets`) can aim at client processes."""
    return tuple(name for name, fault in FAULTS.items() if fault.client_kind is not None)


@cache
def aims(name: str = "") -> Aims:
    """What fault `name`'s target options accept beyond nodes (none named: what any fault's could)."""
    fault = FAULTS.get(name)
    return Aims(
        takes_clients=fault is not None and fault.client_kind is not None,
        takes_zookeeper=fault is not None and fault.zookeeper_kind is not None,
        client_faults=faults_taking_clients(),
        zookeeper_faults=faults_taking_zookeeper(),
    )


def kinds_treated_as(*treatments: Treatment) -> frozenset[str]:
    """The names of the kinds the oracle treats as any of `treatments`."""
    return frozenset(kind.name for kind in KINDS.values() if kind.treated_as in treatments)


def options_text(options: Mapping[str, str]) -> str:
    """`target=leader ms=200`: the options with their defaults as a spec would spell them; `-` for none."""
    return " ".join(f"{key}={value}" for key, value in options.items()) or "-"


def listing() -> list[tuple[str, str, str, str]]:
    """(name, kind, options with defaults, what the oracle treats it as) per fault, for `kchaos faults`."""
    return [
        (fault.name, fault.kind.name, options_text(fault.defaults), TREATMENTS[fault.kind.treated_as])
        for fault in FAULTS.values()
    ]


def option_values() -> list[tuple[str, str]]:
    """(option, what it accepts) for every option some fault takes, in the table's order, each said once;
    an option whose key an earlier fault's option of other values has is listed as `key of fault, ...`."""
    said: dict[str, str] = {}
    others: dict[tuple[str, str], list[str]] = {}
    for name, fault in FAULTS.items():
        for option in fault.options:
            accepted = option.accepts(aims())
            if said.setdefault(option.key, accepted) != accepted:
                others.setdefault((option.key, accepted), []).append(name)
    listed = list(said.items())
    listed += [(f"{key} of {', '.join(names)}", accepted) for (key, accepted), names in others.items()]
    return listed
