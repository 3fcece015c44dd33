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

from checkers.frames import is_nemesis

START = "start"
STOP = "stop"
CRASH = "crash"
UNKNOWN_KIND = "unknown"


@dataclass(frozen=True)
class Fault:
    """One fault instance from its start to its stop (`stop_*` is None if it was never stopped)."""

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
    """The nemesis start/stop rows of a history, in recorded order."""
    rows = (
        history.filter(is_nemesis() & F.col("value").isin(START, STOP))
        .select("index", "wall_time", "f", "key", "value", "detail")
        .orderBy("index")
        .collect()
    )
    return [row.asDict() for row in rows]


def _detail(raw: Any) -> dict[str, Any]:
    if not raw:
        return {}
    try:
        parsed = json.loads(raw) if isinstance(raw, str) else raw
    except json.JSONDecodeError:
        return {}
    return dict(parsed) if isinstance(parsed, Mapping) else {}


def fault_intervals(events: Iterable[Mapping[str, Any]]) -> list[Fault]:
    """Pairs starts with stops per fault key, in index order.

    A second start of a key that is already active, or a stop of one that is not (the idempotent heal at
    exit stops everything), changes nothing: they do not begin or end a fault.
    """
    open_faults: dict[str, Fault] = {}
    done: list[Fault] = []
    for event in sorted(events, key=lambda e: int(e["index"])):
        key = str(event.get("key") or event["f"])
        if event["value"] == START and key not in open_faults:
            detail = _detail(event.get("detail"))
            nodes = detail.get("nodes") or []
            open_faults[key] = Fault(
                key=key,
                f=str(event["f"]),
                kind=str(detail.get("kind") or UNKNOWN_KIND),
                nodes=tuple(nodes) if isinstance(nodes, list) else (nodes,),
                description=detail.get("description"),
                start_index=int(event["index"]),
                start_wall=event.get("wall_time"),
            )
        elif event["value"] == STOP and key in open_faults:
            started = open_faults.pop(key)
            done.append(replace(started, stop_index=int(event["index"]), stop_wall=event.get("wall_time")))
    return sorted([*done, *open_faults.values()], key=lambda fault: fault.start_index)


def fault_kinds(faults: Iterable[Fault]) -> frozenset[str]:
    return frozenset(fault.kind for fault in faults)


def max_concurrent_crashed(faults: Iterable[Fault]) -> int:
    """The most distinct nodes down at once from `crash` faults.

    Nodes are counted, not faults: two overlapping crashes of one node leave one node down. A crash that
    names no nodes counts as one node of its own, so it is never silently ignored.
    """
    changes: list[tuple[int, int, tuple[str, ...]]] = []
    for fault in faults:
        if fault.kind != CRASH:
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
