"""The run history: one row per event, written as it happens.

Rows are staged as NDJSON, in the order they were recorded, and handed to the OS at least every
`FLUSH_INTERVAL_S` (and whenever the writer closes, as it does on any exception), not after every row: a
flush per row cost as much as the Kafka client's own work per send. A harness killed outright therefore
loses at most the rows of the last `FLUSH_INTERVAL_S` (50 ms), and only a suffix of them: an `ok` row
can be lost while its `invoke` survives (the send is then indeterminate), never the other way round, and
no read survives the send it read. `finish()` turns the staging file into Parquet, the format the
checkers read. Readers accept either file, so a history left behind by a crashed run can still be
checked.
"""

from __future__ import annotations

import json
import operator
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from json.encoder import encode_basestring_ascii
from pathlib import Path
from typing import IO, Any, NamedTuple

import pyarrow as pa
import pyarrow.json as pajson
import pyarrow.parquet as pq

from kchaos.model.events import EVENT_FIELDS, Event, EventType, takes_fields_of
from kchaos.model.history_rows import first_bad_row
from kchaos.model.run_files import HISTORY_FILES, RunDir, irregular

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


def stage_to_parquet(files: RunDir) -> Path:
    """Converts the run's staged history into Parquet (the staging file is kept: it is the crash-safe
    copy)."""
    staging, target = files.history_staging, files.history_parquet
    if not staging.exists():
        if target.exists():
            return target
        raise FileNotFoundError(f"{files.path} has no {HISTORY_FILES}")
    table = read_staging(staging)
    tmp = target.with_suffix(".parquet.tmp")
    pq.write_table(table, tmp)
    tmp.replace(target)
    return target


def read_staging(path: Path) -> pa.Table:
    """The staged history as a table, parsed by Arrow's own JSON reader (several times faster than rows
    through Python, which matters from a million sends on).

    Only a torn last line is trimmed first, as `read_ndjson` skips it. Anything else Arrow refuses (a bad
    line further up, a value that does not fit the schema) is read again row by row, so the error names
    the file and the line exactly as `read_ndjson` does, or the table comes out the same way. Either way a
    row that is no history row (`kchaos.model.history_rows`) raises `HistoryCorrupt` naming its line, so
    a damaged staging file never becomes the Parquet history the checkers trust.
    """
    table = _read_staging_table(path)
    bad = first_bad_row(table)
    if bad is not None:
        raise HistoryCorrupt(path, _line_of(path, bad[0]), bad[1])
    return table


def _line_of(path: Path, position: int) -> int:
    """The line number of the row at `position` (blank lines hold no row)."""
    for seen, (number, _) in enumerate(_numbered_rows(path)):
        if seen == position:
            return number
    return position + 1


def _read_staging_table(path: Path) -> pa.Table:
    end = _intact_end(path)
    if end > 0:
        options = pajson.ParseOptions(explicit_schema=SCHEMA, unexpected_field_behavior="error")
        try:
            with pa.memory_map(str(path)) as mapped:  # the file itself, no copy of it in memory
                body = pa.BufferReader(mapped.read_buffer(end))
                table = pajson.read_json(body, parse_options=options).select(list(COLUMNS))
            table.validate(full=True)  # Arrow's reader takes bytes that are not UTF-8 as they come
            return table
        except pa.ArrowInvalid:
            pass
    return read_staging_by_rows(path)


def read_staging_by_rows(path: Path) -> pa.Table:
    """The staged history as a table, row by row through `read_ndjson`: the slow path, which names the
    line of any damage exactly (and what the benchmark sets Arrow's reader against)."""
    rows: dict[str, list[Any]] = {name: [] for name in COLUMNS}
    for number, row in _numbered_rows(path):
        unknown = sorted(set(row) - set(COLUMNS))
        if unknown:
            problem = f"has fields no history row has ({', '.join(unknown)}; a row has {', '.join(COLUMNS)})"
            raise HistoryCorrupt(path, number, problem)
        for name in COLUMNS:
            value = row.get(name)
            wrong = _value_problem(name, value)
            if wrong is not None:
                raise HistoryCorrupt(path, number, wrong)
            rows[name].append(value)
    return pa.Table.from_pydict(rows, schema=SCHEMA)


#: What each column's values are in JSON, and the range an integer column's Arrow type holds. Arrow would
#: truncate 1.5 to 1 and refuse "7" or a list with a message naming no line, so the slow path asks first.
_BITS = {pa.int32(): 32, pa.int64(): 64}


