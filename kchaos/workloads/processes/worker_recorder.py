"""What records a client worker's lines as history rows: the base every worker's recorder builds on (its
process, its start, batches of lines, what it left outstanding), and a producer worker's own.

A send's lines (kchaos/compose/rdkafka/line_formats.py `SEND_FIELDS`, printed by the librdkafka worker and by
KchaosProducer.java alike) become the rows the in-process producer writes: `invoke` before the send, then
`ok`, `fail` or `info` by the failed send's rule (`judge`: the Java client's, or librdkafka's for its
processes). A send whose outcome the process never printed is recorded `info`, indeterminate.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from kchaos.compose.rdkafka.line_formats import ACKED, INVOKED, REFUSED, SEND_FIELDS, STARTED, STOPPED
from kchaos.model.events import FAIL, INFO, INVOKE, OK, SEND, EventType
from kchaos.model.history import HistoryWriter, RecordRows, SpelledRow
from kchaos.model.java_send_errors import java_send_outcome
from kchaos.model.stamped_rows import StampedRows
from kchaos.workloads.processes.worker_lines import LineError, named_fields

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class WorkerLine:
    """One line of a worker's stdout, its fields named."""

    kind: str
    value: str = ""
    partition: int = 0
    offset: int | None = None
    exception: str = ""
    message: str = ""
    #: `started`: the client's version; `stopped`: sends made and still outstanding.
    said: tuple[str, ...] = ()
    #: When the worker said it, by the host's monotonic clock (`kchaos.model.stamped_rows`).
    time_ns: int = 0


def parse_line(line: str) -> WorkerLine:
    """The event a worker line says; LineError for anything else."""
    return WorkerLine(**named_fields(line, SEND_FIELDS, "worker"))


@dataclass
class WorkerRecorder:
    """Records one worker's lines as history rows, and what it left outstanding as indeterminate."""

    process: str
    topic: str
    history: HistoryWriter
    #: Sends invoked and not yet answered: value -> partition.
    pending: dict[str, int] = field(default_factory=dict)
    version: str | None = None
    started: threading.Event = field(default_factory=threading.Event)
    #: A failed send's outcome and error text from the exception (or error name) and message the worker
    #: printed: the Java client's rule, or librdkafka's for its processes.
    judge: Callable[[str, str | None], tuple[EventType, str]] = java_send_outcome
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def take_all(self, lines: Iterable[str]) -> None:
        """Records what each line says, in order, exactly as `take` would: the lines `_row_of` spells
        straight into a row go into the history a batch at a time (`write_spelled`), every other line
        through `take`. At tens of thousands of sends a second, reading every line through its protocol's
        parser and recording it alone held the client processes to what this one thread could do
        (`bench/workload.py`)."""
        rows: list[SpelledRow] = []
        for line in lines:
            row = self._row_of(line)
            if row is not None:
                rows.append(row)
                continue
            if rows:
                self.history.write_spelled(rows)
                rows = []
            self.take(line)
        if rows:
            self.history.write_spelled(rows)

    def _row_of(self, line: str) -> SpelledRow | None:
        """The row of a line of the protocol's busiest kinds, well-formed, with what `take` would do beside
        recording it done (`RecordRows`); None for any other line, which `take` then reads in full (and
        refuses, if it is outside the protocol). None for every line here: each protocol's recorder
        that has such lines says which."""
        return None

    def take(self, line: str) -> None:
        """Records what one line says; a line outside the protocol is logged and skipped."""
        try:
            said = parse_line(line)
        except LineError as exc:
            log.warning("%s: %s", self.process, exc)
            return
        if said.kind == STARTED:
            self.version = said.said[0]
            log.info("%s: client %s started", self.process, self.version)
            self.started.set()
        elif said.kind == STOPPED:
            log.info("%s: stopped after %s sends, %s outstanding", self.process, *said.said)
        elif said.kind == INVOKED:
            with self._lock:
                self.pending[said.value] = said.partition
            StampedRows(self.history, said.time_ns).record(
                self.process, INVOKE, SEND, topic=self.topic, partition=said.partition, value=said.value
            )
        else:
            self._outcome(said, StampedRows(self.history, said.time_ns))

    def _outcome(self, said: WorkerLine, rows: StampedRows) -> None:
        with self._lock:
            partition = self.pending.pop(said.value, said.partition)
        if said.kind == ACKED:
            rows.record(
                self.process, OK, SEND, topic=self.topic, partition=partition, offset=said.offset,
                key=said.value, value=said.value,
            )  # fmt: skip
            return
        outcome, error = self.judge(said.exception, said.message)
        if said.kind == REFUSED:  # thrown by send(): the record never reached the client's buffer
            rows.record(
                self.process, FAIL, SEND, topic=self.topic, partition=partition, value=said.value,
                error=error,
            )  # fmt: skip
            return
        rows.record(
            self.process, outcome, SEND, topic=self.topic, partition=partition, key=said.value,
            value=said.value, error=error,
        )  # fmt: skip

    def abandon(self, reason: str) -> int:
        """Records every send still outstanding as indeterminate, with `reason`; returns how many."""
        with self._lock:
            left, self.pending = self.pending, {}
        for value, partition in left.items():
            self.history.record(
                self.process, INFO, SEND, topic=self.topic, partition=partition, value=value, error=reason
            )
        return len(left)


@dataclass
class SendRecorder(WorkerRecorder):
    """A producer worker's recorder (`WorkerRecorder`, whose lines its `take` reads), whose `invoke` and
    `ok` lines, two of every send's three, are recorded a batch at a time (`take_all`)."""

    def __post_init__(self) -> None:
        self._invoked = RecordRows(self.history, self.process, INVOKE, SEND, self.topic)
        self._acked = RecordRows(self.history, self.process, OK, SEND, self.topic)

    def _row_of(self, line: str) -> SpelledRow | None:
        """The row of a well-formed `invoke` or `ok` line, its pending send noted, as `take` does."""
        kind, _, rest = line.partition("\t")
        fields = rest.split("\t")
        try:
            if kind == INVOKED and len(fields) == 3:
                stamp, value, partition = int(fields[0]), fields[1], int(fields[2])
                if stamp >= 0:
                    with self._lock:
                        self.pending[value] = partition
                    return self._invoked.row(partition, None, None, value, stamp)
            elif kind == ACKED and len(fields) == 4 and fields[3]:
                stamp, value, offset = int(fields[0]), fields[1], int(fields[3])
                if stamp >= 0:
                    with self._lock:
                        partition = self.pending.pop(value, int(fields[2]))
                    return self._acked.row(partition, offset, value, value, stamp)
        except ValueError:
            pass  # not a number where one belongs: `take` names the line
        return None
