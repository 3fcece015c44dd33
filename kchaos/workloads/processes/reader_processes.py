"""The assigned readers of `--workload sends` and `txn` as processes (`--client librdkafka-process` and
`--client java`): `consumer-N`, each in a container of its own, so the nemesis can kill, freeze or cut off a
reader (`target=consumer-N`) as it does a producer, and the history shows what a reader that suffered it saw.

Both clients' workers (kchaos/compose/rdkafka/reader_worker.py, KchaosReader.java) do what the in-process
reader does (kchaos/workloads/in_harness/consumer.py `ConsumerProcess`) and print the same lines
(kchaos/compose/rdkafka/line_formats.py `READER_FIELDS`), which become the rows that reader writes: `assign`
(detail: partitions, `from`, isolation), `poll` (`ok` with partition, offset, key and value; `info` with the
error), `info` `hold` and `release`. Only the command differs (`_command`, kchaos/workloads/processes/
rdkafka/reader.py and java/reader.py).

A reader that dies while the run goes on (killed by the nemesis, or a fatal client error) is started again
as a new process under its name from the positions its predecessor recorded, with an `info`
`consumer-restart` row; its `assign` row's `from` says where it resumed, as the in-process reader's does
after it replaced a failed client. `hold()` (a scenario's lagging reader) signals every reader and returns
once each has said it paused; a watcher sends the signal again to any reader whose last word disagrees with
what was asked (a signal is lost by a process not yet started; a reader a fault froze is signalled once
thawed, since the engine would thaw it to deliver the signal), and a reader started while the readers are
held starts held.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field

from kchaos.compose.rdkafka.group_worker import offsets_field
from kchaos.compose.rdkafka.line_formats import (
    ASSIGNED,
    HELD,
    POLL_ERROR,
    POLLED,
    READER_FIELDS,
    STARTED,
    STOPPED,
)
from kchaos.compose.rdkafka.reader_worker import HOLD_SIGNAL, READER_MODE, RELEASE_SIGNAL
from kchaos.harness.client_cluster import ClientCluster
from kchaos.model.config import RunConfig
from kchaos.model.events import (
    ASSIGN,
    CONSUMER_RESTART,
    HOLD,
    INFO,
    OK,
    POLL,
    RELEASE,
    consumer_process,
)
from kchaos.model.history import HistoryWriter, RecordRows, SpelledRow
from kchaos.model.stamped_rows import StampedRows
from kchaos.model.waiting import wait_until
from kchaos.model.workload_rules import paired_readers
from kchaos.model.written_topics import topics_by_process
from kchaos.workloads.in_harness.consumer import reader_group
from kchaos.workloads.processes.consumer_processes import ConsumerProcesses
from kchaos.workloads.processes.member_recorder import (
    MemberLine,
    MemberRecorder,
    assigned_detail,
    field_text,
)
from kchaos.workloads.processes.worker_lines import LineError, named_fields

log = logging.getLogger(__name__)

#: How often the watcher looks for a reader that has not done what `hold`/`release` asked, and how long it
#: leaves a signal to take effect before it sends it again.
STEER_POLL_S = 0.2
RESIGNAL_S = 1.0


def parse_reader_line(line: str) -> MemberLine:
    """The event a reader worker's line says; LineError for anything else."""
    return MemberLine(**named_fields(line, READER_FIELDS, "reader"))


@dataclass
class ReaderRecorder(MemberRecorder):
    """Records one reader worker's lines as the in-process reader's rows, and where it got to."""

    #: Next offset by partition, from the records it was handed: where a process that replaces it starts.
    positions: dict[int, int] = field(default_factory=dict)
    #: Set while the process says it is held (its `hold` line, until its `release` line).
    held: threading.Event = field(default_factory=threading.Event)

    def __post_init__(self) -> None:
        self._polled = RecordRows(self.history, self.process, OK, POLL, self.topic)

    def _row_of(self, line: str) -> SpelledRow | None:
        """The row of a well-formed `polled` line with its offset, every read's one line, the reader's
        position and tally moved on, as `take` does."""
        kind, _, rest = line.partition("\t")
        if kind != POLLED:
            return None
        fields = rest.split("\t")
        if len(fields) != 5 or not fields[2]:
            return None
        try:
            stamp, partition, offset = int(fields[0]), int(fields[1]), int(fields[2])
        except ValueError:
            return None  # not a number where one belongs: `take` names the line
        if stamp < 0:
            return None
        self.positions[partition] = offset + 1
        self.tally.handed += 1
        return self._polled.row(partition, offset, field_text(fields[3]), field_text(fields[4]), stamp)

    def take(self, line: str) -> None:
        """Records what one line says; a line outside the protocol is logged and skipped."""
        try:
            said = parse_reader_line(line)
            self._take_reader(said, StampedRows(self.history, said.time_ns))
        except LineError as exc:
            log.warning("%s: %s", self.process, exc)

    def _take_reader(self, said: MemberLine, rows: StampedRows) -> None:
        if said.kind == STARTED:
            self.version = said.said[0]
            log.info("%s: client %s started", self.process, self.version)
            self.started.set()
        elif said.kind == STOPPED:
            log.info("%s: stopped after %s records polled", self.process, said.said[0])
        elif said.kind == ASSIGNED:
            detail = assigned_detail(said.partitions, said.offsets, self.isolation)
            rows.record(self.process, OK, ASSIGN, topic=self.topic, detail=detail)
        elif said.kind == POLLED:
            if said.offset is not None:
                self.positions[said.partition] = said.offset + 1
            self._take(said, rows)
        elif said.kind == POLL_ERROR:
            where = said.said[0]
            rows.record(
                self.process, INFO, POLL, topic=self.topic, partition=int(where) if where.isdigit() else None,
                error=f"{said.exception}: {said.message}" if said.message else said.exception,
            )  # fmt: skip
        elif said.kind == HELD:
            rows.record(self.process, INFO, HOLD, topic=self.topic)
            self.held.set()
        else:  # RELEASED
            self.held.clear()
            rows.record(self.process, INFO, RELEASE, topic=self.topic)


