"""The driver JVM's heap is an option (`--spark-driver-memory`), not an environment variable: it travels as
a parameter from the command that starts a check to the settings the session is built with, and a value the
JVM would refuse is refused first, naming the flag, before any directory is written or any JVM starts.

No JVM starts here: the session's own start (`_start_jvm`) is replaced by one that records the settings it
was handed and stops there."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

import kchaos.checkers.runtime.session
from kchaos.model.history import HistoryWriter
from kchaos.model.run_files import RunDir
from tests.histories import HistoryBuilder
from tests.test_cli_errors import assert_harness_failure, invoke


class _Stopped(Exception):
    """Raised where the JVM would have started."""


@pytest.fixture
def started(monkeypatch: pytest.MonkeyPatch) -> list[Mapping[str, Any]]:
    """The settings each JVM start was asked for; the start itself stops the caller with `_Stopped`."""
    asked: list[Mapping[str, Any]] = []

    def start(options: Mapping[str, Any]) -> None:
        asked.append(dict(options))
        raise _Stopped

    monkeypatch.setattr(kchaos.checkers.runtime.session, "_start_jvm", start)
    monkeypatch.setattr(kchaos.checkers.runtime.session, "require_java_home", lambda: None)
    return asked


def checked_run_dir(tmp_path: Path) -> Path:
    """A run directory `kchaos check` accepts: three acknowledged writes, all read back."""
    files = RunDir(tmp_path / "judged")
    files.history.mkdir(parents=True)
    config = {"run_id": "judged", "acks": "all", "min_insync_replicas": 2, "replication_factor": 3,
              "unclean_leader_election": False, "idempotence": True}  # fmt: skip
    files.config.write_text(json.dumps(config), encoding="utf-8")
    writer = HistoryWriter(files, "judged")
    history = HistoryBuilder(run_id="judged")
    history.final_reads(history.sends(3))
    history.replay(writer)
    writer.finish()
    return files.path


def test_the_session_is_built_with_the_memory_it_is_given(started: list[Mapping[str, Any]]) -> None:
    with pytest.raises(_Stopped):
        kchaos.checkers.runtime.session.spark_session("local[1]", "3g")
    with pytest.raises(_Stopped):
        kchaos.checkers.runtime.session.spark_session("local[1]")
    assert [options["spark.driver.memory"] for options in started] == ["3g", "1g"]


def test_kchaos_check_hands_its_option_to_the_session(
    tmp_path: Path, started: list[Mapping[str, Any]]
) -> None:
    result = invoke(["check", str(checked_run_dir(tmp_path)), "--spark-driver-memory", "3g"])

    assert "the harness failed: _Stopped" in result.output  # where the JVM would have started
    assert [options["spark.driver.memory"] for options in started] == ["3g"]


@pytest.mark.parametrize("value", ["8gb", "lots", "1.5g", "g", "512", "0m", "\uff11g", "99999999999g"])
def test_kchaos_check_refuses_a_size_the_jvm_would_not_take_before_spark_starts(
    tmp_path: Path, started: list[Mapping[str, Any]], value: str
) -> None:
    run_dir = checked_run_dir(tmp_path)
    result = invoke(["check", str(run_dir), "--spark-driver-memory", value])

    assert_harness_failure(
        result, f"--spark-driver-memory {value!r} is not a JVM heap size", "e.g. 512m or 8g"
    )
    assert started == []
    assert not RunDir(run_dir).results.exists()


def test_kchaos_report_refuses_a_bad_size_before_spark_starts(
    tmp_path: Path, started: list[Mapping[str, Any]]
) -> None:
    run_dir = checked_run_dir(tmp_path)
    (run_dir / "results.json").write_text(json.dumps({"verdict": "ok", "anomalies": {}}), encoding="utf-8")
    result = invoke(["report", str(run_dir), "--spark-driver-memory", "8gb"])

    assert result.exit_code == 2, result.output
    assert started == []


def test_kchaos_run_refuses_a_bad_size_before_anything_starts(
    tmp_path: Path, started: list[Mapping[str, Any]]
) -> None:
    runs = tmp_path / "runs"
    result = invoke(["run", "--spark-driver-memory", "8gb", "--runs-dir", str(runs)])

    assert result.exit_code == 2, result.output
    assert "spark-driver-memory" in result.output
    assert "'8gb' is not a JVM heap size; use ASCII digits then m or g" in result.output
    assert not runs.exists()
    assert started == []
