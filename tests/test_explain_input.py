"""`kchaos explain` of a run directory it cannot trust: each damaged history is refused as `kchaos check`
refuses it (exit 2, naming the file and what is wrong), and explain, which only reads, writes nothing into
the run directory, not even a traceback. Whatever it prints from data is escaped: a record value from an
imported log cannot drive the terminal."""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from kchaos.model.run_files import RunDir
from kchaos.model.terminal_text import printable
from tests.test_cli_errors import invoke

KIP101 = Path(__file__).parent / "run_dirs" / "kip101-0.10.2.2"
PAYLOAD = "producer-0-44\x1b]0;PWNED\x07\x1b[2J"


def _snapshot(run_dir: Path) -> dict[str, str]:
    return {
        str(path.relative_to(run_dir)): hashlib.sha256(path.read_bytes()).hexdigest()
        if path.is_file()
        else ""
        for path in sorted(run_dir.rglob("*"))
    }


def _table(run_dir: Path) -> pa.Table:
    return pq.read_table(RunDir(run_dir).history_parquet)


def _drop_column(run_dir: Path) -> None:
    pq.write_table(_table(run_dir).drop_columns(["process"]), RunDir(run_dir).history_parquet)


def _wrong_type(run_dir: Path) -> None:
    table = _table(run_dir)
    at = table.schema.get_field_index("index")
    table = table.set_column(at, "index", pc.cast(table.column("index"), pa.string()))
    pq.write_table(table, RunDir(run_dir).history_parquet)


def _unknown_operation(run_dir: Path) -> None:
    table = _table(run_dir)
    at = table.schema.get_field_index("f")
    fs = table.column("f").to_pylist()
    fs[3] = "teleport"
    pq.write_table(table.set_column(at, "f", pa.array(fs, pa.string())), RunDir(run_dir).history_parquet)


def _truncated(run_dir: Path) -> None:
    path = RunDir(run_dir).history_parquet
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def _bad_json(run_dir: Path) -> None:
    files = RunDir(run_dir)
    files.history_parquet.unlink()
    files.history_staging.write_text('{"index": 0}\n{not json\n{"index": 2}\n', encoding="utf-8")


def _empty(run_dir: Path) -> None:
    pq.write_table(_table(run_dir).slice(0, 0), RunDir(run_dir).history_parquet)


def _no_history(run_dir: Path) -> None:
    shutil.rmtree(RunDir(run_dir).history)


CASES: dict[str, tuple[Callable[[Path], None], str]] = {
    "missing-column": (_drop_column, "has no column process"),
    "wrong-type": (_wrong_type, "history.parquet"),
    "unknown-operation": (_unknown_operation, "teleport"),
    "truncated": (_truncated, "is not a Parquet file"),
    "bad-json": (_bad_json, "history.ndjson line 2: not valid JSON"),
    "empty": (_empty, "holds no rows"),
    "no-history": (_no_history, "no history/history.parquet or history/history.ndjson"),
}


@pytest.mark.parametrize("case", CASES)
def test_a_damaged_history_is_refused_by_name_and_the_run_directory_is_left_alone(
    tmp_path: Path, case: str
) -> None:
    run_dir = tmp_path / "run"
    shutil.copytree(KIP101, run_dir)
    damage, named = CASES[case]
    damage(run_dir)
    before = _snapshot(run_dir)
    for args in ([], ["--record", "producer-0-44"]):
        result = invoke(["explain", str(run_dir), *args])
        assert result.exit_code == 2, result.output
        assert "Traceback" not in result.output and named in result.output, result.output
    assert _snapshot(run_dir) == before


def test_record_values_are_printed_escaped(tmp_path: Path) -> None:
    """A value carrying an OSC title and a clear-screen sequence is shown as escapes, not obeyed."""
    run_dir = tmp_path / "run"
    shutil.copytree(KIP101, run_dir)
    files = RunDir(run_dir)
    table = _table(run_dir)
    at = table.schema.get_field_index("value")
    values = pc.replace_substring_regex(table.column("value"), "^producer-0-44$", PAYLOAD)
    pq.write_table(table.set_column(at, "value", values), files.history_parquet)
    results = json.loads(files.results.read_text(encoding="utf-8"))
    files.results.write_text(json.dumps(results).replace('"producer-0-44"', json.dumps(PAYLOAD)))
    for args in ([], ["--record", PAYLOAD]):
        result = invoke(["explain", str(run_dir), *args])
        assert result.exit_code == 0, result.output
        assert "\x1b" not in result.output and "\x07" not in result.output
        assert "producer-0-44\\x1b]0;PWNED\\x07\\x1b[2J" in result.output


def test_printable_escapes_every_control_and_format_character() -> None:
    assert printable(PAYLOAD) == "producer-0-44\\x1b]0;PWNED\\x07\\x1b[2J"
    assert printable("a\u202eb\u200bc\td\ne") == "a\\u202eb\\u200bc\\x09d\\x0ae"
    assert printable("two\nlines", newlines=True) == "two\nlines"
    assert printable("plain, ünïcode ok") == "plain, ünïcode ok"
