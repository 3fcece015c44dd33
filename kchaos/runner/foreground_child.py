"""A long-running program (`kchaos spark-server`'s JVM) run in the foreground as this process's child.

kchaos once replaced itself with the JVM (`execve`), so whatever the JVM exited with became kchaos's exit
status: a JVM that failed in a way kchaos did not check for exited 1, which kchaos reserves for a
violation. As a child, the program's own failure becomes a harness failure (exit 2, naming the code),
while the way a user stops it (Ctrl-C, or SIGTERM from a supervisor) is a clean stop (exit 0). The child
dies with kchaos even when kchaos is killed outright (SIGKILL), so nothing is left listening.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import signal
import subprocess
from collections.abc import Mapping, Sequence
from types import FrameType

#: Linux prctl(2) option: the signal the kernel sends a process when its parent dies.
_PR_SET_PDEATHSIG = 1
#: How long a stopped child gets to exit on SIGTERM before it is killed.
STOP_SECONDS = 30.0


class ChildFailed(RuntimeError):
    """The child exited on its own, with a failure status."""

    def __init__(self, status: int) -> None:
        self.status = status
        how = f"was killed by signal {-status}" if status < 0 else f"exited with code {status}"
        super().__init__(how)


def _die_with_parent() -> None:
    """Runs in the child before it executes the program: the kernel sends it SIGTERM when kchaos dies."""
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)


def run_in_foreground(command: Sequence[str], environment: Mapping[str, str]) -> None:
    """Runs `command` until it exits, or until this process gets SIGINT or SIGTERM, which stop it. Returns
    when it stopped because it was told to, or exited 0 by itself; raises ChildFailed when it exited by
    itself with another status."""
    stopping = False

    def stop(signum: int, frame: FrameType | None) -> None:
        nonlocal stopping
        stopping = True

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        child = subprocess.Popen(list(command), env=dict(environment), preexec_fn=_die_with_parent)
        while child.poll() is None and not stopping:
            try:
                child.wait(0.5)
            except subprocess.TimeoutExpired:
                continue
        if stopping:
            _stop(child)
            return
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if child.returncode != 0:
        raise ChildFailed(child.returncode)


def _stop(child: subprocess.Popen[bytes]) -> None:
    """Asks the child to stop (it may have had Ctrl-C already, from the terminal), then makes sure."""
    if child.poll() is None:
        child.terminate()
    try:
        child.wait(STOP_SECONDS)
    except subprocess.TimeoutExpired:
        child.kill()
        child.wait()
