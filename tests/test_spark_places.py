"""Where a check runs Spark, refused by name before anything starts: a Spark Connect server that does not
answer (`--spark-remote`), a master Spark does not know (`--spark-master`), and a `kchaos spark-server`
whose heap the JVM would refuse or whose port is taken. Each is a harness failure (exit 2), never the
violation status 1 the JVM exits with, and never a silent wait. Loopback addresses only."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from kchaos.runner.cli import main
from tests.test_driver_memory import checked_run_dir


def _invoke(args: list[str]) -> Result:
    return CliRunner().invoke(main, args)


@pytest.fixture
def refused_url() -> str:
    """A loopback port nothing listens on: bound, then closed."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"sc://127.0.0.1:{port}"


@pytest.fixture
def no_jvm(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Any]]:
    """Records any attempt to start Spark or exec the server, and stops it there."""
    tried: list[Any] = []

    def refuse(*args: Any, **kwargs: Any) -> None:
        tried.append(args)
        raise AssertionError("Spark was started")

    monkeypatch.setattr("kchaos.runner.spark_server_command.run_in_foreground", refuse)
    monkeypatch.setattr("kchaos.checkers.runtime.session.spark_session", refuse)
    yield tried


def test_a_spark_remote_nobody_answers_is_refused_within_seconds(
    tmp_path: Path, refused_url: str, no_jvm: list[Any]
) -> None:
    run_dir = checked_run_dir(tmp_path)
    (run_dir / "results.json").write_text('{"run_id": "judged", "verdict": "ok", "anomalies": {}}')
    runs = tmp_path / "runs"
    for args in (
        ["check", str(run_dir)],
        ["report", str(run_dir)],
        ["run", "--runs-dir", str(runs)],
    ):
        started = time.monotonic()
        done = _invoke([*args, "--spark-remote", refused_url])
        assert time.monotonic() - started < 10, args
        assert done.exit_code == 2, (args, done.output)
        assert f"--spark-remote {refused_url}: no Spark Connect server answers there" in done.output
        assert "kchaos spark-server" in done.output
    assert not runs.exists() and not (run_dir / "report.html").exists() and no_jvm == []


def test_a_spark_master_spark_does_not_know_is_refused_by_check_and_report(
    tmp_path: Path, no_jvm: list[Any]
) -> None:
    run_dir = checked_run_dir(tmp_path)
    (run_dir / "results.json").write_text('{"run_id": "judged", "verdict": "ok", "anomalies": {}}')
    for command in ("check", "report"):
        for master in ("bogus", "local[0]"):
            done = _invoke([command, str(run_dir), "--spark-master", master])
            assert done.exit_code == 2, done.output
            assert f"--spark-master {master!r} is not a Spark master URL" in done.output
    assert no_jvm == []


@pytest.mark.parametrize("size", ["0m", "0g", "\uff11g", "99999999999g", "1025g"])
def test_spark_server_refuses_a_heap_the_jvm_would_not_take(size: str, no_jvm: list[Any]) -> None:
    done = _invoke(["spark-server", "--driver-memory", size])
    assert done.exit_code == 2, done.output
    assert f"--driver-memory {size!r} is not a JVM heap size" in done.output
    assert no_jvm == []


def test_spark_server_refuses_a_busy_port_by_name(no_jvm: list[Any]) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        if port < 1024:
            pytest.skip("the system handed out a privileged port")
        done = _invoke(["spark-server", "--port", str(port)])
    assert done.exit_code == 2, done.output
    assert f"--port {port}: a server cannot listen on sc://127.0.0.1:{port}" in done.output
    assert no_jvm == []
