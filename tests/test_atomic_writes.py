"""Every file kchaos writes into a run directory after the run is written whole or not at all: a full disk
midway leaves the old file as it was and no temporary file beside it (`kchaos.model.run_files.replacing`).

The failure is simulated as a full disk does it: part of the bytes go out, then the write raises ENOSPC."""

from __future__ import annotations

import errno
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from kchaos.model.history_files import stage_to_parquet
from kchaos.model.run_files import RunDir, replacing, write_replacing
from kchaos.runner.cli import main
from kchaos.spark_analysis import report as report_module
from tests.test_verifiable import consumer_log, producer_log

GOOD = "<html>the good report</html>\n"


@pytest.fixture
def full_disk(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Path.write_text and write_bytes write half their content, then fail as a full disk does."""

    def half_then_enospc(path: Path, data: Any, *args: Any, **kwargs: Any) -> int:
        raw = data.encode() if isinstance(data, str) else bytes(data)
        with open(path, "wb") as fh:
            fh.write(raw[: len(raw) // 2])
        raise OSError(errno.ENOSPC, "No space left on device", str(path))

    monkeypatch.setattr(Path, "write_text", half_then_enospc)
    monkeypatch.setattr(Path, "write_bytes", half_then_enospc)
    yield


def _only(directory: Path) -> list[str]:
    return sorted(path.name for path in directory.iterdir())


def test_a_failed_write_leaves_the_old_file_and_no_temporary_file(tmp_path: Path, full_disk: None) -> None:
    target = tmp_path / "results.json"
    with open(target, "w", encoding="utf-8") as fh:
        fh.write('{"verdict": "ok"}\n')
    with pytest.raises(OSError, match="No space left"):
        write_replacing(target, json.dumps({"verdict": "violation", "pad": "x" * 1000}))
    assert target.read_text(encoding="utf-8") == '{"verdict": "ok"}\n'
    assert _only(tmp_path) == ["results.json"]


def test_a_completed_write_replaces_the_file_whole(tmp_path: Path) -> None:
    target = tmp_path / "report.html"
    target.write_text("old", encoding="utf-8")
    write_replacing(target, GOOD)
    assert target.read_text(encoding="utf-8") == GOOD and _only(tmp_path) == ["report.html"]
    with pytest.raises(RuntimeError), replacing(target) as tmp:
        tmp.write_text("half", encoding="utf-8")
        raise RuntimeError("the writer failed")
    assert target.read_text(encoding="utf-8") == GOOD and _only(tmp_path) == ["report.html"]


def test_report_on_a_full_disk_keeps_the_good_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, full_disk: None
) -> None:
    """`kchaos report` on a full disk overwrote a good report.html with a truncated one."""
    files = RunDir(tmp_path)
    with open(files.report, "w", encoding="utf-8") as fh:
        fh.write(GOOD)
    monkeypatch.setattr(report_module, "load_history", lambda spark, run_dir: None)
    monkeypatch.setattr(report_module, "_read_config", lambda run_dir: {})
    monkeypatch.setattr(report_module, "timeline", lambda history: None)
    monkeypatch.setattr(report_module, "report_stories", lambda *args: None)
    monkeypatch.setattr(report_module, "render_report", lambda *args: "<html>" + "new " * 5000)
    with pytest.raises(OSError, match="No space left"):
        report_module.write_report(tmp_path, {}, spark=object())  # type: ignore[arg-type]
    assert files.report.read_text(encoding="utf-8") == GOOD
    assert _only(tmp_path) == ["report.html"]


def test_a_history_conversion_that_fails_leaves_no_partial_parquet(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = RunDir(tmp_path)
    files.history.mkdir()
    files.history_staging.write_text(
        json.dumps({"run_id": "r", "index": 0, "time_ns": 1, "wall_time": 1.0, "process": "producer-0",
                    "type": "invoke", "f": "send", "value": "producer-0-0"}) + "\n",
        encoding="utf-8",
    )  # fmt: skip

    def full(table: Any, where: Any, *args: Any, **kwargs: Any) -> None:
        Path(where).write_text("PAR1 half", encoding="utf-8")
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(pq, "write_table", full)
    with pytest.raises(OSError, match="No space left"):
        stage_to_parquet(files)
    assert _only(files.history) == ["history.ndjson"]


def test_import_verifiable_leaves_no_half_written_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A conversion that fails as it writes removes the --out it created, so no later check judges half of
    it; a run directory named --out that existed keeps what it held."""
    producer = producer_log(tmp_path / "p.out", 0, [(1, 0, 0), (2, 0, 1)])
    consumer = consumer_log(tmp_path / "c.out", [(3, "0.0", 0, 0), (4, "0.1", 0, 1)])

    def full(table: Any, where: Any, *args: Any, **kwargs: Any) -> None:
        Path(where).write_text("PAR1 half", encoding="utf-8")
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(pq, "write_table", full)
    for out in (tmp_path / "new" / "run", tmp_path / "existing"):
        if out.name == "existing":
            out.mkdir()
            (out / "notes.txt").write_text("kept", encoding="utf-8")
        done = CliRunner().invoke(main, ["import-verifiable", "--producer-log", str(producer),
                                         "--consumer-log", str(consumer), "--out", str(out)])  # fmt: skip
        assert done.exit_code != 0
        if out.name == "existing":
            assert _only(out) == ["notes.txt"]
        else:
            assert not (tmp_path / "new").exists()
