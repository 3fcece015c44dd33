"""`kchaos spark-server` runs the JVM as a child: its own failure exits 2 naming the code (never 1, the
violation status), a stop by SIGTERM or Ctrl-C exits 0, and the child dies with kchaos even on SIGKILL."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from kchaos.runner.cli import main
from kchaos.runner.foreground_child import ChildFailed, run_in_foreground

#: A parent that runs a sleeping child through run_in_foreground; the child writes its pid first.
_PARENT = """
import sys
from kchaos.runner.foreground_child import run_in_foreground
child = "import os, sys, time; open(sys.argv[1], 'w').write(str(os.getpid())); time.sleep(120)"
run_in_foreground([sys.executable, "-c", child, sys.argv[1]], {})
print("stopped")
"""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie still answers kill 0; it has exited all the same.
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().split()[2] != "Z"


def _start_parent(tmp_path: Path) -> tuple[subprocess.Popen[str], int]:
    pid_file = tmp_path / "child.pid"
    parent = subprocess.Popen([sys.executable, "-c", _PARENT, str(pid_file)], stdout=subprocess.PIPE,
                              text=True, env={**os.environ, "PYTHONPATH": os.getcwd()})  # fmt: skip
    deadline = time.monotonic() + 20
    while not (pid_file.exists() and pid_file.read_text()):
        assert parent.poll() is None and time.monotonic() < deadline, "the child never started"
        time.sleep(0.05)
    return parent, int(pid_file.read_text())


def _gone_within(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while _alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_stop_signal_stops_the_child_and_exits_0(tmp_path: Path, sig: signal.Signals) -> None:
    parent, child = _start_parent(tmp_path)
    parent.send_signal(sig)
    out, _ = parent.communicate(timeout=40)
    assert parent.returncode == 0 and "stopped" in out
    assert _gone_within(child, 5)


def test_the_child_dies_with_a_killed_parent(tmp_path: Path) -> None:
    parent, child = _start_parent(tmp_path)
    parent.kill()
    parent.wait()
    assert _gone_within(child, 10), "the child outlived its SIGKILLed parent"


def test_a_child_that_fails_by_itself_is_a_failure_with_its_code() -> None:
    with pytest.raises(ChildFailed, match="exited with code 7"):
        run_in_foreground([sys.executable, "-c", "raise SystemExit(7)"], {})
    run_in_foreground([sys.executable, "-c", "pass"], {})  # exit 0 by itself: no failure


def test_spark_server_exits_2_not_1_when_the_jvm_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    """The JVM exiting 1 (what it does on a heap it cannot take) once made spark-server exit 1."""
    monkeypatch.setattr("kchaos.runner.failures.require_java", lambda *args: None)
    monkeypatch.setattr("kchaos.runner.spark_server_command.require_java", lambda *args: None)
    monkeypatch.setattr("kchaos.checkers.runtime.spark_server.server_command",
                        lambda port, memory: [sys.executable, "-c", "raise SystemExit(1)"])  # fmt: skip
    done = CliRunner().invoke(main, ["spark-server", "--port", "15977"])
    assert done.exit_code == 2, done.output
    assert "the Spark Connect server (spark-submit) exited with code 1" in done.output
