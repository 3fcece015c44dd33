"""Producers that write unique values at a steady rate (or as fast as the cluster takes them) and record
every send; they never judge.

Each send is recorded as `invoke` before it is handed to the client, then exactly once as `ok` (with the
partition and offset Kafka acknowledged), `fail` or `info`. Values are `<process>-<sequence>`, unique across
the run, so a checker can follow any single write from acknowledgement to (missing) read.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from confluent_kafka import KafkaError, KafkaException, Message, Producer

from kchaos.model.config import RunConfig
from kchaos.model.events import FAIL, INFO, INVOKE, OK, PRODUCER_RESTART, SEND, producer_process
from kchaos.model.history import HistoryWriter
from kchaos.model.written_topics import topics_by_process
from kchaos.workloads.outcome import error_text, outcome_of

log = logging.getLogger(__name__)

#: How long a send waits for delivery reports before it tries a full client queue again.
QUEUE_FULL_POLL_S = 0.01
#: Sends made in one go when unpaced, between serving delivery reports.
UNPACED_BATCH = 200
#: Longest single flush while draining, so a signal is handled between two.
DRAIN_SLICE_S = 0.5
#: Shortest wait for delivery reports between paced sends: the client counts its timeout in whole
#: milliseconds, so a shorter one returns at once and the loop would spin for the GIL.
MIN_POLL_S = 0.001
#: How far behind schedule sends may fall and still be made up: a poll that served a burst of delivery
#: reports (a failover's backlog acknowledged at once) takes tens of milliseconds, and dropping those
#: sends cost a 10,000/s run a sixth of its rate. After a longer stall the schedule restarts from now.
MAX_LAG_S = 0.1


class Pacer:
    """When a producer's next sends are due: at one per `interval` seconds, or as fast as it goes (0).

    Sends are due in batches of whatever time has made due, never faster than a millisecond's worth at a
    time, so a high rate does not mean a poll per send with a timeout the client rounds down to nothing.
    """

    def __init__(self, interval: float) -> None:
        self.interval = interval
        self.next_at = time.monotonic()

    def due(self) -> int:
        """How many sends are due now (and counts them as made)."""
        if self.interval == 0:
            return UNPACED_BATCH
        now = time.monotonic()
        if self.next_at < now - MAX_LAG_S:
            self.next_at = now  # behind schedule (a stalled client): carry on from now
        if self.next_at > now:
            return 0
        count = int((now - self.next_at) / self.interval) + 1
        self.next_at += count * self.interval
        return count

    def wait(self) -> float:
        """Seconds to serve delivery reports before the next send is due."""
        if self.interval == 0:
            return 0.0
        return max(MIN_POLL_S, self.next_at - time.monotonic())


def producer_settings(config: RunConfig, bootstrap: str, client_id: str) -> dict[str, object]:
    return {
        "bootstrap.servers": bootstrap,
        "client.id": client_id,
        "acks": config.acks,
        "enable.idempotence": bool(config.idempotence),
        "message.timeout.ms": config.message_timeout_ms,
        "request.timeout.ms": config.request_timeout_ms,
        "linger.ms": 5,
        "retry.backoff.ms": 100,
        "logger": logging.getLogger(f"kchaos.librdkafka.{client_id}"),
        # The user's own (--producer-config), last: none is a key kchaos sets for a reason of its own.
        **config.producer_config,
    }


@dataclass
class ProducerProcess:
    """One producer client in its own thread; `sent` is the sequence number of its next value.

    A fatal client error (e.g. an idempotent producer whose sequence numbers a newly, uncleanly elected
    leader does not know) makes a librdkafka instance unusable for good; like any application, the process
    then drains it and carries on with a new instance, and records that it did.
    """

    process: str
    settings: dict[str, object]
    topic: str
    partitions: int
    #: Seconds between this process's sends; 0 sends as fast as the client takes them.
    interval: float
    history: HistoryWriter
    #: Sends to make at most (a benchmark's record count); None: until stopped.
    limit: int | None = None
    #: How long a send waits for room in the client's full queue before it is recorded as failed.
    queue_wait: float = 30.0
    sent: int = 0
    pending: dict[str, int] = field(default_factory=dict)
    fatal: KafkaError | None = None
    producer: Producer = field(init=False)

    def __post_init__(self) -> None:
        self.producer = self._new_producer()

    def _new_producer(self) -> Producer:
        return Producer({**self.settings, "error_cb": self._on_error})

    def _on_error(self, error: KafkaError) -> None:
        if error.fatal():
            self.fatal = error

    def _serve(self, timeout: float, flush: bool = False) -> None:
        """poll/flush, which raise once the instance has failed fatally: noted, replaced by the run loop."""
        try:
            if flush:
                self.producer.flush(timeout)
            else:
                self.producer.poll(timeout)
        except KafkaException as exc:
            error: KafkaError = exc.args[0]
            if not error.fatal():
                raise
            self.fatal = error

    def _replace_after_fatal(self) -> None:
        error, self.fatal = self.fatal, None
        log.warning("%s: fatal producer error, replacing the instance: %s", self.process, error)
        self.drain(5.0, reason="producer instance failed fatally")
        self.history.record(self.process, INFO, PRODUCER_RESTART, error=error_text(error) if error else None)
        self.producer = self._new_producer()

    def run(self, stop: threading.Event) -> None:
        try:
            self._run(stop)
        except Exception:
            log.exception("%s stopped writing", self.process)
            raise

    def _run(self, stop: threading.Event) -> None:
        pacer = Pacer(self.interval)
        while not stop.is_set() and not self.done:
            if self.fatal is not None:
                self._replace_after_fatal()
            for _ in range(pacer.due()):
                if stop.is_set() or self.fatal is not None or self.done:
                    break
                self._send_one(stop)
            self._serve(pacer.wait())
        while self.pending and not stop.is_set():  # a benchmark's last sends: their reports, then idle
            self._serve(0.1)

    @property
    def done(self) -> bool:
        """Whether this process has made the sends it was limited to."""
        return self.limit is not None and self.sent >= self.limit

    def _send_one(self, stop: threading.Event) -> None:
        value = f"{self.process}-{self.sent}"
        partition = self.sent % self.partitions
        self.sent += 1
        self.history.record(self.process, INVOKE, SEND, topic=self.topic, partition=partition, value=value)
        encoded = value.encode()
        give_up_at = time.monotonic() + self.queue_wait
        while True:
            try:
                self.producer.produce(
                    self.topic, value=encoded, key=encoded, partition=partition, on_delivery=self._delivered
                )
                self.pending[value] = partition
                return
            except BufferError as exc:
                # The client's queue is full: wait for deliveries to make room, as Java's producer blocks
                # (max.block.ms); only a queue that stays full fails the send.
                if time.monotonic() < give_up_at and not stop.is_set() and self.fatal is None:
                    self._serve(QUEUE_FULL_POLL_S)
                    continue
                self.history.record(
                    self.process, FAIL, SEND, topic=self.topic, partition=partition, value=value,
                    error=f"_QUEUE_FULL: {exc}",
                )  # fmt: skip
                return
            except KafkaException as exc:  # refused before it was queued, e.g. the instance failed fatally
                error: KafkaError = exc.args[0]
                self.history.record(
                    self.process, FAIL, SEND, topic=self.topic, partition=partition, value=value,
                    error=error_text(error),
                )  # fmt: skip
                if error.fatal():
                    self.fatal = error
                return

    def _delivered(self, error: KafkaError | None, message: Message) -> None:
        value = (message.value() or b"").decode()
        partition = self.pending.pop(value, message.partition())
        outcome = outcome_of(error)
        self.history.record(
            self.process, outcome, SEND, topic=message.topic(), partition=partition,
            offset=message.offset() if outcome == OK else None, key=value, value=value,
            error=error_text(error) if error is not None else None,
        )  # fmt: skip

    def drain(self, timeout: float, reason: str = "no delivery report before the workload stopped") -> None:
        """Waits for outstanding deliveries; what is still undelivered is recorded as indeterminate.

        Flushed in slices of `DRAIN_SLICE_S`: the client's flush is one call into C that Python's signal
        handlers cannot interrupt, and a drain may wait the whole message timeout (minutes) for a broker
        that is gone; Ctrl-C or SIGTERM must still stop the run within a second."""
        deadline = time.monotonic() + timeout
        while True:
            self._serve(max(0.0, min(DRAIN_SLICE_S, deadline - time.monotonic())), flush=True)
            if not self.pending or self.fatal is not None or time.monotonic() >= deadline:
                break
        for value, partition in list(self.pending.items()):
            self.history.record(
                self.process, INFO, SEND, topic=self.topic, partition=partition, value=value,
                error=reason,
            )  # fmt: skip
        self.pending.clear()


class Writer(Protocol):
    """A writing process: runs in a thread of its own until told to stop."""

    process: str

    def run(self, stop: threading.Event) -> None: ...


class WriterThreads:
    """Writers in threads of their own, started and told to stop together; how long stopping may take is
    each workload's own (deliveries to drain, transactions to end)."""

    def __init__(self, writers: Sequence[Writer]) -> None:
        self.writers = list(writers)
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    def start(self) -> None:
        for writer in self.writers:
            thread = threading.Thread(target=writer.run, args=(self._stop,), name=writer.process, daemon=True)
            thread.start()
            self._threads.append(thread)

    def _join(self, timeout: float) -> None:
        """Tells every writer to stop and waits up to `timeout` seconds for each thread."""
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout)
            if thread.is_alive():
                log.warning("%s still running %.0fs after stop", thread.name, timeout)


