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

from confluent_kafka import KafkaError, Message, Producer

from harness.config import RunConfig
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
    """One producer client in its own thread; `sent` is the sequence number of its next value."""

    process: str
    producer: Producer
    topic: str
    partitions: int
    interval: float
    history: HistoryWriter
    sent: int = 0
    pending: dict[str, int] = field(default_factory=dict)

    def run(self, stop: threading.Event) -> None:
        next_at = time.monotonic()
        while not stop.is_set():
            self._send_one()
            self.producer.poll(0)
            next_at += self.interval
            if next_at < time.monotonic():
                next_at = time.monotonic()  # behind schedule: no burst to catch up
            # Pace to the configured rate, serving delivery reports meanwhile (poll returns early on each).
            while not stop.is_set() and (delay := next_at - time.monotonic()) > 0:
                self.producer.poll(delay)

    def _send_one(self) -> None:
        value = f"{self.process}-{self.sent}"
        partition = self.sent % self.partitions
        self.sent += 1
        self.history.record(
            self.process, "invoke", "send", topic=self.topic, partition=partition, value=value
        )
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
                self.process, "fail", "send", topic=self.topic, partition=partition, value=value,
                error=f"_QUEUE_FULL: {exc}",
            )  # fmt: skip

    def _delivered(self, error: KafkaError | None, message: Message) -> None:
        value = (message.value() or b"").decode()
        partition = self.pending.pop(value, message.partition())
        outcome = outcome_of(error)
        self.history.record(
            self.process, outcome, "send", topic=message.topic(), partition=partition,
            offset=message.offset() if outcome == "ok" else None, key=value, value=value,
            error=error_text(error) if error is not None else None,
        )  # fmt: skip

    def drain(self, timeout: float) -> None:
        """Waits for outstanding deliveries; what is still undelivered is recorded as indeterminate."""
        self.producer.flush(timeout)
        for value, partition in list(self.pending.items()):
            self.history.record(
                self.process, "info", "send", topic=self.topic, partition=partition, value=value,
                error="no delivery report before the workload stopped",
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
                process=f"producer-{i}",
                producer=Producer(producer_settings(config, bootstrap, f"producer-{i}")),
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