def _value_problem(name: str, value: Any) -> str | None:
    """Why `value` cannot be column `name` of a history row; None if it can (or is absent)."""
    if value is None:
        return None
    kind = SCHEMA.field(name).type
    if pa.types.is_integer(kind):
        if not isinstance(value, int) or isinstance(value, bool):
            return f"{name} {json.dumps(value)} is not a whole number"
        bits = _BITS[kind]
        if not -(2 ** (bits - 1)) <= value < 2 ** (bits - 1):
            return f"{name} {value} does not fit in a {bits}-bit whole number"
    elif pa.types.is_floating(kind):
        if not isinstance(value, int | float) or isinstance(value, bool):
            return f"{name} {json.dumps(value)} is not a number"
    elif not isinstance(value, str):
        return f"{name} {json.dumps(value)} is not a string"
    return None


def _intact_end(path: Path, chunk: int = 1 << 20) -> int:
    """The byte length of `path` without a torn last line: the whole file if its last non-blank line is a
    complete JSON value (an object, or something `read_ndjson` will refuse by name), else up to that line."""
    size = path.stat().st_size
    with path.open("rb") as fh:
        start = size
        while True:
            start = max(0, start - chunk)
            fh.seek(start)
            tail = fh.read(size - start)
            content = tail.rstrip()
            newline = content.rfind(b"\n")
            if newline >= 0 or start == 0:
                break
    last = content[newline + 1 :]
    if not last:
        return size
    try:
        json.loads(last)
    except UnicodeDecodeError:  # no torn write makes this: `read_ndjson` refuses it by name
        return size
    except json.JSONDecodeError:
        return start + newline + 1
    return size


class HistoryCorrupt(ValueError):
    """A history line that cannot be read and is not the torn last line of a crashed run.

    Only the last line can be torn (the harness died while writing it); a bad line anywhere else means the
    file was damaged afterwards, and guessing what it held could hide or invent a lost write.
    """

    def __init__(self, path: Path, line: int, problem: str, where: str = "line") -> None:
        self.path = path
        self.line = line
        why = "only a torn last line (a crashed run) is skipped, so " if where == "line" else ""
        super().__init__(
            f"{path} {where} {line}: {problem}; {why}this history is damaged and cannot be checked "
            "(restore it from a copy, or check another run directory)"
        )


class HistoryNotAFile(HistoryCorrupt):
    """A history path that holds no file to read: a directory, a FIFO, a socket, a device."""

    def __init__(self, path: Path, what: str) -> None:
        self.path = path
        self.line = 0
        ValueError.__init__(
            self,
            f"{path} {what}; a history is a regular file a run writes: remove it (or put the run's "
            "history file there) and check again, or check another run directory",
        )


def read_ndjson(path: Path) -> Iterator[dict[str, Any]]:
    """Yields rows of an NDJSON history; a torn last line (the harness died mid-write) is skipped.

    Raises `HistoryCorrupt` for any other line that is not a JSON object.
    """
    for _, row in _numbered_rows(path):
        yield row


def _numbered_rows(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """`read_ndjson`'s rows, each with its line number."""
    torn: tuple[int, str] | None = None
    with path.open("rb") as fh:
        for number, raw in enumerate(fh, start=1):
            line = raw.strip()
            if not line:
                continue
            if torn is not None:
                raise HistoryCorrupt(path, torn[0], f"not valid JSON ({torn[1]}) and not the last line")
            try:
                text = line.decode("utf-8")
            except UnicodeDecodeError as exc:  # kchaos writes ASCII only; a torn write cannot cause this
                problem = f"not UTF-8 ({exc.reason} at column {exc.start + 1})"
                raise HistoryCorrupt(path, number, problem) from exc
            try:
                row = json.loads(text)
            except json.JSONDecodeError as exc:
                torn = (number, f"{exc.msg} at column {exc.colno}")
                continue
            if not isinstance(row, dict):
                raise HistoryCorrupt(path, number, f"a JSON {type(row).__name__}, not a row (an object)")
            yield number, row


def history_path(run_dir: Path) -> Path:
    """The Parquet history of a run directory, converting a crashed run's staging file first."""
    files = RunDir(run_dir)
    parquet, staging = files.history_parquet, files.history_staging
    for path in (staging, parquet):
        kind = irregular(path)  # never opened: reading a FIFO blocks until something writes to it
        if kind is not None:
            raise HistoryNotAFile(path, f"is {kind}, not a file")
    if parquet.exists() and not staging.exists():
        return parquet
    if staging.exists():
        if not parquet.exists() or parquet.stat().st_mtime < staging.stat().st_mtime:
            return stage_to_parquet(files)
        return parquet
    raise FileNotFoundError(f"{run_dir} has no {HISTORY_FILES}")
