"""One client worker process (a producer, a group member, a reader, an eos processor; the Java client's or
librdkafka's), as every process-backed workload holds it: its container, the thread that records its lines,
its start awaited, and what it left unanswered recorded when it ends."""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field
from typing import Literal

from kchaos.harness.client_container import ClientContainer
from kchaos.workloads.processes.worker_recorder import WorkerRecorder

log = logging.getLogger(__name__)

#: Why a send still outstanding when the workload stopped is indeterminate: the librdkafka producer's words.
STOPPED_REASON = "no delivery report before the workload stopped"
#: How long a worker may take from its start to its `started` line (a JVM and a client on a busy machine).
START_TIMEOUT_S = 60.0
#: Beyond the drain, how long a stopped worker may take to exit before it is killed.
EXIT_SLACK_S = 10.0
#: What a worker may leave unanswered when it ends.
Awaited = Literal["send", "commit"]
#: Why what a worker left unanswered when it was stopped is indeterminate, by what it awaited.
STOPPED_REASONS: dict[Awaited, str] = {
    "send": STOPPED_REASON,
    "commit": "no answer to the commit before the member stopped",
}


@dataclass
class ClientProcess:
    """One client worker, whichever library it runs and whatever its role: its container, and the thread
    that records its lines until it ends, then records what it left unanswered as indeterminate."""

    recorder: WorkerRecorder
    client: ClientContainer
    #: What the worker may leave unanswered when it ends: a producer's `send`, a consumer's `commit`.
    awaits: Awaited = "send"
    thread: threading.Thread = field(init=False)
    stopping: bool = False

    def __post_init__(self) -> None:
        self.thread = threading.Thread(target=self._record, name=self.recorder.process, daemon=True)
        self.thread.start()

    def _record(self) -> None:
        for lines in self.client.batches():
            self.recorder.take_all(lines)
        if self.stopping:
            reason = STOPPED_REASONS[self.awaits]
        else:
            code = self.client.exit_code(5.0)
            reason = f"the client process ended (exit {code}) without reporting the {self.awaits}"
            # 0: a limited run's worker made its sends and drained them; a consumer's end is its watcher's
            if code != 0 and self.awaits == "send":
                log.warning("%s: the Java client process ended (exit %s)", self.recorder.process, code)
        self.recorder.abandon(reason)

    def await_start(self, timeout: float) -> None:
        """Waits for the worker's `started` line; a RuntimeError with its last stderr lines if it ends
        first or takes longer than `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while not self.recorder.started.wait(0.2):
            ended = not self.thread.is_alive()
            if ended and self.recorder.started.is_set():
                return
            if ended or time.monotonic() > deadline:
                said = self.client.stderr().decode(errors="replace").strip().splitlines()[-5:]
                how = "ended before its client started" if ended else f"did not start within {timeout:.0f}s"
                raise RuntimeError(
                    f"{self.recorder.process}: the Java worker {how}: "
                    + (" | ".join(said) or "it printed nothing")
                )