class ProducerWorkload(WriterThreads):
    """`producers` concurrent clients sharing the configured rate, each writing to every partition in turn."""

    def __init__(
        self, config: RunConfig, bootstrap: str, history: HistoryWriter, limit: int | None = None
    ) -> None:
        """`limit`: sends to make in all (split among the producers), as a benchmark counts records."""
        self.config = config
        self.history = history
        interval = config.producers / config.rate if config.rate > 0 else 0.0
        n = config.producers
        shares = [None if limit is None else limit // n + (1 if i < limit % n else 0) for i in range(n)]
        names = [producer_process(i) for i in range(n)]
        topics = topics_by_process(names, config.topic, config.topics)
        self.processes: list[ProducerProcess] = [
            ProducerProcess(
                process=producer_process(i),
                settings=producer_settings(config, bootstrap, producer_process(i)),
                topic=topics[producer_process(i)],
                partitions=config.partitions,
                interval=interval,
                history=history,
                limit=shares[i],
                queue_wait=config.message_timeout_ms / 1000,
            )
            for i in range(config.producers)
        ]
        super().__init__(self.processes)

    def stop(self) -> None:
        """Stops sending and waits for every delivery report (at most the message timeout, plus slack)."""
        self._join(10)
        drain_timeout = self.config.message_timeout_ms / 1000 + 5
        for process in self.processes:
            process.drain(drain_timeout)
