"""The supervisor of the Java producers' processes: a client that dies while the run goes on is started
again, as an application's supervisor (systemd, Kubernetes) restarts a crashed client.

A Kafka engineer expects a crashed producer to come back, and what matters then is what the crash cost:
what the dead process had acknowledged must be in the log, what it had in flight is indeterminate (its
recorder says `info`), and the new process writes on. So a client killed by the nemesis
(`kill:target=producer-N`) is not restarted by the fault's heal but here, as soon as its process is seen to
end; the fault counts as healed once its client runs again (`kchaos.nemesis.clients.KillClient`).

The new process keeps the process name (its history rows, its container's name and its client.id are
the old one's), and its values stay unique across the run: its worker numbers its sends from 0 again, so
each incarnation writes under a value prefix of its own, `<process>.<incarnation>-<n>` (the first is
`<process>-<n>`), and an `info` `producer-restart` row of the process says when and why. A process that
ended cleanly (exit 0: a limited run's worker that made its sends) is done, not dead; one that died before
its client started would die again, so it is left dead and logged.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from collections.abc import Callable
from typing import Protocol

from kchaos.harness.client_cluster import ClientCluster
from kchaos.harness.client_container import start_client
from kchaos.model.events import INFO, PRODUCER_RESTART
from kchaos.model.history import HistoryWriter
from kchaos.workloads.processes.client_process import ClientProcess
from kchaos.workloads.processes.worker_recorder import WorkerRecorder

log = logging.getLogger(__name__)

#: How often the supervisor looks for a client process that ended.
POLL_S = 0.2
#: The worker argument that names its process, and so the prefix of its values.
PROCESS_ARGUMENT = "kchaos.process="


class Supervised(Protocol):
    """The producers' workload as its supervisor sees it: its processes, by number, replaced in place."""

    cluster: ClientCluster
    history: HistoryWriter
    image: str
    producers: list[ClientProcess]


def incarnation_prefix(process: str, incarnation: int) -> str:
    """The value prefix of a process's `incarnation`-th restart: values stay unique across restarts."""
    return process if incarnation == 0 else f"{process}.{incarnation}"


def with_prefix(command: list[str], prefix: str) -> list[str]:
    """A worker's command with its value prefix (`kchaos.process`) replaced by `prefix`."""
    return [f"{PROCESS_ARGUMENT}{prefix}" if arg.startswith(PROCESS_ARGUMENT) else arg for arg in command]


class ClientSupervisor:
    """Watches the workload's producers from its start to its stop and restarts each that dies."""

    def __init__(
        self,
        workload: Supervised,
        command: Callable[[int], list[str]],
        recorder: Callable[[str], WorkerRecorder],
    ) -> None:
        """`command(n)`: the worker command of producer n, as the workload first started it; `recorder`:
        what records a worker's lines, by its process name (a transactional worker's differ)."""
        self.workload = workload
        self.command = command
        self.recorder = recorder
        #: Restarts so far, by process.
        self.restarts: Counter[str] = Counter()
        #: Processes that ended and are not restarted (done, or unable to start).
        self.ended: set[str] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="client-supervisor", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Stops watching, after a restart in progress: the workload then stops the clients it has."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()

    def _watch(self) -> None:
        while not self._stop.wait(POLL_S):
            for n, producer in enumerate(list(self.workload.producers)):
                process = producer.recorder.process
                if producer.thread.is_alive() or producer.stopping or process in self.ended:
                    continue
                try:
                    self._after_end(n, producer)
                except Exception:  # a restart that failed leaves the client dead, as a failed supervisor
                    log.exception("%s: could not restart the Java client", process)
                    self.ended.add(process)

    def _after_end(self, n: int, producer: ClientProcess) -> None:
        process = producer.recorder.process
        code = producer.client.exit_code(5.0)
        if code == 0 or not producer.recorder.started.is_set():
            if code != 0:
                log.warning(
                    "%s: the Java client died before it started (exit %s); not restarted", process, code
                )
            self.ended.add(process)
            return
        self.restarts[process] += 1
        incarnation = self.restarts[process]
        workload = self.workload
        logs = workload.history.files.logs
        logs.mkdir(parents=True, exist_ok=True)
        (logs / f"{process}.{incarnation - 1}.log").write_bytes(producer.client.stderr())
        producer.client.remove()  # its name is the new process's
        prefix = incarnation_prefix(process, incarnation)
        workload.history.record(
            process, INFO, PRODUCER_RESTART, detail={"values": f"{prefix}-N", "exit": code},
            error=f"the client process ended (exit {code}); restarted as a new process writing {prefix}-N",
        )  # fmt: skip
        client = start_client(workload.cluster, workload.image, process, with_prefix(self.command(n), prefix))
        workload.producers[n] = ClientProcess(self.recorder(process), client)
        log.info("%s: the Java client ended (exit %s); restarted, writing %s-N", process, code, prefix)
