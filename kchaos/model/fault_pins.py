"""What each fault of a run hit and chose, read back from its history: what a replay pins its faults to.

A fault's target is resolved when it starts, against the cluster as it is then (`kchaos.nemesis.fault`):
planned again from the same seed, a run gets the same plan but not the same nodes, since a `followers` or
a `reassign`'s outgoing replica depends on where Kafka placed the topic's replicas and who leads. A replay
(`kchaos run --replay RUN_DIR`) therefore gives each fault the nodes the original's fault of the same key
hit, as its start row records them (`FaultRecord.nodes`), and the choices it made beyond them (a one-way
cut's receivers, which replica `add-broker` moved of each partition, where a drained broker's replicas
went, which client processes it hit: `FaultRecord.chose`), as its start row and, for those made after it
started, its stop row record them; the nemesis keeps to them while they are still valid for the fault.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from kchaos.model.events import NEMESIS_PROCESS, START, STOP
from kchaos.model.fault_record import FaultRecord
from kchaos.model.history_files import history_path, reading_history
from kchaos.model.history_schema import parse_detail


@dataclass(frozen=True)
class FaultPin:
    """What the original's fault of a key hit and chose, which the replay's fault of that key keeps to."""

    #: The nodes it hit (`FaultRecord.nodes`).
    nodes: tuple[int, ...]
    #: Its choices beyond them, by name (`FaultRecord.chose`); empty when its rows record none.
    choices: Mapping[str, tuple[int | str, ...]] = field(default_factory=dict)


#: What a replay pins each fault to, by the fault's key (`kill#1`).
Pins = Mapping[str, FaultPin]


class PinsUnreadable(ValueError):
    """A start row whose nodes are not node ids, or a choice naming neither nodes nor client processes:
    the history was not written by a kchaos run."""


def _is_node(thing: Any) -> bool:
    return isinstance(thing, int) and not isinstance(thing, bool)


def _choices(key: str, record: FaultRecord) -> dict[str, tuple[int | str, ...]]:
    chose = dict(record.chose or {})
    for name, named in chose.items():
        if not all(_is_node(thing) or isinstance(thing, str) for thing in named):
            raise PinsUnreadable(
                f"the rows of {key} record its {name} as {list(named)}, not nodes or clients"
            )
    return chose


def pinned_faults(rows: Iterable[Mapping[str, Any]]) -> dict[str, FaultPin]:
    """Each fault key's nodes from its first start row (a key started twice is one fault), in the history's
    order, with the choices that row and the key's first stop row record (the stop row's are all it made
    by then); raises `PinsUnreadable` naming the key when its rows do not name nodes (or clients)."""
    nodes: dict[str, tuple[int, ...]] = {}
    choices: dict[str, dict[str, tuple[int | str, ...]]] = {}
    stopped: set[str] = set()
    for row in sorted(rows, key=lambda row: int(row.get("index") or 0)):
        key, phase = row.get("key"), row.get("value")
        if row.get("process") != NEMESIS_PROCESS or not key:
            continue
        key = str(key)
        if phase == START and key not in nodes:
            record = FaultRecord.read(parse_detail(row.get("detail")))
            if not all(_is_node(node) for node in record.nodes):
                raise PinsUnreadable(f"the start row of {key} names {list(record.nodes)}, not node ids")
            nodes[key] = tuple(record.nodes)
            choices[key] = _choices(key, record)
        elif phase == STOP and key in nodes and key not in stopped:
            stopped.add(key)
            choices[key].update(_choices(key, FaultRecord.read(parse_detail(row.get("detail")))))
    return {key: FaultPin(hit, choices[key]) for key, hit in nodes.items()}


def read_pins(run_dir: Path) -> dict[str, FaultPin]:
    """`pinned_faults` of the run in `run_dir`, read from its history (a crashed run's staging file is
    converted into a temporary directory first: a replay only reads its original, and leaves it as it
    was). Raises FileNotFoundError without a history, `HistoryCorrupt` for a damaged one, and ValueError or
    OSError for a Parquet file that cannot be read."""
    with reading_history():
        table = pq.read_table(
            history_path(run_dir),
            columns=["index", "process", "key", "value", "detail"],
            filters=[("process", "=", NEMESIS_PROCESS)],
        )
    return pinned_faults(table.to_pylist())
