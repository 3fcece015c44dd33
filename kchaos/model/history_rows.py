"""What a history row must be before anything judges it: the vocabulary of kchaos/model/events.py, whole.

A checker reads a row it does not understand as nothing: a row missing its `type` is no send, a send with a
negative offset is one no read can match, an operation no checker knows is silently ignored. Each would
turn a damaged history into a verdict about Kafka (lost writes that are a bad file's, or none where the
file hid them), so a history with such a row is refused, naming the row, before Spark starts.

The checks run on the whole table at once (Arrow compute), so a history of a million rows costs
milliseconds; only the first bad row is then spelled out in Python.
"""

from __future__ import annotations

import math
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from kchaos.model.events import INVOKE, NEMESIS_PROCESS, OPERATIONS, OUTCOMES
from kchaos.model.fault_spec import FAULT_NAMES, RETIRED_NAMES
from kchaos.model.plurals import counted

#: The columns every row has a value in: the order, the clocks, and who did what with what outcome.
REQUIRED = ("index", "time_ns", "wall_time", "process", "type", "f")
TYPES = (INVOKE, *OUTCOMES)
#: Nemesis rows name their fault as `f`; fault names change between releases, so an older run's rows are
#: not refused for one, while any other process's `f` must be an operation of the vocabulary.
_KNOWN_F = (*OPERATIONS, *FAULT_NAMES, *RETIRED_NAMES)
#: Columns that are counts from zero when present (`time_ns` reads a monotonic clock, never negative).
_NATURAL = ("partition", "offset", "time_ns")
#: The wall times a run can have, in seconds since 1970: not before it, and not past the year 5000. A
#: history with a time beyond is damaged, and a report's time axis spanning it would mean nothing.
WALL_TIME_RANGE = (0.0, 1e11)


def _column(table: pa.Table, name: str) -> pa.ChunkedArray:
    if name in table.column_names:
        return table.column(name)
    return pa.chunked_array([pa.nulls(table.num_rows)])


def _bad(table: pa.Table) -> pa.ChunkedArray:
    """True for each row that breaks a rule of `row_problem`."""
    bad = pc.is_null(_column(table, REQUIRED[0]))
    for name in REQUIRED[1:]:
        bad = pc.or_(bad, pc.is_null(_column(table, name)))
    kind = _column(table, "type")
    bad = pc.or_(bad, pc.invert(pc.fill_null(pc.is_in(kind, pa.array(TYPES, pa.string())), False)))
    f, process = _column(table, "f"), _column(table, "process")
    unknown = pc.invert(pc.fill_null(pc.is_in(f, pa.array(_KNOWN_F, pa.string())), False))
    nemesis = pc.fill_null(pc.equal(process, pa.scalar(NEMESIS_PROCESS, pa.string())), False)
    bad = pc.or_(bad, pc.and_(unknown, pc.invert(nemesis)))
    for name in _NATURAL:
        bad = pc.or_(bad, pc.fill_null(pc.less(_column(table, name), 0), False))
    wall = _column(table, "wall_time")
    if pa.types.is_floating(wall.type):
        bad = pc.or_(bad, pc.fill_null(pc.invert(pc.is_finite(wall)), False))
    if pa.types.is_floating(wall.type) or pa.types.is_integer(wall.type):
        low, high = WALL_TIME_RANGE
        outside = pc.or_(pc.less(wall, low), pc.greater_equal(wall, high))
        bad = pc.or_(bad, pc.fill_null(outside, False))
    return pc.fill_null(bad, True)


def first_bad_row(table: pa.Table) -> tuple[int, str] | None:
    """The position of the first row that is not a history row, and what is wrong with it; None if all are."""
    if table.num_rows == 0:
        return None
    position = pc.index(_bad(table), True).as_py()
    if position < 0:
        return first_repeated_index(table.column("index")) if "index" in table.column_names else None
    row = table.slice(position, 1).to_pylist()[0]
    return position, row_problem(row) or "not a history row"


def first_repeated_index(index: pa.ChunkedArray) -> tuple[int, str] | None:
    """The position of the first row whose `index` an earlier row has too, and what is wrong; None if the
    indexes are unique. The run numbers each row once: a repeat means rows were copied or spliced in, and
    the checkers' order of events (which came first) is no longer the run's."""
    if len(index) < 2:
        return None
    order = pc.sort_indices(index)
    ordered = pc.take(index, order)
    repeats = pc.equal(ordered.slice(1), ordered.slice(0, len(ordered) - 1))
    first = pc.index(pc.fill_null(repeats, False), True).as_py()
    if first < 0:
        return None
    positions = sorted((order[first].as_py(), order[first + 1].as_py()))
    value = ordered[first].as_py()
    return positions[1], (
        f"index {value} repeats the index of the row {counted(positions[1] - positions[0], 'row')} earlier "
        "(a run numbers its rows once each, so rows were copied or spliced in)"
    )


def row_problem(row: dict[str, Any]) -> str | None:
    """What makes `row` no history row, with the fix implied by the rule; None for a good row."""
    missing = [name for name in REQUIRED if row.get(name) is None]
    if missing:
        return (
            f"lacks {', '.join(missing)} (every history row has {', '.join(REQUIRED)}; "
            "see kchaos/model/events.py)"
        )
    if row["type"] not in TYPES:
        return f"type {row['type']!r} is not one of {', '.join(TYPES)}"
    if row["f"] not in _KNOWN_F and row["process"] != NEMESIS_PROCESS:
        return (
            f"operation (f) {row['f']!r} of process {row['process']!r} is none that kchaos records "
            f"({', '.join(OPERATIONS)})"
        )
    for name in _NATURAL:
        value = row.get(name)
        if value is not None and value < 0:
            counts = (
                "a monotonic clock counts from 0" if name == "time_ns" else f"Kafka numbers {name}s from 0"
            )
            return f"{name} {value} is negative; {counts}"
    wall = row["wall_time"]
    if isinstance(wall, float) and not math.isfinite(wall):
        return f"wall_time {wall} is no time"
    low, high = WALL_TIME_RANGE
    if not low <= wall < high:
        return (
            f"wall_time {wall} is no time a run can have (seconds since 1970, from {low:.0f} to {high:.0e})"
        )
    return None