class ReaderProcesses(ConsumerProcesses):
    """`consumers` readers of the whole topic, each a process of its own (`consumer-N`); the client's kind
    gives the command (`_command`, from `_worker`'s arguments)."""

    noun = "reader process"

    def __init__(self, config: RunConfig, cluster: ClientCluster, history: HistoryWriter, image: str) -> None:
        super().__init__(
            config, cluster, history, image, [consumer_process(i) for i in range(config.consumers)]
        )
        #: The topic each reader reads (`--topics`).
        self.topics = topics_by_process(self.names, config.topic, config.topics, paired_readers(config))
        #: Where each reader got to, across its processes.
        self.positions: dict[str, dict[int, int]] = {name: {} for name in self.names}
        #: Each reader's current recorder (its current process's).
        self.recorders: dict[str, ReaderRecorder] = {}
        #: Whether the readers are to be held (`hold`) or to read (`release`).
        self.holding = False
        self._signalled: dict[str, float] = {}
        self._steerer = threading.Thread(target=self._steer, name="reader-steering", daemon=True)

    def _worker(self, name: str) -> dict[str, str]:
        """Reader `name`'s worker arguments: the topic, and where and whether held it starts."""
        return {
            "kchaos.mode": READER_MODE,
            "kchaos.topic": self.topics[name],
            "kchaos.partitions": str(self.config.partitions),
            "kchaos.from": offsets_field(self.positions[name]),
            "kchaos.hold": str(self.holding).lower(),
        }

    def _recorder(self, name: str, isolation: str) -> MemberRecorder:
        recorder = ReaderRecorder(
            name, self.topics[name], self.history, group=reader_group(self.config.run_id, name),
            isolation=isolation, tally=self.tallies[name], positions=self.positions[name],
        )  # fmt: skip
        self.recorders[name] = recorder
        return recorder

    def start(self) -> None:
        super().start()
        self._steerer.start()

    def _record_restart(self, name: str, code: int | None) -> None:
        """A reader that died starts again from the positions it recorded."""
        resumed = {str(p): o for p, o in sorted(self.positions[name].items())}
        self.history.record(
            name, INFO, CONSUMER_RESTART, topic=self.topics[name], detail={"exit": code, "from": resumed},
            error=f"the client process ended (exit {code}); restarted as a new process from its positions",
        )  # fmt: skip

    def hold(self, timeout: float = 30.0) -> None:
        """Holds every reader back and returns once each has said it paused its client."""
        self.holding = True
        self._signal_disagreeing(force=True)
        wait_until(
            lambda: all(r.held.is_set() for n, r in list(self.recorders.items()) if n not in self.ended),
            timeout,
            "every reader held",
        )

    def release(self) -> None:
        """Lets every reader read again (each says so with its `release` line)."""
        self.holding = False
        self._signal_disagreeing(force=True)

    def _signal_disagreeing(self, force: bool = False) -> None:
        """Signals each started reader whose last word (held or not) is not what was asked, unless it was
        signalled within `RESIGNAL_S` (`force`: whatever it was)."""
        now = time.monotonic()
        wanted = HOLD_SIGNAL if self.holding else RELEASE_SIGNAL
        for name, member in list(self.members.items()):
            recorder = self.recorders.get(name)
            if recorder is None or not recorder.started.is_set() or recorder.held.is_set() == self.holding:
                continue
            if not force and now - self._signalled.get(name, 0.0) < RESIGNAL_S:
                continue
            if member.client.state() == "paused":
                continue  # frozen by a fault: a signal would thaw it; sent once the fault thaws it
            self._signalled[name] = now
            member.client.signal(wanted.name)

    def _steer(self) -> None:
        while not self._stop.wait(STEER_POLL_S):
            self._signal_disagreeing()

    def stop(self) -> None:
        """Stops the watcher, then every reader (SIGTERM), as the members are stopped."""
        self._stop.set()
        if self._steerer.is_alive():
            self._steerer.join()
        super().stop()
