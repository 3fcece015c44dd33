"""The faults that actually happened in a run, rebuilt from the nemesis rows of its history.

The oracle judges a run by what was done to it, not by what its schedule intended: a schedule may be cut
short, and a fault that never started cannot excuse a loss. Each nemesis start/stop pair (matched by the
fault instance `key`) becomes one interval; a start with no stop lasted to the end of the run.

Nemesis rows are a handful per run, so they are collected; everything else here is pure.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from kchaos.checkers.passes.frames import is_nemesis
from kchaos.model.events import HARNESS_PROCESS, NEMESIS_PROCESS, SKIPPED, START, STOP
from kchaos.model.fault_record import FaultRecord
from kchaos.model.fault_spec import FAULT_NAMES, RETIRED_NAMES
from kchaos.model.fault_table import kinds_treated_as
from kchaos.model.history_schema import parse_detail

#: The kinds whose nodes count towards every replica crashed at once (the fault table's crashes). A power
#: loss is left out on purpose: whether one took every replica is judged per partition, from the in-sync
#: replicas it hit (`kchaos.checkers.power_loss`); counted here, nodes of a power loss that left a partition's
#: in-sync replica powered would excuse that partition's losses.
CRASH_KINDS = kinds_treated_as("crash")
#: The kinds whose nodes are down while the fault holds: crashes and power losses.
DOWN_KINDS = kinds_treated_as("crash", "power-loss")


@dataclass(frozen=True)
class FaultInterval:
    """One fault instance from its start to its stop, as read back from a history (`stop_*` is None if it
    was never stopped)."""

    key: str
    f: str
    kind: str
    nodes: tuple[Any, ...]
    description: str | None
    start_index: int
    start_wall: float | None
    stop_index: int | None = None
    stop_wall: float | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "f": self.f,
            "kind": self.kind,
            "nodes": list(self.nodes),
            "description": self.description,
            "start_wall": self.start_wall,
            "stop_wall": self.stop_wall,
        }


def nemesis_events(history: DataFrame) -> list[dict[str, Any]]:
    """The rows that say what was done to the run and how far it got, in recorded order: the nemesis's
    starts, stops and skips, and the harness's phase rows. A handful per run, collected in one pass."""
    rows = (
        history.filter(
            (is_nemesis() & F.col("value").isin(START, STOP, SKIPPED))
            | F.col("process").eqNullSafe(HARNESS_PROCESS)
        )
        .select("index", "wall_time", "process", "type", "f", "key", "value", "error", "detail")
        .orderBy("index")
        .collect()
    )
    return [row.asDict() for row in rows]


@dataclass(frozen=True)
class FaultApplication:
    """The faults a run asked for against those it applied.

    A fault planned but skipped (no netem in the kernel, a target that names no node) or never reached
    (the run stopped first) tested nothing; a verdict that does not say so overstates what was tested.
    """

    requested: tuple[str, ...]
    applied: tuple[str, ...]
    skipped: tuple[tuple[str, str], ...]  # (key, why)
    not_reached: tuple[str, ...]
    #: In a replay, the faults that hit or chose otherwise than the original's of their key, and why
    #: (`re_chosen`).
    re_chosen: tuple[tuple[str, str], ...] = ()
    #: The named scenario the run drove, if any: it asked for faults by running, whether or not it began
    #: one (an attack that found nothing to attack stops before its first fault).
    scenario: str | None = None

    @property
    def none_applied(self) -> bool:
        """Faults were asked for and not one of them happened: nothing the run shows was tested."""
        return (bool(self.requested) or self.scenario is not None) and not self.applied

    def describe(self) -> str:
        """`faults: 1 of 2 applied (latency#2 skipped: no sch_netem)`."""
        if not self.requested:
            if self.scenario is not None:
                return f"faults: the scenario {self.scenario} began none"
            return "faults: none requested"
        missed = [f"{key} skipped: {why}" for key, why in self.skipped]
        if self.not_reached:
            missed.append(f"{', '.join(self.not_reached)} not reached: the run stopped first")
        line = f"faults: {len(self.applied)} of {len(self.requested)} applied"
        return f"{line} ({'; '.join(missed)})" if missed else line

    def to_json(self) -> dict[str, Any]:
        return {
            "requested": list(self.requested),
            "applied": list(self.applied),
            "skipped": [{"key": key, "reason": why} for key, why in self.skipped],
            "not_reached": list(self.not_reached),
            "re_chosen": [{"key": key, "reason": why} for key, why in self.re_chosen],
            "description": self.describe(),
        }


#: Why a request fault (hold, drop, delay) that began counts as not applied: its stop row's `taken` is 0.
TOOK_NONE = "took no request: none of those it aims at came while it was in force"


