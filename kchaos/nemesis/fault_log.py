"""The nemesis of a run against a cluster kchaos did not start: the faults are the user's, applied with
their own tooling, and kchaos records them from the log that tooling writes (`--fault-log`), as it goes.

The file is followed from the start of the writing until the run heals: each whole line read becomes a
nemesis start or stop row (`kchaos.model.fault_log_lines` says the form), stamped at the time the line
gives, so the report places each fault on the run's timeline as it places kchaos's own. kchaos cannot see
whether a fault took effect, and its rows say so. A line that cannot be read is reported (the run's
progress, harness.log, and a `skipped` row naming the line) and the run goes on: the user's tooling wrote
it while the run went, after any check kchaos could make before starting. With no file, it records
nothing, and a run against such a cluster has no faults.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from kchaos.model.events import INFO, NEMESIS_PROCESS, SKIPPED, START, Event
from kchaos.model.fault_log_lines import FaultLogError, FaultLogLine, parse_line
from kchaos.model.fault_record import FaultRecord
from kchaos.model.history import HistoryWriter
from kchaos.model.progress import Milestone

log = logging.getLogger(__name__)

#: The `f` of a fault log's rows: a fault kchaos did not apply, whatever its kind.
EXTERNAL = "external"
#: How often the file is read for new lines.
POLL_S = 0.25


class FaultLog:
    """Follows `path` (None: records nothing) into `history`; `progress` hears of every line it cannot
    read. Has what the run asks of its nemesis: `start`, `stop`, `error`, `faults_ended`, `planned`,
    `last_end`, `active_keys`."""

    def __init__(
        self, path: Path | None, history: HistoryWriter, progress: Callable[[str], None] = log.info
    ) -> None:
        self.path = path
        self.history = history
        self.progress = progress
        self.error: BaseException | None = None
        #: Nothing is planned, so the run's writing never waits for a fault.
        self.faults_ended = threading.Event()
        self.faults_ended.set()
        self.planned: list[object] = []
        #: Read only with a plan (`wait_for_workload`); none here.
        self.last_end: float | None = None
        #: The lines that could not be read, in the error's words.
        self.skipped: list[str] = []
        self._open: dict[str, FaultLogLine] = {}
        self._read_to = 0
        self._pending = b""
        self._number = 0
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    @property
    def active_keys(self) -> Sequence[str]:
        with self._lock:
            return list(self._open)

    def start(self, scenario: object = None, name: str = "") -> None:
        """Begins following the file (a scenario is refused before any run gets here)."""
        if self.path is None:
            return
        self._thread = threading.Thread(target=self._follow, name="fault-log", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Reads what the file holds by now and stops following it; safe to call twice."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(10)
            self._thread = None
        self.read_new()

    def _follow(self) -> None:
        while not self._stop.wait(POLL_S):
            try:
                self.read_new()
            except Exception as exc:  # the run's heal raises it, in its own words
                self.error = exc
                return

    def read_new(self) -> None:
        """Records every whole line written since the last read; a file not there yet holds none."""
        if self.path is None or not self.path.is_file():
            return
        with self._lock, self.path.open("rb") as fh:
            fh.seek(self._read_to)
            chunk = fh.read()
            self._read_to += len(chunk)
            *lines, self._pending = (self._pending + chunk).split(b"\n")
            for raw in lines:
                self._number += 1
                self._record(self._number, raw.decode(errors="replace"))

    def _record(self, number: int, text: str) -> None:
        try:
            line = parse_line(number, text)
        except FaultLogError as exc:
            self.skipped.append(str(exc))
            self.progress(Milestone(f"{exc}: not recorded"))
            self.history.write(
                Event(NEMESIS_PROCESS, INFO, EXTERNAL, key=f"line-{number}", value=SKIPPED, error=str(exc))
            )
            return
        if line is None:
            return
        if line.phase == START:
            self._open[line.name] = line
        else:
            self._open.pop(line.name, None)
        record = FaultRecord(
            kind=line.kind, nodes=line.nodes, spec=line.text,
            description=f"{line.what or line.name} (applied by your tooling, --fault-log {self.path} line "
            f"{number}; kchaos did not see its effect)",
        )  # fmt: skip
        # The time the line gives, on the history's monotonic clock.
        at_ns = time.monotonic_ns() - int((time.time() - line.at) * 1e9)
        row = Event(
            NEMESIS_PROCESS, INFO, EXTERNAL, key=line.name, value=line.phase, detail=record.to_detail()
        )
        self.history.write(row, at_ns=at_ns)
