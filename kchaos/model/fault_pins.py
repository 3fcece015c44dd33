"""The nodes each fault of a run hit, read back from its history: what a replay pins its faults to.

A fault's target is resolved when it starts, against the cluster as it is then (`kchaos.nemesis.fault`):
planned again from the same seed, a run gets the same plan but not the same nodes, since a `followers` or
a `reassign`'s outgoing replica depends on where Kafka placed the topic's replicas and who leads. A replay
(`kchaos run --replay RUN_DIR`) therefore gives each fault the nodes the original's fault of the same key
hit, as its start row records them (`FaultRecord.nodes`), and the nemesis keeps to them while they are
still valid for the fault's target.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from kchaos.model.events import NEMESIS_PROCESS, START
from kchaos.model.fault_record import FaultRecord
from kchaos.model.history_files import history_path, reading_history
from kchaos.model.history_schema import parse_detail

#: The nodes a replay pins each fault to, by the fault's key (`kill#1`).
Pins = Mapping[str, tuple[int, ...]]


class PinsUnreadable(ValueError):
    """A start row whose nodes are not node ids: the history was not written by a kchaos run."""


def pinned_nodes(rows: Iterable[Mapping[str, Any]]) -> dict[str, tuple[int, ...]]:
    """Each fault key's nodes from its first start row (a key started twice is one fault), in the
    history's order; raises `PinsUnreadable` naming the key when a start row's nodes are not node ids."""
    pins: dict[str, tuple[int, ...]] = {}
    for row in sorted(rows, key=lambda row: int(row.get("index") or 0)):
        key = row.get("key")
        if row.get("process") != NEMESIS_PROCESS or row.get("value") != START or not key or key in pins:
            continue
        nodes = FaultRecord.read(parse_detail(row.get("detail"))).nodes
        if not all(isinstance(node, int) and not isinstance(node, bool) for node in nodes):
            raise PinsUnreadable(f"the start row of {key} names {list(nodes)}, not node ids")
        pins[str(key)] = tuple(nodes)
    return pins


def read_pins(run_dir: Path) -> dict[str, tuple[int, ...]]:
    """`pinned_nodes` of the run in `run_dir`, read from its history (a crashed run's staging file is
    converted into a temporary directory first: a replay only reads its original, and leaves it as it
    was). Raises FileNotFoundError without a history, `HistoryCorrupt` for a damaged one, and ValueError or
    OSError for a Parquet file that cannot be read."""
    with reading_history():
        table = pq.read_table(
            history_path(run_dir),
            columns=["index", "process", "key", "value", "detail"],
            filters=[("process", "=", NEMESIS_PROCESS)],
        )
    return pinned_nodes(table.to_pylist())
