"""The run history: one row per event, written as it happens.

Rows are staged as NDJSON and flushed after every row, so a crash of the harness loses nothing that was
already acknowledged by Kafka and recorded; `finish()` turns the staging file into Parquet, the format the
checkers read. Readers accept either file, so a history left behind by a crashed run can still be checked.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import IO, Any

import pyarrow as pa
import pyarrow.json as pajson
import pyarrow.parquet as pq

from harness.events import EVENT_FIELDS, Event, EventType, takes_fields_of
from harness.run_files import HISTORY_FILES, PARQUET_NAME, STAGING_NAME, RunDir

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
    row["detail"] = json.dumps(event.detail, sort_keys=True) if event.detail is not None else None
    return row


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


class HistoryWriter:
    """Appends events with a total order (`index`) across all threads of a run.

    One lock orders the index and the write, so `index` is the order in which events were recorded.
    """

    def __init__(self, history_dir: Path, run_id: str) -> None:
        self.history_dir = history_dir
        self.run_id = run_id
        history_dir.mkdir(parents=True, exist_ok=True)
        self._staging_path = history_dir / STAGING_NAME
        self._file: IO[str] | None = self._staging_path.open("a", encoding="utf-8")
        self._lock = threading.Lock()
        self._next_index = 0
        self.counts: dict[tuple[str, str], int] = {}

    def write(self, event: Event) -> int:
        """Records one event and returns its index."""
        with self._lock:
            if self._file is None:
                raise RuntimeError("history is finished; no more events can be recorded")
            index = self._next_index
            self._next_index += 1
            row = event_row(self.run_id, index, time.monotonic_ns(), time.time(), event)
            self._file.write(json.dumps(row, separators=(",", ":")) + "\n")
            self._file.flush()
            key = (event.f, event.type)
            self.counts[key] = self.counts.get(key, 0) + 1
            return index

    #: `write` for callers that spell the event: `record(process, type, f, topic=..., value=...)`.
    record = takes_fields_of(Event)(write)

    def count(self, f: str, type: EventType) -> int:
        with self._lock:
            return self.counts.get((f, type), 0)

    def finish(self) -> Path:
        """Closes the staging file and converts it to Parquet; safe to call more than once."""
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None
        return stage_to_parquet(self.history_dir)


def stage_to_parquet(history_dir: Path) -> Path:
    """Converts `history.ndjson` into `history.parquet` (kept: the staging file is the crash-safe copy)."""
    staging = history_dir / STAGING_NAME
    target = history_dir / PARQUET_NAME
    if not staging.exists():
        if target.exists():
            return target
        raise FileNotFoundError(f"no history in {history_dir}: expected {STAGING_NAME} or {PARQUET_NAME}")
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
    the file and the line exactly as `read_ndjson` does, or the table comes out the same way.
    """
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
    rows: dict[str, list[Any]] = {name: [] for name in COLUMNS}
    for row in read_ndjson(path):
        for name in COLUMNS:
            rows[name].append(row.get(name))
    return pa.Table.from_pydict(rows, schema=SCHEMA)


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

    def __init__(self, path: Path, line: int, problem: str) -> None:
        self.path = path
        self.line = line
        super().__init__(
            f"{path} line {line}: {problem}; only a torn last line (a crashed run) is skipped, so this "
            "history is damaged and cannot be checked"
        )


def read_ndjson(path: Path) -> Iterator[dict[str, Any]]:
    """Yields rows of an NDJSON history; a torn last line (the harness died mid-write) is skipped.

    Raises `HistoryCorrupt` for any other line that is not a JSON object.
    """
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
            yield row


def history_path(run_dir: Path) -> Path:
    """The Parquet history of a run directory, converting a crashed run's staging file first."""
    files = RunDir(run_dir)
    parquet, staging = files.history_parquet, files.history_staging
    if parquet.exists() and not staging.exists():
        return parquet
    if staging.exists():
        if not parquet.exists() or parquet.stat().st_mtime < staging.stat().st_mtime:
            return stage_to_parquet(files.history)
        return parquet
    raise FileNotFoundError(f"{run_dir} has no {HISTORY_FILES}")
