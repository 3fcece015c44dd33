"""Producers that are the release's Java client (`--client java`), each a process in a container of its
own, recorded from what the process prints.

The worker (kchaos/compose/client/KchaosProducer.java) makes the same sends as the librdkafka producers
(kchaos/workloads/in_harness/producer.py): values `<process>-<sequence>`, key the same, partition the sequence
modulo the partitions, at the run's rate, with the same producer settings in the Java client's words. It
prints a line per event (`invoke` before each send(), then the client's callback), and a thread per worker
records each line as it arrives, so the history holds what the process acknowledged even if it dies. A send
whose outcome the process never printed (it died, or was stopped before its callback) is recorded `info`,
indeterminate, with the reason: it may have been written or not.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kchaos.harness.client_container import ClientContainer, internal_bootstrap, start_client
from kchaos.harness.cluster import KafkaCluster
from kchaos.model.config import RunConfig
from kchaos.model.events import FAIL, INFO, INVOKE, OK, SEND, EventType, producer_process
from kchaos.model.history import HistoryWriter, RecordRows, SpelledRow
from kchaos.model.java_send_errors import java_send_outcome
from kchaos.model.releases import Release
from kchaos.model.stamped_rows import StampedRows
from kchaos.workloads.processes.client_supervisor import ClientSupervisor

log = logging.getLogger(__name__)

#: The worker's lines, tab-separated, each kind followed by the worker's monotonic clock (`time_ns`) and
#: then its fields: `started VERSION`, `invoke VALUE PARTITION`, `ok VALUE PARTITION
#: OFFSET`, `error VALUE PARTITION EXCEPTION MESSAGE` (the send's callback), `refused VALUE PARTITION
#: EXCEPTION MESSAGE` (thrown by send() itself: never in the client's buffer), `stopped SENT OUTSTANDING`.
STARTED, INVOKED, ACKED, ERRORED, REFUSED, STOPPED = "started", "invoke", "ok", "error", "refused", "stopped"
#: The fields of each kind of line after its kind and clock, named as `WorkerLine`'s.
_FIELDS: dict[str, tuple[str, ...]] = {
    STARTED: ("said",),
    INVOKED: ("value", "partition"),
    ACKED: ("value", "partition", "offset"),
    ERRORED: ("value", "partition", "exception", "message"),
    REFUSED: ("value", "partition", "exception", "message"),
    STOPPED: ("said", "said"),
}
#: Why a send still outstanding when the workload stopped is indeterminate: the librdkafka producer's words.
STOPPED_REASON = "no delivery report before the workload stopped"
#: How long a worker may take from its start to its `started` line (a JVM and a client on a busy machine).
START_TIMEOUT_S = 60.0
#: Beyond the drain, how long a stopped worker may take to exit before it is killed.
EXIT_SLACK_S = 10.0


class LineError(ValueError):
    """A worker line that is not in the protocol: the worker and this reader disagree."""


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


def named_fields(line: str, fields: Mapping[str, tuple[str, ...]], protocol: str) -> dict[str, Any]:
    """A worker line's kind, its `time_ns` (every line's second field: the worker's monotonic clock as it
    printed, `kchaos.model.stamped_rows`) and the fields after it by the names `fields` gives each kind
    (`partition` and `offset` as numbers, an empty `offset` None, every `said` field gathered in order):
    the one reader of the workers' line protocols, each table naming its lines. LineError for a line
    outside the protocol."""
    kind, *texts = line.rstrip("\r").split("\t")
    names = fields.get(kind)
    if names is None or len(texts) != len(names) + 1:
        raise LineError(f"not a {protocol} line: {line!r}")
    stamp, *texts = texts
    values: dict[str, Any] = {
        "kind": kind,
        "said": tuple(t for n, t in zip(names, texts, strict=True) if n == "said"),
    }
    try:
        values["time_ns"] = int(stamp)
        if values["time_ns"] < 0:
            raise ValueError(stamp)
        for name, text in zip(names, texts, strict=True):
            if name == "offset" and not text:  # acknowledged without one: librdkafka, for some retries
                values[name] = None
            elif name in ("partition", "offset"):
                values[name] = int(text)
            elif name != "said":
                values[name] = text
    except ValueError:
        raise LineError(f"a {protocol} line without its numbers: {line!r}") from None
    return values


def parse_line(line: str) -> WorkerLine:
    """The event a worker line says; LineError for anything else."""
    return WorkerLine(**named_fields(line, _FIELDS, "worker"))


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


#: The Java client's batch.size: the most bytes of one partition's records in one request. Not librdkafka's
#: 1 MB: the Java client takes a whole batch.size from its 32 MiB buffer.memory for each batch it opens, so
#: 1 MB batches on more than 32 partitions, held up by a failover, would leave sends waiting for memory.
BATCH_BYTES = 256 * 1024


def java_producer_settings(
    config: RunConfig, bootstrap: str, client_id: str, release: Release
) -> dict[str, str]:
    """The librdkafka producer's settings (kchaos/workloads/in_harness/producer.py) as the Java client of
    `release` spells them: librdkafka's message.timeout.ms is delivery.timeout.ms (2.1+, KIP-91; at least
    linger plus the request timeout, as the client requires); librdkafka retries until that timeout, as Java
    does by default from 2.1, so older clients are told to; a full buffer blocks a send up to the message
    timeout, as the librdkafka producer waits for room in its queue; a batch holds up to `BATCH_BYTES`, where
    Java's own default, 16 KiB, held a worker's unpaced sends to about 30,000/s on a busy two-core machine
    while the librdkafka process, whose batches hold up to 1 MB, did three times that."""
    linger_ms = 5
    settings = {
        "bootstrap.servers": bootstrap,
        "client.id": client_id,
        "acks": config.acks,
        "request.timeout.ms": str(config.request_timeout_ms),
        "linger.ms": str(linger_ms),
        "batch.size": str(BATCH_BYTES),
        "retry.backoff.ms": "100",
        "max.block.ms": str(config.message_timeout_ms),
    }
    if release.idempotent_producer:
        settings["enable.idempotence"] = str(bool(config.idempotence)).lower()
    if release.delivery_timeout:
        delivery = max(config.message_timeout_ms, linger_ms + config.request_timeout_ms)
        settings["delivery.timeout.ms"] = str(delivery)
    else:
        settings["retries"] = str(2**31 - 1)
    return settings


@dataclass
class JavaProducer:
    """One worker: its container, and the thread that records its lines until it ends."""

    recorder: WorkerRecorder
    client: ClientContainer
    thread: threading.Thread = field(init=False)
    stopping: bool = False

    def __post_init__(self) -> None:
        self.thread = threading.Thread(target=self._record, name=self.recorder.process, daemon=True)
        self.thread.start()

    def _record(self) -> None:
        for lines in self.client.batches():
            self.recorder.take_all(lines)
        if self.stopping:
            reason = STOPPED_REASON
        else:
            code = self.client.exit_code(5.0)
            reason = f"the client process ended (exit {code}) without reporting the send"
            if code != 0:  # 0: a limited run's worker made its sends and drained them
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


class JavaProducerWorkload:
    """`producers` Java client processes sharing the configured rate, as ProducerWorkload's threads do."""

    def __init__(
        self,
        config: RunConfig,
        cluster: KafkaCluster,
        history: HistoryWriter,
        image: str,
        version: str,
        limit: int | None = None,
    ) -> None:
        """`image`: the client image (kchaos/harness/client_image.py) of kafka-clients `version`; `limit`:
        sends to make in all, split among the producers (a benchmark's record count)."""
        self.config = config
        self.cluster = cluster
        self.history = history
        self.image = image
        self.release = Release.parse(version)
        self.limit = limit
        self.producers: list[JavaProducer] = []
        #: Restarts a worker that dies while the run goes on, as an application's supervisor would.
        self.supervisor = ClientSupervisor(self, self._command, self._recorder)

    def _recorder(self, process: str) -> WorkerRecorder:
        """What records worker `process`'s lines (a transactional worker's differ)."""
        return SendRecorder(process, self.config.topic, self.history)

    def _exit_wait(self) -> float:
        """Seconds a stopped worker may take to exit: its drain (`kchaos.drain.ms`) and the slack."""
        return self.config.message_timeout_ms / 1000 + 2 + EXIT_SLACK_S

    def _command(self, n: int) -> list[str]:
        config = self.config
        process = producer_process(n)
        limit = self.limit
        share = None if limit is None else limit // config.producers + int(n < limit % config.producers)
        worker = {
            "kchaos.process": process,
            "kchaos.topic": config.topic,
            "kchaos.partitions": str(config.partitions),
            "kchaos.interval.us": str(round(config.producers / config.rate * 1e6) if config.rate > 0 else 0),
            "kchaos.drain.ms": str(config.message_timeout_ms + 2000),
            **({} if share is None else {"kchaos.limit": str(share)}),
        }
        settings = java_producer_settings(config, internal_bootstrap(self.cluster), process, self.release)
        return [f"{name}={value}" for name, value in {**worker, **settings}.items()]

    def start(self) -> None:
        """Starts every worker and waits until each has its client (its `started` line)."""
        for n in range(self.config.producers):
            client = start_client(self.cluster, self.image, producer_process(n), self._command(n))
            self.producers.append(JavaProducer(self._recorder(producer_process(n)), client))
        for producer in self.producers:
            producer.await_start(START_TIMEOUT_S)
        self.supervisor.start()

    def stop(self) -> None:
        """Stops every worker (SIGTERM: it drains up to the message timeout), records what each left
        outstanding as indeterminate, keeps its stderr in the run's logs and removes its container."""
        self.supervisor.stop()  # no worker is restarted once they are being stopped
        for producer in self.producers:
            producer.stopping = True
            producer.client.terminate()
        wait = self._exit_wait()
        for producer in self.producers:
            producer.thread.join(wait)
            if producer.thread.is_alive():
                log.warning(
                    "%s still running %.0fs after SIGTERM; killing it", producer.recorder.process, wait
                )
                producer.client.kill()
                producer.thread.join(EXIT_SLACK_S)
                producer.client.close()
                producer.thread.join(EXIT_SLACK_S)
            producer.recorder.abandon(STOPPED_REASON)
            logs = self.history.files.logs
            logs.mkdir(parents=True, exist_ok=True)
            (logs / f"{producer.recorder.process}.log").write_bytes(producer.client.stderr())
            producer.client.remove()
        self.producers = []
