"""The assigned readers of `--workload sends` and `txn` as librdkafka processes (`--client
librdkafka-process`): `consumer-N`, each in a container of its own, so the nemesis can kill, freeze or cut
off a reader (`target=consumer-N`) as it does a producer, and the history shows what a reader that
suffered it saw.

The worker (kchaos/compose/rdkafka/reader_worker.py, `kchaos.mode=reader`) does what the in-process
reader does (kchaos/workloads/in_harness/consumer.py `ConsumerProcess`), with its settings
(`consumer_settings`, the isolation level `RunConfig.reader_isolation` gives each), and its lines become the
rows that reader writes: `assign` (detail: partitions, `from`, isolation), `poll` (`ok` with partition,
offset, key and value; `info` with the error), `info` `hold` and `release`. The group members' process
machinery is reused whole (kchaos/workloads/processes/java/group.py: container, recording thread, supervisor,
shutdown), with a recorder that reads the reader's lines and keeps its positions.

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
from typing import cast

from kchaos.compose.rdkafka.group_worker import offsets_field
from kchaos.compose.rdkafka.reader_worker import HELD, HOLD_SIGNAL, READER_MODE, RELEASE_SIGNAL, RELEASED
from kchaos.harness.client_container import internal_bootstrap
from kchaos.harness.cluster import KafkaCluster
from kchaos.model.config import RunConfig
from kchaos.model.events import (
    ASSIGN,
    CONSUMER_RESTART,
    HOLD,
    INFO,
    ISOLATION,
    OK,
    POLL,
    RELEASE,
    IsolationLevel,
    consumer_process,
)
from kchaos.model.history import HistoryWriter, RecordRows, SpelledRow
from kchaos.model.stamped_rows import StampedRows
from kchaos.model.waiting import wait_until
from kchaos.workloads.in_harness.consumer import consumer_settings, reader_group
from kchaos.workloads.processes.java.group import (
    ASSIGNED,
    POLL_ERROR,
    POLLED,
    JavaGroupWorkload,
    MemberLine,
    MemberProcess,
    MemberRecorder,
    field_text,
    parse_offsets,
)
from kchaos.workloads.processes.java.producer import STARTED, STOPPED, LineError, named_fields
from kchaos.workloads.processes.rdkafka.producer import rdkafka_arguments

log = logging.getLogger(__name__)

#: The fields of each kind of reader line after its kind and clock (the worker's docstring lists them).
_FIELDS: dict[str, tuple[str, ...]] = {
    STARTED: ("said",),
    STOPPED: ("said",),
    ASSIGNED: ("partitions", "offsets"),
    POLLED: ("partition", "offset", "key", "value"),
    POLL_ERROR: ("exception", "message", "said"),
    HELD: (),
    RELEASED: (),
}
#: How often the watcher looks for a reader that has not done what `hold`/`release` asked, and how long it
#: leaves a signal to take effect before it sends it again.
STEER_POLL_S = 0.2
RESIGNAL_S = 1.0


def parse_reader_line(line: str) -> MemberLine:
    """The event a reader worker's line says; LineError for anything else."""
    return MemberLine(**named_fields(line, _FIELDS, "reader"))


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
            resumed = parse_offsets(said.offsets)
            partitions = sorted(int(p) for p in said.partitions.split(",") if p)
            rows.record(
                self.process, OK, ASSIGN, topic=self.topic,
                detail={"partitions": partitions, "from": {str(p): resumed.get(str(p)) for p in partitions},
                        ISOLATION: self.isolation},
            )  # fmt: skip
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


class RdkafkaReaderWorkload(JavaGroupWorkload):
    """`consumers` librdkafka readers of the whole topic, each a process of its own (`consumer-N`)."""

    #: No Java main class: the image's entrypoint picks the worker by the `kchaos.mode` argument.
    main_class = None

    def __init__(self, config: RunConfig, cluster: KafkaCluster, history: HistoryWriter, image: str) -> None:
        super().__init__(
            config, cluster, history, image, [consumer_process(i) for i in range(config.consumers)]
        )
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
            "kchaos.topic": self.config.topic,
            "kchaos.partitions": str(self.config.partitions),
            "kchaos.from": offsets_field(self.positions[name]),
            "kchaos.hold": str(self.holding).lower(),
        }

    def _command(self, name: str, isolation: str) -> list[str]:
        settings = consumer_settings(
            internal_bootstrap(self.cluster), name, reader_group(self.config.run_id, name),
            cast(IsolationLevel, isolation),
        )  # fmt: skip
        return [
            *(f"{key}={value}" for key, value in self._worker(name).items()),
            *rdkafka_arguments(settings),
        ]

    def _recorder(self, name: str, isolation: str) -> MemberRecorder:
        recorder = ReaderRecorder(
            name, self.config.topic, self.history, group=reader_group(self.config.run_id, name),
            isolation=isolation, tally=self.tallies[name], positions=self.positions[name],
        )  # fmt: skip
        self.recorders[name] = recorder
        return recorder

    def start(self) -> None:
        super().start()
        self._steerer.start()

    def _after_end(self, name: str, member: MemberProcess) -> None:
        """Starts a reader that died again, from the positions it recorded."""
        code = member.client.exit_code(5.0)
        if code == 0 or not member.recorder.started.is_set():
            log.warning("%s: the reader process ended (exit %s); not restarted", name, code)
            self.ended.add(name)
            return
        self.restarts[name] += 1
        self._save_log(name, member, f".{self.restarts[name] - 1}")
        member.client.remove()  # its name is the new process's
        resumed = {str(p): o for p, o in sorted(self.positions[name].items())}
        self.history.record(
            name, INFO, CONSUMER_RESTART, topic=self.config.topic, detail={"exit": code, "from": resumed},
            error=f"the client process ended (exit {code}); restarted as a new process from its positions",
        )  # fmt: skip
        self._launch(name)
        log.info("%s: the reader process ended (exit %s); restarted", name, code)

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
