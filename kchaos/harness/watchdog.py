"""The watchdog: a process that removes what a harness killed outright (SIGKILL, the OOM killer, a CI job's
timeout) leaves running, within seconds and with nobody running `kchaos clean`.

Ctrl-C, SIGTERM and errors unwind through the harness's own cleanup; a SIGKILL runs no code at all. So the
first time a harness process starts a cluster it also starts this watchdog, a separate process in a session
of its own (a signal to the harness's process group does not reach it), holding the read end of a pipe whose
write end only the harness holds. The kernel closes that end when the harness dies, however it dies; the
watchdog then waits for the process to be gone and removes the containers and networks labelled with its
pid on this host (`kchaos.harness.labels`), sparing the runs the harness chose to keep (`--keep-cluster`,
announced over the same pipe). A run against a cluster kchaos did not start (`--bootstrap`) tells it, over
the pipe, which topics it created there and when it deleted them itself; what it still owed, the watchdog
deletes (`kchaos.harness.leftover_topics`); what its runs installed on machines reached over SSH, it removes
(`kchaos.harness.ssh_leftovers`). Another session's containers carry another pid and stay. This is
testcontainers' Ryuk's promise, kept without an image from a registry: a process from kchaos's own install.

What it cannot outlive is whatever kills every process of the machine or the container the harness runs
in (a cgroup kill takes the watchdog too); the next run's sweep, or `kchaos clean`, removes that.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from typing import IO

#: A line the harness writes to spare a run: `keep <run id>`.
KEEP = "keep"
#: The lines of a run against a cluster kchaos did not start: `owe <run id> <bootstrap> <topic,...>` (the
#: topics it created there so far), and `paid <run id>` once it deleted them itself.
OWE = "owe"
PAID = "paid"
#: How long the watchdog waits, once the pipe closed, for the harness's pid to be gone before it sweeps:
#: a harness that ends normally closes the pipe a moment before it exits, with nothing left to remove.
EXIT_GRACE = 10.0


class Guard:
    """The harness's side: starts the watchdog once per process and tells it which runs to spare."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._process: subprocess.Popen[bytes] | None = None

    def ensure(self) -> None:
        """Starts this process's watchdog unless it runs already."""
        with self._lock:
            if self._process is not None and self._process.poll() is None:
                return
            # The pipe's write end is non-inheritable (PEP 446), so no program the harness starts keeps
            # the watchdog waiting after the harness is gone.
            self._process = subprocess.Popen(
                [sys.executable, "-m", __name__, str(os.getpid())],
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
                close_fds=True,
            )

    def keep(self, run_id: str) -> None:
        """Spares run `run_id`'s containers when this process ends: the user asked to keep them."""
        self._tell(f"{KEEP} {run_id}")

    def owe(self, run_id: str, bootstrap: str, topics: list[str]) -> None:
        """Run `run_id` created `topics` on the cluster at `bootstrap`, which kchaos did not start."""
        self._tell(f"{OWE} {run_id} {bootstrap} {','.join(topics)}")

    def paid(self, run_id: str) -> None:
        """Run `run_id` deleted what it created on a cluster kchaos did not start."""
        self._tell(f"{PAID} {run_id}")

    def _tell(self, line: str) -> None:
        with self._lock:
            if self._process is None or self._process.stdin is None or self._process.poll() is not None:
                return
            try:
                self._process.stdin.write(f"{line}\n".encode())
                self._process.stdin.flush()
            except BrokenPipeError:  # the watchdog is gone; nothing would sweep the run anyway
                pass


#: The one guard of the process: one watchdog per harness process, however many clusters it starts.
guard = Guard()


def watch(pid: int, pipe: IO[bytes]) -> list[str]:
    """Blocks until the harness `pid` closes `pipe`, then removes what it left; returns what was removed."""
    spared: set[str] = set()
    owed: dict[str, tuple[str, list[str]]] = {}
    for line in pipe:
        word, *rest = line.decode(errors="replace").split() or [""]
        if word == KEEP and len(rest) == 1:
            spared.add(rest[0])
        elif word == OWE and len(rest) == 3:
            owed[rest[0]] = (rest[1], rest[2].split(","))
        elif word == PAID and len(rest) == 1:
            owed.pop(rest[0], None)
    deadline = time.monotonic() + EXIT_GRACE
    from kchaos.harness.labels import sweep_owner
    from kchaos.model.host_process import pid_alive

    while pid_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)

    import docker.errors

    try:
        removed = sweep_owner(pid, spared)
    except docker.errors.DockerException:  # no engine: a --bootstrap run's clients were all in-process
        removed = []
    from kchaos.harness.ssh_leftovers import clean_abandoned

    removed += clean_abandoned(owner=pid, spared=spared)  # what its runs installed on SSH nodes
    if any(run_id not in spared for run_id in owed):
        from kchaos.harness.leftover_topics import remove_run_leftovers

        for run_id, (bootstrap, topics) in owed.items():
            if run_id not in spared:
                removed += remove_run_leftovers(bootstrap, run_id, topics)
    return removed


def main(argv: list[str]) -> int:
    if len(argv) != 1 or not argv[0].isdigit():
        print(
            "usage: python -m kchaos.harness.watchdog HARNESS_PID (its stdin: the harness's pipe)",
            file=sys.stderr,
        )
        return 2
    watch(int(argv[0]), sys.stdin.buffer)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
