"""A pytest session that leaves a hung librdkafka call behind ends at once after its summary, with its own
exit status, skipping the exit handlers that would run under the hung client's threads; one that leaves
none exits as usual."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

SESSION = """
import atexit
import threading

import kchaos.workloads.in_harness.eos as eos

atexit.register(lambda: print("ordinary exit handlers ran", flush=True))


def test_leaves_a_call_behind():
    if {hung}:
        thread = threading.Thread(target=threading.Event().wait, daemon=True)
        thread.start()
        eos._HUNG.append(thread)
    assert {passes}
"""


def session(tmp_path: Path, hung: bool, passes: bool) -> subprocess.CompletedProcess[str]:
    (tmp_path / "test_session.py").write_text(SESSION.format(hung=hung, passes=passes), encoding="utf-8")
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_session.py"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


@pytest.mark.parametrize("passes", [True, False])
def test_a_hung_call_ends_the_session_at_once_with_its_status(tmp_path: Path, passes: bool) -> None:
    done = session(tmp_path, hung=True, passes=passes)
    assert done.returncode == (pytest.ExitCode.OK if passes else pytest.ExitCode.TESTS_FAILED), done.stdout
    assert ("1 passed" if passes else "1 failed") in done.stdout
    assert "ordinary exit handlers ran" not in done.stdout


def test_without_a_hung_call_the_session_exits_as_usual(tmp_path: Path) -> None:
    done = session(tmp_path, hung=False, passes=True)
    assert done.returncode == pytest.ExitCode.OK, done.stdout
    assert "ordinary exit handlers ran" in done.stdout
