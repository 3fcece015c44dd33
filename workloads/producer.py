"""Producers that write unique values at a steady rate and record every send; they never judge.

Each send is recorded as `invoke` before it is handed to the client, then exactly once as `ok` (with the
partition and offset Kafka acknowledged), `fail` or `info`. Values are `<process>-<sequence>`, unique across
the run, so a checker can follow any single write from acknowledgement to (missing) read.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field

from confluent_kafka import KafkaError, KafkaException, Message, Producer

from harness.config import RunConfig
from harness.events import FAIL, INFO, INVOKE, OK, PRODUCER_RESTART, SEND, producer_process
from harness.history import HistoryWriter
from workloads.outcome import error_text, outcome_of

log = logging.getLogger(__name__)


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
    interval: float
    history: HistoryWriter
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
        next_at = time.monotonic()
        while not stop.is_set():
            if self.fatal is not None:
                self._replace_after_fatal()
            self._send_one()
            self._serve(0)
            next_at += self.interval
            if next_at < time.monotonic():
                next_at = time.monotonic()  # behind schedule: no burst to catch up
            # Pace to the configured rate, serving delivery reports meanwhile (poll returns early on each).
            while not stop.is_set() and self.fatal is None and (delay := next_at - time.monotonic()) > 0:
                self._serve(delay)

    def _send_one(self) -> None:
        value = f"{self.process}-{self.sent}"
        partition = self.sent % self.partitions
        self.sent += 1
        self.history.record(self.process, INVOKE, SEND, topic=self.topic, partition=partition, value=value)
        try:
            self.producer.produce(
                self.topic,
                value=value.encode(),
                key=value.encode(),
                partition=partition,
                on_delivery=self._delivered,
            )
            self.pending[value] = partition
        except BufferError as exc:
            self.history.record(
                self.process, FAIL, SEND, topic=self.topic, partition=partition, value=value,
                error=f"_QUEUE_FULL: {exc}",
            )  # fmt: skip
        except KafkaException as exc:  # refused before it was queued, e.g. the instance failed fatally
            error: KafkaError = exc.args[0]
            self.history.record(
                self.process, FAIL, SEND, topic=self.topic, partition=partition, value=value,
                error=error_text(error),
            )  # fmt: skip
            if error.fatal():
                self.fatal = error

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
        """Waits for outstanding deliveries; what is still undelivered is recorded as indeterminate."""
        self._serve(timeout, flush=True)
        for value, partition in list(self.pending.items()):
            self.history.record(
                self.process, INFO, SEND, topic=self.topic, partition=partition, value=value,
                error=reason,
            )  # fmt: skip
        self.pending.clear()


class ProducerWorkload:
    """`producers` concurrent clients sharing the configured rate, each writing to every partition in turn."""

    def __init__(self, config: RunConfig, bootstrap: str, history: HistoryWriter) -> None:
        self.config = config
        self.history = history
        interval = config.producers / config.rate
        self.processes = [
            ProducerProcess(
                process=producer_process(i),
                settings=producer_settings(config, bootstrap, producer_process(i)),
                topic=config.topic,
                partitions=config.partitions,
                interval=interval,
                history=history,
            )
            for i in range(config.producers)
        ]
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    def start(self) -> None:
        for process in self.processes:
            thread = threading.Thread(
                target=process.run, args=(self._stop,), name=process.process, daemon=True
            )
            thread.start()
            self._threads.append(thread)

    def stop(self) -> None:
        """Stops sending and waits for every delivery report (at most the message timeout, plus slack)."""
        self._stop.set()
        for thread in self._threads:
            thread.join(10)
        drain_timeout = self.config.message_timeout_ms / 1000 + 5
        for process in self.processes:
            process.drain(drain_timeout)
