"""History rows as the nemesis reads them while the run writes them: the run's staged history, read whole
lines at a time as it grows, keeping the rows an attack or a trigger asks about.

Apart from the attacks that read them (`kchaos.nemesis.txn_attacks`, `kchaos.nemesis.request_attacks`)
because a fault armed on state (`kchaos.nemesis.triggers`) reads them too, and the schedule that runs it
must not import the attacks built on it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kchaos.model.events import INVOKE, NEMESIS_PROCESS, TXN_ABORT, TXN_COMMIT
from kchaos.model.history import HistoryWriter

_ENDS = (TXN_COMMIT, TXN_ABORT)
#: A staged row's index, read without parsing the row (most rows are sends and reads no attack reads).
_INDEX = re.compile(rb'"index":(\d+)')


@dataclass(frozen=True)
class Row:
    """The columns of one history row an attack reads."""

    index: int
    process: str
    type: str
    f: str
    key: str | None
    value: str | None
    #: A nemesis row's detail (`HELD_THROUGH` in an attack's stop row); {} for others.
    detail: Mapping[str, Any] = field(default_factory=dict)
    #: When it happened (`kchaos.model.stamped_rows`: a client process's own stamp); None: not known.
    time_ns: int | None = None

    @classmethod
    def of(cls, row: Mapping[str, Any]) -> Row:
        detail = json.loads(row["detail"]) if row["process"] == NEMESIS_PROCESS and row["detail"] else {}
        return cls(
            row["index"],
            row["process"],
            row["type"],
            row["f"],
            row["key"],
            row["value"],
            detail,
            row["time_ns"],
        )


def is_end_txn(row: Row) -> bool:
    return row.f in _ENDS


def pending_end_txn(rows: Iterable[Row], process: str) -> Row | None:
    """The invoke row of `process`'s latest commit or abort if nothing has answered it yet: any later row
    of the same process, operation and transaction (ok, info or fail) is its outcome, and a new invoke
    replaces it."""
    pending: Row | None = None
    for row in rows:
        if row.process != process or not is_end_txn(row):
            continue
        if row.type == INVOKE:
            pending = row
        elif pending is not None and (row.f, row.key) == (pending.f, pending.key):
            pending = None
    return pending


class HistoryRows:
    """The rows an attack reads (every EndTxn row and every nemesis row), from the run's staged history as
    it grows; only whole lines are read, after the writer hands over what it batched."""

    def __init__(self, history: HistoryWriter, also: Callable[[Row], bool] | None = None) -> None:
        self.history = history
        #: Which other transaction rows to keep (a request attack reads its producer's begins too).
        self.also = also
        self.read_to = 0
        self.rows: list[Row] = []
        #: The index of the last row read, whatever its kind.
        self.last_index = -1

    def __call__(self) -> list[Row]:
        self.history.flush()
        with self.history.files.history_staging.open("rb") as fh:
            fh.seek(self.read_to)
            for line in fh:
                if not line.endswith(b"\n"):
                    break
                self.read_to += len(line)
                found = _INDEX.search(line)
                if found is not None:
                    self.last_index = max(self.last_index, int(found.group(1)))
                if b'"txn-' not in line and b'"nemesis"' not in line:
                    continue  # a send or a read: not what an attack reads, and most of the history
                row = Row.of(json.loads(line))
                if row.process == NEMESIS_PROCESS or is_end_txn(row) or (self.also and self.also(row)):
                    self.rows.append(row)
        return self.rows
