"""Which partitions lost every in-sync replica to a power loss, read from the run's own record.

A power loss takes with it whatever its nodes' OS had not synced to disk. Whether that loses acknowledged
writes depends on the partition: if one of its in-sync replicas (ISR) kept power, that replica holds every
acknowledged write and the partition is led on from it; if every member was down at once, no copy holds
what was not synced. So the oracle needs each partition's ISR when the power went, and takes it from the
leader watcher's rows (`workloads/leaders.py`), never from a guess: the ISR at a power loss is the one in
the partition's last leader-watch row recorded before the fault's start row. A partition with no such
row has an ISR nobody knows, and the oracle says so rather than judge it.

The leader-watch rows are collected (one per leadership change, a handful per run); the rest is pure.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from checkers.faults import DOWN_KINDS, FaultInterval
from checkers.oracle import POWER_LOSS_KINDS, IsrFate
from harness.events import LEADER, LEADER_WATCH_PROCESS
from harness.history import parse_detail


def leader_watch_rows(history: DataFrame) -> list[dict[str, Any]]:
    """The leader watcher's rows (index, partition, detail) in recorded order."""
    rows = (
        history.filter(
            F.col("process").eqNullSafe(LEADER_WATCH_PROCESS)
            & F.col("f").eqNullSafe(LEADER)
            & F.col("partition").isNotNull()
        )
        .select("index", "partition", "detail")
        .orderBy("index")
        .collect()
    )
    return [row.asDict() for row in rows]


@dataclass(frozen=True)
class IsrRecord:
    """A partition's in-sync replicas as one leader-watch row gave them (`partition` as `by_partition`
    keys it)."""

    index: int
    partition: str
    isr: frozenset[int]


def _ids(values: Iterable[Any]) -> frozenset[int]:
    """The node ids among `values`; anything that is not one names no node."""
    found = set()
    for value in values:
        try:
            found.add(int(value))
        except (TypeError, ValueError):
            continue
    return frozenset(found)


def isr_records(rows: Iterable[Mapping[str, Any]]) -> list[IsrRecord]:
    """The rows that name an ISR, in index order; a row without one (a foreign or damaged detail) says
    nothing about it."""
    records = []
    for row in sorted(rows, key=lambda r: int(r["index"])):
        isr = parse_detail(row.get("detail")).get("isr")
        if isinstance(isr, list) and row.get("partition") is not None:
            records.append(IsrRecord(int(row["index"]), str(row["partition"]), _ids(isr)))
    return records


def down_at(faults: Iterable[FaultInterval], index: int) -> frozenset[int]:
    """The nodes down (crashed or without power) just after history row `index`."""
    nodes: set[int] = set()
    for fault in faults:
        held = fault.start_index <= index and (fault.stop_index is None or index < fault.stop_index)
        if fault.kind in DOWN_KINDS and held:
            nodes |= _ids(fault.nodes)
    return frozenset(nodes)


def took_every_replica(loss: FaultInterval, isr: frozenset[int], faults: Sequence[FaultInterval]) -> bool:
    """Every member of `isr` was down at once while `loss` held, and `loss` cut the power of some of them.

    Members another power loss or a crash took down at the same moment count: once every in-sync replica is
    down, the first to return leads with what its disk held, and a replica that lost power holds only
    what was synced.
    """
    if not isr or not isr & _ids(loss.nodes):
        return False
    moments = [loss.start_index] + [
        fault.start_index
        for fault in faults
        if fault.kind in DOWN_KINDS
        and fault.start_index > loss.start_index
        and (loss.stop_index is None or fault.start_index < loss.stop_index)
    ]
    return any(isr <= down_at(faults, moment) for moment in moments)


def isr_fates(
    faults: Sequence[FaultInterval], rows: Iterable[Mapping[str, Any]], partitions: Iterable[str] = ()
) -> dict[str, IsrFate]:
    """Each partition's fate under the run's power losses (none: empty), for `partitions` and every
    partition the leader watcher recorded.

    `lost-power`: some power loss took its whole ISR (as recorded before it began). `kept-power`: before
    every power loss its ISR was recorded, and each time a member stayed up. `unknown`: neither.
    """
    losses = [fault for fault in faults if fault.kind in POWER_LOSS_KINDS]
    if not losses:
        return {}
    records = isr_records(rows)
    fates: dict[str, IsrFate] = {}
    for key in dict.fromkeys([*partitions, *(record.partition for record in records)]):
        mine = [record for record in records if record.partition == key]
        # An ISR recorded empty (no replica in sync) names no member that could have kept power.
        isrs = [
            next((r.isr for r in reversed(mine) if r.index < loss.start_index), None) or None
            for loss in losses
        ]
        found = zip(losses, isrs, strict=True)
        if any(isr is not None and took_every_replica(loss, isr, faults) for loss, isr in found):
            fates[key] = "lost-power"
        else:
            fates[key] = "unknown" if None in isrs else "kept-power"
    return fates
