"""The run history: one row per event, written as it happens.

Rows are staged as NDJSON, in the order they were recorded, and handed to the OS at least every
`FLUSH_INTERVAL_S` (and whenever the writer closes, as it does on any exception), not after every row: a
flush per row cost as much as the Kafka client's own work per send. A harness killed outright therefore
loses at most the rows of the last `FLUSH_INTERVAL_S` (50 ms), and only a suffix of them: an `ok` row
can be lost while its `invoke` survives (the send is then indeterminate), never the other way round, and
no read survives the send it read. `finish()` turns the staging file into Parquet, the format the
checkers read. Readers accept either file (`kchaos.model.history_files`), so a history left behind by a
crashed run can still be checked; a row's columns are `kchaos.model.history_schema`'s.
"""

from __future__ import annotations

import operator
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from json.encoder import encode_basestring_ascii
from pathlib import Path
from typing import IO, Any, NamedTuple

import pyarrow as pa

from kchaos.model.events import EVENT_FIELDS, Event, EventType, takes_fields_of
from kchaos.model.history_files import stage_to_parquet
from kchaos.model.history_schema import SCHEMA, detail_json
from kchaos.model.run_files import RunDir


def _opening(run_id: str) -> str:
    """The %-template of a line's opening: the row's columns that the history, not the event, supplies
    (index, time_ns and the wall time, spelled as `repr` spells it, are filled in per row)."""
    run_id_json = encode_basestring_ascii(run_id).replace("%", "%%")
    return f'{{"run_id":{run_id_json},"index":%d,"time_ns":%d,"wall_time":%s,'


def _text(value: str | None) -> str:
    return "null" if value is None else encode_basestring_ascii(value)


def _number(value: int | None) -> str:
    return "null" if value is None else str(operator.index(value))


def _spelled(name: str, value: Any) -> str:
    """Column `name`'s JSON for `value`, as every row spells it."""
    if name == "detail":
        return _text(detail_json(value))
    kind = SCHEMA.field(name).type
    if pa.types.is_string(kind):
        return _text(value)
    if pa.types.is_integer(kind):
        return _number(value)
    raise TypeError(f"history column {name}: no spelling for {kind}")


def _speller(parameters: str, varying: Mapping[str, str], fixed: Mapping[str, Any]) -> Callable[..., str]:
    """A function of `parameters` (Python source) that spells the rest of a line: the event's fields in
    column order, then the closing brace. Each field is either `varying`, spelled from the Python
    expression given for it, or `fixed`, spelled once here (an absent one is null).

    Generated, as `dataclasses` generates `__init__`: spelling each field through a loop cost twice as much
    per row, and recording threads share one interpreter lock. The None test is inline for text, where it
    saves a call per field on the busiest rows."""
    template, args = [], []
    for name in EVENT_FIELDS:
        if name in varying:
            template.append(f"{encode_basestring_ascii(name)}:%s")
            value = varying[name]
            if name != "detail" and pa.types.is_string(SCHEMA.field(name).type):
                args.append(f'("null" if {value} is None else _encode({value}))')
            else:
                _spelled(name, None)  # a column with no spelling fails here, not on the first row
                args.append(f"_spelled({name!r}, {value})" if name == "detail" else f"_number({value})")
        else:
            template.append(
                f"{encode_basestring_ascii(name)}:{_spelled(name, fixed.get(name))}".replace("%", "%%")
            )
    line = ",".join(template) + "}\n"
    source = f"def spell({parameters}):\n    return {line!r} % ({', '.join(args)},)\n"
    namespace: dict[str, Any] = {"_encode": encode_basestring_ascii, "_number": _number, "_spelled": _spelled}
    exec(source, namespace)  # source built above from the schema and the spelled fixed fields alone
    speller: Callable[..., str] = namespace["spell"]
    return speller


#: Any event's fields, from the event.
_spell_fields = _speller("event", {name: f"event.{name}" for name in EVENT_FIELDS}, {})
#: The fields that vary between the rows of one `RecordRows`, in `RecordRows.row`'s order.
RECORD_FIELDS = ("partition", "offset", "key", "value")


#: Longest a recorded row waits in the writer before it is handed to the OS.
FLUSH_INTERVAL_S = 0.05


