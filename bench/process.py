"""Timing one command in a process of its own, with the peak resident memory of its whole process tree.

Every figure of the benchmark is a process's wall and peak: a check's cost to its user includes starting
Python and the Spark JVM, and the JVM's memory is a child's, so both are sampled from /proc for the tree.
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

SAMPLE_INTERVAL_S = 0.1
PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")


def _children_map() -> dict[int, list[int]]:
    children: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", encoding="ascii", errors="replace") as fh:
                stat = fh.read()
        except OSError:
            continue
        # The command name is in parentheses and may hold spaces: the parent pid follows the last ')'.
        fields = stat[stat.rfind(")") + 2 :].split()
        children.setdefault(int(fields[1]), []).append(int(entry.name))
    return children


def tree_rss(root: int) -> int:
    """Resident bytes of `root` and every process below it, right now."""
    children = _children_map()
    total, stack = 0, [root]
    while stack:
        pid = stack.pop()
        try:
            with open(f"/proc/{pid}/statm", encoding="ascii") as fh:
                total += int(fh.read().split()[1]) * PAGE_SIZE
        except (OSError, IndexError, ValueError):
            pass
        stack.extend(children.get(pid, []))
    return total


class PeakSampler(threading.Thread):
    """Samples the process tree's resident memory until stopped; `peak` is the largest sum seen."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid = pid
        self.peak = 0
        self._done = threading.Event()

    def run(self) -> None:
        while not self._done.is_set():
            self.peak = max(self.peak, tree_rss(self.pid))
            self._done.wait(SAMPLE_INTERVAL_S)

    def stop(self) -> int:
        self._done.set()
        self.join()
        return self.peak


@dataclass(frozen=True)
class Measured:
    """One finished (or killed) process: its output, exit status, wall seconds and peak tree memory."""

    stdout: str
    stderr: str
    returncode: int
    seconds: float
    peak_bytes: int


def measure(
    command: list[str], cwd: Path, timeout: float, preexec_fn: Callable[[], None] | None = None
) -> Measured:
    """Runs `command` to its end (killed after `timeout`), timing it and sampling its tree's memory."""
    started = time.perf_counter()
    proc = subprocess.Popen(
        command,
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=preexec_fn,
    )
    sampler = PeakSampler(proc.pid)
    sampler.start()
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()  # the command's own process, by pid; a JVM child exits with it
        stdout, stderr = proc.communicate()
        stderr += f"\nkilled after {timeout:.0f}s"
    peak = sampler.stop()
    return Measured(stdout, stderr, proc.returncode, time.perf_counter() - started, peak)
