"""A run's history read back from its files: the staging NDJSON the writer leaves (torn at its end if the
harness died), converted into the Parquet the checkers read, and refused, naming the line, when damaged.

Apart from the writer (`kchaos.model.history`): a history left by a crashed run, or handed over by another
machine, is read with no writer alive, and the judge reads it without the recording's threads and clocks.

Where the conversion goes depends on who reads. `kchaos check` writes its results into the run, and
converts there too, so the next reader finds the Parquet ready. A command that only reads a run (`kchaos
explain`, `kchaos report`, a replay's reading of the original) reads inside `reading_history()`, which
converts into a temporary directory of its own, so the run it reads stays byte for byte as it was.
"""

from __future__ import annotations

import json
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.json as pajson
import pyarrow.parquet as pq

from kchaos.model.history_rows import first_bad_row
from kchaos.model.history_schema import COLUMNS, SCHEMA
from kchaos.model.run_files import HISTORY_FILES, PARQUET_NAME, RunDir, irregular, replacing


def stage_to_parquet(files: RunDir, target: Path | None = None) -> Path:
    """Converts the run's staged history into Parquet at `target`, by default the run's own history.parquet
    (the staging file is kept: it is the crash-safe copy)."""
    staging = files.history_staging
    target = files.history_parquet if target is None else target
    if not staging.exists():
        if target.exists():
            return target
        raise FileNotFoundError(f"{files.path} has no {HISTORY_FILES}")
    table = read_staging(staging)
    with replacing(target) as tmp:
        pq.write_table(table, tmp)
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
            return _converted(files)
        return parquet
    raise FileNotFoundError(f"{run_dir} has no {HISTORY_FILES}")


class _Reading:
    """A reading command's temporary directory and the histories converted into it, by run directory."""

    def __init__(self, where: Path) -> None:
        self.where = where
        self.converted: dict[Path, Path] = {}


#: The innermost `reading_history` block, if any. Not a context variable: the stories and Spark's helpers
#: may read the history from worker threads, which a context variable would not reach, and a command runs
#: one reading at a time.
_readings: list[_Reading] = []
_readings_lock = threading.Lock()


@contextmanager
def reading_history() -> Iterator[None]:
    """Within this block, a history that needs converting is converted into a temporary directory the
    block owns, removed when it ends (on an error too), and never into the run directory: what a command
    that only reads a run enters (`kchaos explain`, `kchaos report`, a replay reading its original). Each
    run's history is converted once per block, however many of its readers ask."""
    with tempfile.TemporaryDirectory(prefix="kchaos-history-") as where:
        reading = _Reading(Path(where))
        with _readings_lock:
            _readings.append(reading)
        try:
            yield
        finally:
            with _readings_lock:
                _readings.remove(reading)


def _converted(files: RunDir) -> Path:
    """The run's staging history converted: into the innermost reading block's directory if there is one,
    else into the run itself (what `kchaos check` and the recording do)."""
    with _readings_lock:
        reading = _readings[-1] if _readings else None
    if reading is None:
        return stage_to_parquet(files)
    key = files.path.resolve()
    done = reading.converted.get(key)
    if done is not None:
        return done
    target = reading.where / str(len(reading.converted)) / PARQUET_NAME
    target.parent.mkdir()
    reading.converted[key] = stage_to_parquet(files, target)
    return reading.converted[key]
