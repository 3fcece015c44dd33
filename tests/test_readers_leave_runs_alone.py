"""Commands that only read a run leave it as they found it, a crashed run's history included.

A run that died before its history was converted holds only history/history.ndjson. `kchaos explain`,
`kchaos report` and the reading of `kchaos run --replay` convert it to Parquet to read it, and used to
leave that history.parquet in the run directory they were only reading. Now the conversion goes into a
temporary directory the reading command owns and removes (also when it fails); only `kchaos check`, whose
job is to write into the run, converts there. Each command's answer is the one it gives on the converted
run.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from pyspark.sql import SparkSession

from kchaos.model.fault_pins import read_pins
from kchaos.model.history_files import history_path, reading_history
from kchaos.model.run_files import RunDir
from kchaos.runner.cli import main
from tests.test_replay import Runs, original_run, replay, runs  # noqa: F401 (the fixture)

RUN_DIRS = Path(__file__).parent / "run_dirs"


def staging_only(run_dir: Path) -> Path:
    """`run_dir` as a run that crashed before converting leaves it: its history only as NDJSON."""
    files = RunDir(run_dir)
    rows = pq.read_table(files.history_parquet).to_pylist()
    files.history_staging.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    files.history_parquet.unlink()
    return run_dir


def contents(run_dir: Path) -> dict[str, bytes | None]:
    """Every path under `run_dir` with its bytes (None for a directory)."""
    return {
        str(path.relative_to(run_dir)): None if path.is_dir() else path.read_bytes()
        for path in sorted(run_dir.rglob("*"))
    }


@pytest.fixture
def temp_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The directory temporary files go to, empty, so what a command leaves there is seen."""
    root = tmp_path / "temp"
    root.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(root))
    return root


def left_in(temp_root: Path) -> list[str]:
    """The reading commands' temporary directories still in `temp_root`."""
    return [path.name for path in temp_root.glob("kchaos-history-*")]


def explained(run_dir: Path, *args: str) -> str:
    result = CliRunner().invoke(main, ["explain", str(run_dir), *args])
    assert result.exit_code == 0 and result.output.strip(), result.output
    return result.output.replace(str(run_dir), "RUN")


@pytest.mark.parametrize("recorded", ["default-4.3.1", "divergence-0.10.2.2", "kip101-0.10.2.2"])
def test_explain_of_a_crashed_run_leaves_it_byte_identical_and_tells_the_same_story(
    tmp_path: Path, temp_root: Path, recorded: str
) -> None:
    converted = tmp_path / "converted"
    shutil.copytree(RUN_DIRS / recorded, converted)
    crashed = staging_only(shutil.copytree(RUN_DIRS / recorded, tmp_path / "crashed"))
    before = contents(crashed)
    assert explained(crashed) == explained(converted)
    assert contents(crashed) == before, "explain wrote into the run directory it only reads"
    assert left_in(temp_root) == [], "explain left its converted history behind"


def test_explain_that_fails_after_converting_still_leaves_the_run_and_removes_its_copy(
    tmp_path: Path, temp_root: Path
) -> None:
    crashed = staging_only(shutil.copytree(RUN_DIRS / "default-4.3.1", tmp_path / "crashed"))
    RunDir(crashed).results.unlink()  # refused after the history was vetted, so after the conversion
    before = contents(crashed)
    result = CliRunner().invoke(main, ["explain", str(crashed)])
    assert result.exit_code == 2 and "has no results.json" in result.output, result.output
    assert contents(crashed) == before
    assert left_in(temp_root) == []


def test_report_of_a_crashed_run_writes_only_its_report(
    tmp_path: Path, temp_root: Path, spark: SparkSession
) -> None:
    crashed = staging_only(shutil.copytree(RUN_DIRS / "default-4.3.1", tmp_path / "crashed"))
    report = crashed / "report.html"
    report.unlink(missing_ok=True)
    before = contents(crashed)
    result = CliRunner().invoke(main, ["report", str(crashed)])
    assert result.exit_code == 0, result.output
    after = contents(crashed)
    assert (after.pop("report.html") or b"").startswith(b"<!doctype html>")
    assert after == before, "report wrote into the run directory more than its report"
    assert left_in(temp_root) == []


def test_a_replay_reads_a_crashed_originals_pins_without_writing_into_it(
    tmp_path: Path,
    temp_root: Path,
    runs: Runs,  # noqa: F811 (the fixture)
) -> None:
    original = original_run(tmp_path / "runs")
    staging_only(original.run_dir)
    before = contents(original.run_dir)
    result = replay(str(original.run_dir))
    assert result.exit_code == 0, result.output
    [(_, replayed)] = runs.given
    assert replayed is not None
    assert {key: pin.nodes for key, pin in replayed.pins.items()} == {"clock#1": (1, 3), "reassign#2": (1, 1)}
    assert contents(original.run_dir) == before, "the replay wrote into the original's directory"
    assert left_in(temp_root) == []
    assert read_pins(original.run_dir) == replayed.pins and contents(original.run_dir) == before


def test_outside_a_reading_command_the_conversion_is_the_runs_own(tmp_path: Path, temp_root: Path) -> None:
    """`kchaos check` (and the recording itself) converts into the run: the next reader finds it done."""
    crashed = staging_only(shutil.copytree(RUN_DIRS / "default-4.3.1", tmp_path / "crashed"))
    files = RunDir(crashed)
    with reading_history():
        staged = history_path(crashed)
        assert staged.is_relative_to(temp_root) and history_path(crashed) == staged  # converted once
        assert not files.history_parquet.exists()
    assert not staged.exists()
    assert history_path(crashed) == files.history_parquet and files.history_parquet.exists()