class HistoryWriter:
    """Appends events with a total order (`index`) across all threads of a run.

    The recording thread spells the event as JSON first (so whatever cannot be spelled fails there), then
    takes one lock just long enough to number it, stamp its clocks and queue the line: `index` is the order
    of recording. `time_ns` is when it happened: now, or a client process's own stamp (its line arrives
    later, so its `time_ns` may precede rows before it). Writing happens outside that lock, in batches, by
    whoever flushes: a daemon thread every `FLUSH_INTERVAL_S`, `flush()`, or `finish()`: threads recording
    tens of thousands of rows a second used to queue behind each other's encoding, writes and flushes."""

    def __init__(self, files: RunDir, run_id: str) -> None:
        self.files = files
        self.run_id = run_id
        files.history.mkdir(parents=True, exist_ok=True)
        self._file: IO[str] | None = files.history_staging.open("a", encoding="utf-8")
        self._lock = threading.Lock()
        #: Held while a batch is written, so batches reach the file in the order they were taken.
        self._write_lock = threading.Lock()
        self._opening = _opening(run_id)
        self._queued: list[str] = []
        self._closed = False
        self._next_index = 0
        self.counts: dict[tuple[str, str], int] = {}
        threading.Thread(target=self._flush_periodically, name="history-flush", daemon=True).start()

    def _flush_periodically(self) -> None:
        while not self._closed:
            time.sleep(FLUSH_INTERVAL_S)
            self.flush()

    def write(self, event: Event, at_ns: int | None = None) -> int:
        """Records one event and returns its index; `at_ns`: when it happened by the host's monotonic clock,
        if not now (a client process's own stamp: `kchaos.model.stamped_rows`)."""
        return self.write_spelled([SpelledRow(_spell_fields(event), (event.f, event.type), at_ns)])

    def write_spelled(self, rows: Sequence[SpelledRow]) -> int:
        """Numbers, stamps and queues spelled rows (`write`'s, or `RecordRows.row`'s), in their order, under
        one hold of the lock and with one wall-clock reading: they were recorded together. Returns the last
        one's index.

        A client process's lines come in batches (each read of its output holds many), and a row's share
        of the lock, the clock and the float's spelling is worth saving at three rows per send."""
        with self._lock:
            if self._closed:
                raise RuntimeError("history is finished; no more events can be recorded")
            index = self._next_index
            opening, queued, counts = self._opening, self._queued, self.counts
            wall = repr(time.time())
            for fields, counted, at_ns in rows:
                now = time.monotonic_ns() if at_ns is None else at_ns
                queued.append(opening % (index, now, wall) + fields)
                counts[counted] = counts.get(counted, 0) + 1
                index += 1
            self._next_index = index
            return index - 1

    #: `write` for callers that spell the event: `record(process, type, f, topic=..., value=...)`.
    record = takes_fields_of(Event)(write)

    def count(self, f: str, type: EventType) -> int:
        with self._lock:
            return self.counts.get((f, type), 0)

    def flush(self) -> None:
        """Hands every event recorded so far to the OS, in the order of their index."""
        with self._write_lock:
            with self._lock:
                batch, self._queued = self._queued, []
            if self._file is None or not batch:
                return
            self._file.write("".join(batch))
            self._file.flush()

    def finish(self) -> Path:
        """Writes what is queued, closes the staging file and converts it to Parquet; safe to call more
        than once."""
        with self._lock:
            self._closed = True
        self.flush()
        with self._write_lock:
            if self._file is not None:
                self._file.close()
                self._file = None
        return stage_to_parquet(self.files)


class SpelledRow(NamedTuple):
    """A row as `HistoryWriter.write_spelled` takes it: its event's fields spelled (`RecordRows.row`), its
    (f, type) for the counts, and when it happened (None: now)."""

    fields: str
    counted: tuple[str, str]
    at_ns: int | None


class RecordRows:
    """One process's rows of one type and operation about single records of one topic (a send invoked, a
    send acknowledged, a record read), recorded with only what varies between them (`RECORD_FIELDS`).

    The same rows `HistoryWriter.write` records, for the few row kinds that come tens of thousands a
    second: the fixed fields are spelled once, and no `Event` is built per row. With `write_spelled`
    taking a client process's lines a batch at a time, recording a worker's line went from 9.5 to 2.7
    microseconds (a replay of 200,000 lines): the harness's recording had held the client processes to
    what one core of Python could parse (`bench/workload.py`)."""

    def __init__(
        self, history: HistoryWriter, process: str, type: EventType, f: str, topic: str | None
    ) -> None:
        self.history, self.process, self.topic = history, process, topic
        self._counted = (f, type)
        fixed = {"process": process, "type": type, "f": f, "topic": topic}
        self._spell = _speller(", ".join(RECORD_FIELDS), {name: name for name in RECORD_FIELDS}, fixed)

    def row(
        self, partition: int | None, offset: int | None, key: str | None, value: str | None, at_ns: int | None
    ) -> SpelledRow:
        """One row, spelled, for `HistoryWriter.write_spelled`; `at_ns`: when it happened (None: now)."""
        return SpelledRow(self._spell(partition, offset, key, value), self._counted, at_ns)
