"""Which partitions lost every replica that could lead them cleanly to a power loss, from the run's record.

A power loss takes with it whatever its nodes' OS had not synced to disk. Whether that loses acknowledged
writes depends on the partition: if one of its in-sync replicas (ISR) kept power, that replica holds every
acknowledged write and the partition is led on from it; if every member was down at once, no copy holds
what was not synced. Releases with Eligible Leader Replicas (ELR, KIP-966) add the replicas that left the
ISR while it was below `min.insync.replicas`: they too hold every committed record, and the controller
elects one of them when no ISR member is left. So the oracle needs each partition's ISR and ELR when the
power went, and takes them from the leader watcher's rows (`kchaos/harness/leaders.py`), never from a guess:
the partition's last leader-watch row recorded before the fault's start row. A partition with no such
row has replicas nobody knows, and the oracle says so rather than judge it; so does a row that names no
ELR (a watcher older than ELR) when a replica outside the ISR kept power.

The leader-watch rows are collected (one per leadership change, a handful per run); the rest is pure.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from kchaos.checkers.faults import DOWN_KINDS, FaultInterval
from kchaos.checkers.rules.oracle import POWER_LOSS_KINDS, IsrFate
from kchaos.model.events import LEADER, LEADER_WATCH_PROCESS
from kchaos.model.history_schema import parse_detail


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
class ReplicaRecord:
    """A partition's in-sync replicas, ELR and replicas as one leader-watch row gave them (`partition` as
    `by_partition` keys it). `elr` and `replicas` are None when the row does not name them."""

    index: int
    partition: str
    isr: frozenset[int]
    elr: frozenset[int] | None = None
    replicas: frozenset[int] | None = None


def _ids(values: Iterable[Any]) -> frozenset[int]:
    """The node ids among `values`; anything that is not one names no node."""
    found = set()
    for value in values:
        try:
            found.add(int(value))
        except (TypeError, ValueError):
            continue
    return frozenset(found)


def _named(detail: Mapping[str, Any], key: str) -> frozenset[int] | None:
    value = detail.get(key)
    return _ids(value) if isinstance(value, list) else None


def replica_records(rows: Iterable[Mapping[str, Any]]) -> list[ReplicaRecord]:
    """The rows that name an ISR, in index order; a row without one (a foreign or damaged detail) says
    nothing about it."""
    records = []
    for row in sorted(rows, key=lambda r: int(r["index"])):
        detail = parse_detail(row.get("detail"))
        isr = _named(detail, "isr")
        if isr is not None and row.get("partition") is not None:
            records.append(
                ReplicaRecord(
                    int(row["index"]), str(row["partition"]), isr,
                    _named(detail, "elr"), _named(detail, "replicas"),
                )
            )  # fmt: skip
    return records


def down_at(faults: Iterable[FaultInterval], index: int) -> frozenset[int]:
    """The nodes down (crashed or without power) just after history row `index`."""
    nodes: set[int] = set()
    for fault in faults:
        held = fault.start_index <= index and (fault.stop_index is None or index < fault.stop_index)
        if fault.kind in DOWN_KINDS and held:
            nodes |= _ids(fault.nodes)
    return frozenset(nodes)


def took_every_replica(loss: FaultInterval, members: frozenset[int], faults: Sequence[FaultInterval]) -> bool:
    """Every one of `members` was down at once while `loss` held, and `loss` cut the power of some of them.

    Members another power loss or a crash took down at the same moment count: once every replica that could
    lead is down, the first to return leads with what its disk held, and a replica that lost power holds
    only what was synced.
    """
    if not members or not members & _ids(loss.nodes):
        return False
    moments = [loss.start_index] + [
        fault.start_index
        for fault in faults
        if fault.kind in DOWN_KINDS
        and fault.start_index > loss.start_index
        and (loss.stop_index is None or fault.start_index < loss.stop_index)
    ]
    return any(members <= down_at(faults, moment) for moment in moments)


def fate_at(loss: FaultInterval, record: ReplicaRecord | None, faults: Sequence[FaultInterval]) -> IsrFate:
    """What `loss` did to the partition `record` (its last row before the loss; None: none) describes.

    An ISR recorded empty (no replica in sync) names no member that could have kept power. Without the ELR
    on record, a loss of the whole ISR is judged only if it took every replica: a replica outside the ISR
    that kept power may have been an eligible leader.
    """
    if record is None or not record.isr:
        return "unknown"
    if record.elr is not None:
        return "lost-power" if took_every_replica(loss, record.isr | record.elr, faults) else "kept-power"
    if not took_every_replica(loss, record.isr, faults):
        return "kept-power"
    if record.replicas and took_every_replica(loss, record.replicas, faults):
        return "lost-power"
    return "unknown"


def isr_fates(
    faults: Sequence[FaultInterval], rows: Iterable[Mapping[str, Any]], partitions: Iterable[str] = ()
) -> dict[str, IsrFate]:
    """Each partition's fate under the run's power losses (none: empty), for `partitions` and every
    partition the leader watcher recorded.

    `lost-power`: some power loss took its whole ISR and ELR (as recorded before it began). `kept-power`:
    before every power loss they were recorded, and each time a member stayed up. `unknown`: neither.
    """
    losses = [fault for fault in faults if fault.kind in POWER_LOSS_KINDS]
    if not losses:
        return {}
    records = replica_records(rows)
    fates: dict[str, IsrFate] = {}
    for key in dict.fromkeys([*partitions, *(record.partition for record in records)]):
        mine = [record for record in records if record.partition == key]
        found = {
            fate_at(loss, next((r for r in reversed(mine) if r.index < loss.start_index), None), faults)
            for loss in losses
        }
        fates[key] = next(fate for fate in ("lost-power", "unknown", "kept-power") if fate in found)
    return fates
