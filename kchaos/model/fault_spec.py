"""How faults are named on the command line, `name[:option=value]...` (e.g. `pause:target=controller`), and
the one parser that reads them into `FaultSpec`s against the definitions.

Pure (no Docker, no Kafka), so the configuration can validate a whole nemesis before anything starts and
hold its faults parsed. What a fault accepts is its definition's (`kchaos.model.faults`): its options check
their own values, the fault its options together and its fit to the run's shape; the checks every fault's
targets get are here.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import cache

from kchaos.model.client_targets import client_target_refusal, is_client_target
from kchaos.model.fault_definition import TIME, WHEN, ZOOKEEPER_TARGET, FaultSpec, RunShape
from kchaos.model.fault_options import SpecError, check_ascii
from kchaos.model.fault_table import FAULTS, aims
from kchaos.model.fault_targets import (
    CONTROLLERS_TARGET,
    COORDINATOR_TARGETS,
    FIRST_CONTROLLER_ID,
    NODE_OPTIONS,
    SUCCESSOR,
    node_ids,
)
from kchaos.model.fault_triggers import check_when
from kchaos.model.releases import Release

#: Every name the command line accepts for a fault.
FAULT_NAMES = tuple(FAULTS)

#: The first two faults' old names, now refused with their spelling today: two names for one fault made
#: matrices, run directory names and the report disagree about what ran.
RETIRED_NAMES = {"kill-leader": "kill:target=leader", "isolate-leader": "isolate:target=leader"}

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


@cache
def parse_spec(text: str) -> FaultSpec:
    """The fault `text` names, every option checked and defaults filled in.

    Cached: a spec is parsed once, wherever it is first read (the configuration, as it validates), and
    every later reader (the plan, the nemesis) gets the same object. A refusal is not cached."""
    name, *parts = text.strip().split(":")
    if name in RETIRED_NAMES:
        raise SpecError(f"fault {name!r} is retired; write {RETIRED_NAMES[name]} instead")
    if name not in FAULTS:
        raise SpecError(f"unknown fault {name!r}; choose from {', '.join(FAULT_NAMES)}")
    fault = FAULTS[name]
    options = fault.defaults
    given: dict[str, str] = {}
    when = TIME
    for part in parts:
        key, sep, value = part.partition("=")
        if sep and key == WHEN and WHEN not in options:
            if when != TIME:
                raise SpecError(f"{name}: option {WHEN} is given twice; give it once")
            check_when(name, value, fault.overlaps)
            when = value
            continue
        if not sep or key not in options:
            accepted = ", ".join([*(f"{k}=..." for k in options), f"{WHEN}=STATE"])
            raise SpecError(f"{name}: option {part!r} not understood; {name} takes {accepted}")
        if key in given:  # the last value silently won, so the run was not the one written
            raise SpecError(
                f"{name}: option {key} is given twice ({key}={given[key]}, then {key}={value}); give it once"
            )
        check_ascii(name, key, value, fault.defaults[key])
        given[key] = options[key] = value
    for option in fault.options:
        option.check(name, options[option.key], aims(name))
    fault.check_options(options)
    return FaultSpec(name, tuple(sorted(options.items())), tuple(sorted(fault.defaults.items())), when)


def fault_release_refusal(names: Iterable[str], kafka_version: str) -> str | None:
    """Why a fault of `names` cannot run on release `kafka_version` (its definition's `since`), with the
    fix; None when every one can."""
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
    return FAULTS[spec.name].needs_zookeeper or spec.target == ZOOKEEPER_TARGET


def check_cluster(spec: FaultSpec, shape: RunShape) -> None:
    """Refuses what a run of this shape does not have for `spec`: first what any fault's targets need (a
    node id above the brokers that is no dedicated controller, a ZooKeeper fault on a KRaft cluster, a
    coordinator the workload's clients do not use, a client process the run does not have, followers of
    one replica, a minority of fewer than three), then the fault's own check (its definition's
    `check_shape`). Apart from `parse_spec` because a spec alone is right for some run, just not this one.
    """
    fault = FAULTS[spec.name]
    if fault.needs_group_members:
        fault.check_shape(spec, shape)
        return
    if is_client_target(spec.target):
        refused = client_target_refusal(
            str(spec), spec.target, shape.client, shape.producers, shape.workload, shape.consumers
        )
        if refused is not None:
            raise SpecError(refused)
        return
    _check_roles(spec, shape)
    _check_nodes(spec, shape)
    fault.check_shape(spec, shape)


def _check_roles(spec: FaultSpec, shape: RunShape) -> None:
    """Refuses a coordinator the workload's clients do not use, ZooKeeper on a KRaft cluster, and the KRaft
    controllers on a ZooKeeper-mode one."""
    options = dict(spec.options)
    for key in NODE_OPTIONS:
        needs = COORDINATOR_TARGETS.get(options.get(key, ""))
        if needs is not None and shape.workload not in needs:
            which = " or ".join(needs)
            raise SpecError(
                f"{spec}: {key}={options[key]} is the coordinator of the clients of --workload {which}; "
                f"--workload {shape.workload} has none: use --workload {which} or another target"
            )
    if shape.metadata != "zookeeper" and hits_zookeeper(spec):
        raise SpecError(
            f"{spec}: a KRaft cluster has no ZooKeeper; pass --metadata zookeeper (releases before 4.0), "
            "or hit the KRaft controller quorum instead, e.g. kill:target=controller or "
            "isolate:target=controller"
        )
    for key in NODE_OPTIONS:
        if options.get(key) == CONTROLLERS_TARGET and shape.metadata != "kraft":
            raise SpecError(
                f"{spec}: {key}=controllers are the KRaft quorum's voters, and a ZooKeeper-mode cluster has "
                "none; use target=controller (the broker ZooKeeper elected) or target=zookeeper"
            )


def _check_nodes(spec: FaultSpec, shape: RunShape) -> None:
    """Refuses a node id that is no broker (numbered 1..brokers) and no dedicated controller (from
    FIRST_CONTROLLER_ID), and a target the cluster's shape leaves empty: followers of a partition with one
    replica, a minority of fewer than three nodes (one node of two is half, one of one is all)."""
    options = dict(spec.options)
    brokers = shape.brokers
    dedicated = range(FIRST_CONTROLLER_ID, FIRST_CONTROLLER_ID + shape.controllers)
    for key in NODE_OPTIONS:
        unknown = [n for n in node_ids(options.get(key, "leader")) if n > brokers and n not in dedicated]
        if unknown:
            also = f", and controllers {dedicated[0]} to {dedicated[-1]}" if shape.controllers else ""
            raise SpecError(
                f"{spec}: {key}={options[key]} names node {'+'.join(map(str, unknown))}, but the cluster "
                f"has {brokers} broker(s), numbered 1 to {brokers}{also}; name nodes from 1 to {brokers} or "
                "raise --brokers"
            )
    for key in NODE_OPTIONS:
        role = options.get(key)
        if role in ("followers", SUCCESSOR) and shape.replication_factor < 2:
            raise SpecError(
                f"{spec}: {key}={role} {'are' if role == 'followers' else 'is one of'} the partition's other "
                "replicas, and --replication-factor "
                f"{shape.replication_factor} has none; raise --replication-factor or use another {key}"
            )
        if options.get(key) == "minority" and brokers < 3:
            raise SpecError(
                f"{spec}: {key}=minority is fewer than half the nodes, and a cluster of {brokers} node(s) "
                "has no such group; use --brokers 3 or more, or name a node"
            )