def fault_application(
    planned: Iterable[str], events: Iterable[Mapping[str, Any]], scenario: str | None = None
) -> FaultApplication:
    """What happened to each planned fault key; faults a crafted scenario began count as requested too,
    and a named `scenario` that began none applied none of what it asked for. A request fault that took
    no request did not happen either (`TOOK_NONE`)."""
    applied: list[str] = []
    skipped: dict[str, str] = {}
    re_chosen: dict[str, str] = {}
    for event in sorted(events, key=lambda e: int(e["index"])):
        if not _is_nemesis_row(event):
            continue
        key = str(event.get("key") or event["f"])
        starts = event["value"] == START and key not in applied
        if starts:
            applied.append(key)
        if starts or (event["value"] == STOP and key in applied):
            # a choice made after the start (add-broker's moves) gives its reason on the stop row, with
            # the start's: the stop row's is the whole of it
            detail = parse_detail(event.get("detail"))
            why = FaultRecord.read(detail).re_chosen
            if why:
                re_chosen[key] = why
            if event["value"] == STOP and detail.get("taken") == 0:
                # a request fault whose requests never came while it was in force did nothing
                applied.remove(key)
                skipped[key] = TOOK_NONE
        elif event["value"] == SKIPPED:
            skipped.setdefault(key, skip_reason(str(event.get("error") or "no reason recorded")))
    planned = list(planned)
    for key in planned:
        name = key.split("#", 1)[0]
        if key not in applied and name not in FAULT_NAMES and name not in RETIRED_NAMES:
            # not "the run stopped first": no run of this kchaos could have applied it
            skipped.setdefault(key, f"unknown fault {name!r} in schedule.json: this kchaos does not know it")
    requested = list(dict.fromkeys([*planned, *applied, *skipped]))
    return FaultApplication(
        requested=tuple(requested),
        applied=tuple(key for key in requested if key in applied),
        skipped=tuple((key, skipped[key]) for key in requested if key in skipped and key not in applied),
        not_reached=tuple(key for key in requested if key not in applied and key not in skipped),
        re_chosen=tuple(re_chosen.items()),
        scenario=scenario,
    )


def skip_reason(error: str) -> str:
    """The short reason of a skip message: `latency: no sch_netem; ...` -> `no sch_netem`."""
    head = error.split(";", 1)[0].strip()
    prefix, sep, rest = head.partition(": ")
    return rest if sep and " " not in prefix else head


def _is_nemesis_row(event: Mapping[str, Any]) -> bool:
    return bool(event.get("process", NEMESIS_PROCESS) == NEMESIS_PROCESS)


def fault_intervals(events: Iterable[Mapping[str, Any]]) -> list[FaultInterval]:
    """Pairs starts with stops per fault key, in index order.

    A second start of a key that is already active, or a stop of one that is not (the idempotent heal at
    exit stops everything), changes nothing: they do not begin or end a fault.
    """
    open_faults: dict[str, FaultInterval] = {}
    done: list[FaultInterval] = []
    for event in sorted(events, key=lambda e: int(e["index"])):
        if not _is_nemesis_row(event):
            continue
        key = str(event.get("key") or event["f"])
        if event["value"] == START and key not in open_faults:
            record = FaultRecord.read(parse_detail(event.get("detail")))
            open_faults[key] = FaultInterval(
                key=key,
                f=str(event["f"]),
                kind=record.kind,
                nodes=record.nodes,
                description=record.description or None,
                start_index=int(event["index"]),
                start_wall=event.get("wall_time"),
            )
        elif event["value"] == STOP and key in open_faults:
            started = open_faults.pop(key)
            done.append(replace(started, stop_index=int(event["index"]), stop_wall=event.get("wall_time")))
    return sorted([*done, *open_faults.values()], key=lambda fault: fault.start_index)


def fault_kinds(faults: Iterable[FaultInterval]) -> frozenset[str]:
    return frozenset(fault.kind for fault in faults)


def max_concurrent_crashed(faults: Iterable[FaultInterval]) -> int:
    """The most distinct nodes down at once from crash faults (`CRASH_KINDS`).

    Nodes are counted, not faults: two overlapping crashes of one node leave one node down. A crash that
    names no nodes counts as one node of its own, so it is never silently ignored.
    """
    changes: list[tuple[int, int, tuple[str, ...]]] = []
    for fault in faults:
        if fault.kind not in CRASH_KINDS:
            continue
        nodes = tuple(json.dumps(node, sort_keys=True) for node in fault.nodes) or (f"<{fault.key}>",)
        changes.append((fault.start_index, +1, nodes))
        if fault.stop_index is not None:
            changes.append((fault.stop_index, -1, nodes))
    down: Counter[str] = Counter()
    most = 0
    for _, delta, nodes in sorted(changes, key=lambda change: (change[0], change[1])):
        for node in nodes:
            down[node] += delta
        most = max(most, sum(1 for count in down.values() if count > 0))
    return most
