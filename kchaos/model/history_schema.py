"""The shape of a history row: its columns and their types, and the `detail` column's JSON.

The writer (`kchaos.model.history`), the readers of its files (`kchaos.model.history_files`), the checkers
and the importers of other tools' logs (`kchaos.checkers.importers.verifiable`) must all agree on it, so a
row is defined here once and each of them asks for it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pyarrow as pa

from kchaos.model.events import EVENT_FIELDS, Event

#: Column order and types of a history: the run, the order and the clocks, then the `Event`'s fields.
#: `detail` carries JSON (fault targets, final-read bounds, assignments, leaders).
SCHEMA = pa.schema(
    [
        ("run_id", pa.string()),
        ("index", pa.int64()),
        ("time_ns", pa.int64()),
        ("wall_time", pa.float64()),
        ("process", pa.string()),
        ("type", pa.string()),
        ("f", pa.string()),
        ("topic", pa.string()),
        ("partition", pa.int32()),
        ("offset", pa.int64()),
        ("key", pa.string()),
        ("value", pa.string()),
        ("error", pa.string()),
        ("detail", pa.string()),
    ]
)
COLUMNS = tuple(SCHEMA.names)


def event_row(run_id: str, index: int, time_ns: int, wall_time: float, event: Event) -> dict[str, Any]:
    """One history row in the schema's column order; the single place that defines a row's shape."""
    row: dict[str, Any] = {"run_id": run_id, "index": index, "time_ns": time_ns, "wall_time": wall_time}
    row.update((name, getattr(event, name)) for name in EVENT_FIELDS)
    row["detail"] = detail_json(event.detail)
    return row


def detail_json(detail: Mapping[str, Any] | None) -> str | None:
    """A row's `detail` as the history stores it: JSON text with sorted keys."""
    return None if detail is None else json.dumps(detail, sort_keys=True)


def parse_detail(raw: Any) -> dict[str, Any]:
    """A row's `detail` read back as `event_row` wrote it (JSON text), or as a reader hands it over
    (already a mapping); anything else, empty or malformed, is no detail at all."""
    if not raw:
        return {}
    try:
        parsed = json.loads(raw) if isinstance(raw, str) else raw
    except json.JSONDecodeError:
        return {}
    return dict(parsed) if isinstance(parsed, Mapping) else {}
