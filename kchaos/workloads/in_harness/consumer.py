"""Consumers that read every partition during the run and record every record they are handed.

The final read says what the log holds after healing; these say what clients could see while faults were
active. Only the two together reveal a record that was visible and later vanished (`truncated-read`) or a
consumer whose position jumped (`poll-skip`) or went back (`nonmonotonic-poll`).

Partitions are assigned, not subscribed: a group rebalance would move partitions between consumers at
moments the nemesis chooses, and every move would reset what the checker may expect of poll order. Each
(re)assignment is recorded as an `assign` row so the checker knows where a consumer's order starts over.
Like producers, consumers record and never judge: an error the client reports (an offset reset after
truncation, say) becomes an `info` row, and the consumer carries on from wherever the client goes next.

A crafted scenario may hold the readers back (`hold()` / `release()`): a consumer that lags. Writes made
while they are held are seen by no reader before the final read, which is what turns a truncation into
`lost-write` (never read) rather than `truncated-read` (read, then gone). Each process records the hold as
`info` rows `hold` / `release`, so the history says why nothing was read meanwhile.
"""

from __future__ import annotations

import logging
import threading
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Protocol

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Message, TopicPartition

from kchaos.model.client_config import NO_SETTINGS
from kchaos.model.config import RunConfig
from kchaos.model.events import (
    ASSIGN,
    HOLD,
    INFO,
    ISOLATION,
    OK,
    POLL,
    READ_COMMITTED,
    RELEASE,
    IsolationLevel,
    consumer_process,
)
from kchaos.model.history import HistoryWriter, RecordRows, SpelledRow
from kchaos.model.waiting import wait_until
from kchaos.model.workload_rules import paired_readers
from kchaos.model.written_topics import topics_by_process
from kchaos.workloads.outcome import error_text

log = logging.getLogger(__name__)

#: Records handed over per `consume` call; small enough that a stop request is noticed promptly.
BATCH = 500


def consumer_settings(
    bootstrap: str,
    client_id: str,
    group: str,
    isolation: IsolationLevel = READ_COMMITTED,
    user: Mapping[str, str] = NO_SETTINGS,
) -> dict[str, object]:
    """A reader's client settings. The isolation level is always set, never left to the client's default
    (read_committed in librdkafka, read_uncommitted in Java's consumer): what a reader may return depends
    on it, and its rows record it (`isolation_of`). `user`: the run's `--consumer-config`, last (none is a
    key kchaos sets for a reason of its own)."""
    return {
        "bootstrap.servers": bootstrap,
        "client.id": client_id,
        "isolation.level": isolation,
        # A group id is required even with manual assignment; nothing is committed under it.
        "group.id": group,
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        # After truncation a position can be past the new log end: start over from the beginning rather
        # than skip to the end, so what happened is visible in the history instead of silently jumped.
        "auto.offset.reset": "earliest",
        "logger": logging.getLogger(f"kchaos.librdkafka.{client_id}"),
        **user,
    }


def assign_every_partition(
    consumer: Consumer,
    topic: str,
    partitions: int,
    positions: Mapping[int, int],
    history: HistoryWriter,
    process: str,
    isolation: str,
) -> None:
    """Assigns `consumer` every partition of `topic` from `positions` (from the beginning where it has
    none) and records it as `process`'s `assign` row, naming where each starts and the `isolation` level
    its reads have: what a reader and a read-write transaction's consumer do at each (re)connection."""
    start = {p: positions.get(p, OFFSET_BEGINNING) for p in range(partitions)}
    consumer.assign([TopicPartition(topic, p, offset) for p, offset in start.items()])
    history.record(
        process, OK, ASSIGN, topic=topic,
        detail={"partitions": sorted(start), "from": {str(p): positions.get(p) for p in start},
                ISOLATION: isolation},
    )  # fmt: skip


def reader_group(run_id: str, process: str) -> str:
    """The group id an assigned reader names (required with manual assignment, though nothing is committed
    under it): one of its own, in a thread or a process."""
    return f"kchaos-{run_id}-{process}"


def isolation_of(settings: Mapping[str, object]) -> str:
    """The isolation level a reader's settings name, for the rows that start its reading."""
    return str(settings["isolation.level"])


def record_message(
    history: HistoryWriter, process: str, topic: str, message: Message
) -> tuple[int, int] | None:
    """Records what a consumer was handed: a record as an `ok` `poll` row, an error as an `info` one (the
    end of a partition is neither). Returns the record's partition and the offset after it, which the
    caller reads from next; None for anything else. Shared by every reader, so they record alike."""
    partition = message.partition()
    error = message.error()
    if error is not None:
        if error.code() != KafkaError._PARTITION_EOF:
            history.record(
                process, INFO, POLL, topic=message.topic() or topic, partition=partition,
                error=error_text(error),
            )  # fmt: skip
        return None
    offset = message.offset()
    key = message.key()
    value = message.value()
    history.record(
        process, OK, POLL, topic=message.topic(), partition=partition, offset=offset,
        key=key.decode() if key is not None else None,
        value=value.decode() if value is not None else None,
    )  # fmt: skip
    if partition is None or offset is None:
        return None
    return partition, offset + 1


def record_messages(polled: RecordRows, topic: str, messages: Sequence[Message]) -> list[tuple[int, int]]:
    """Records a batch of what a consumer of `topic` was handed, as `record_message` records each, into
    `polled`'s history by its process (`polled`'s rows are of `topic`), its records a batch at a time
    (`write_spelled`): a reader of tens of thousands of records a second spent more on recording them one
    by one than on reading them. Returns each record's partition and the offset after it, in order."""
    history = polled.history
    rows: list[SpelledRow] = []
    reads: list[tuple[int, int]] = []
    for message in messages:
        offset, error = message.offset(), message.error()
        if error is None and offset is not None and message.topic() == topic:
            key, value, partition = message.key(), message.value(), message.partition()
            rows.append(
                polled.row(
                    partition, offset, key.decode() if key is not None else None,
                    value.decode() if value is not None else None, None,
                )
            )  # fmt: skip
            if partition is not None:
                reads.append((partition, offset + 1))
            continue
        if rows:
            history.write_spelled(rows)
            rows = []
        read = record_message(history, polled.process, topic, message)
        if read is not None:
            reads.append(read)
    if rows:
        history.write_spelled(rows)
    return reads


class Reader(Protocol):
    """A reading process as its workload drives it: run in a thread until stopped, held back on request."""

    process: str
    reading: threading.Event
    held: threading.Event

    def run(self, stop: threading.Event) -> None: ...


class ReaderThreads:
    """Readers in threads of their own, started, held back, released and stopped together."""

    def __init__(self, readers: Sequence[Reader]) -> None:
        self.readers = list(readers)
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    def start(self) -> None:
        for reader in self.readers:
            reader.reading.set()
            thread = threading.Thread(target=reader.run, args=(self._stop,), name=reader.process, daemon=True)
            thread.start()
            self._threads.append(thread)

    def hold(self, timeout: float = 30.0) -> None:
        """Holds every reader back and returns once each has paused its client (records nothing more)."""
        for reader in self.readers:
            reader.reading.clear()
        wait_until(lambda: all(r.held.is_set() for r in self.readers), timeout, "every reader held")

    def release(self) -> None:
        for reader in self.readers:
            reader.reading.set()

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(15)


class ReaderLoop(ABC):
    """The loop every reading process runs: poll, record what it is handed, be held back on request, and
    replace a client that failed fatally. What differs between readers is how a client starts reading
    (`_connect`: assigned partitions, or joining a group), how it holds (`_hold`) and what it does after
    each batch (`_after_batch`: a group member commits)."""

    process: str
    topic: str
    history: HistoryWriter
    consumer: Consumer | None
    fatal: KafkaError | None
    reading: threading.Event

    @abstractmethod
    def _connect(self) -> None: ...

    @abstractmethod
    def _hold(self, stop: threading.Event) -> None: ...

    @abstractmethod
    def _advanced(self, partition: int, next_offset: int) -> None:
        """A record of `partition` was recorded; `next_offset` is the one after it."""

    def _after_batch(self) -> None:  # noqa: B027 - a hook that does nothing unless a reader overrides it
        """Nothing by default."""

    def _crashed(self, stop: threading.Event) -> bool:
        """Whether this process was crashed on order, and so sat out this turn of the loop; an assigned
        reader never is (only group members are, see `kchaos.workloads.in_harness.group_consumer`)."""
        return False

    def _on_error(self, error: KafkaError) -> None:
        if error.fatal():
            self.fatal = error
        else:
            log.debug("%s: %s", self.process, error)

    def run(self, stop: threading.Event) -> None:
        try:
            self._connect()
            while not stop.is_set():
                if self.fatal is not None:
                    error, self.fatal = self.fatal, None
                    log.warning("%s: fatal consumer error, starting a new client: %s", self.process, error)
                    self.history.record(self.process, INFO, POLL, topic=self.topic, error=error_text(error))
                    self._connect()
                if self._crashed(stop):
                    continue
                if not self.reading.is_set():
                    self._hold(stop)
                    continue
                self._poll_once()
        except Exception:
            log.exception("%s stopped reading", self.process)
            raise
        finally:
            if self.consumer is not None:
                self.consumer.close()  # a group member leaves its group: the others take over at once
                self.consumer = None

    def _poll_once(self) -> None:
        assert self.consumer is not None
        try:
            messages = self.consumer.consume(num_messages=BATCH, timeout=0.5)
        except KafkaException as exc:
            error: KafkaError = exc.args[0]
            if error.fatal():
                self.fatal = error
                return
            raise
        for read in record_messages(self._polled, self.topic, messages):
            self._advanced(*read)
        self._after_batch()

    @cached_property
    def _polled(self) -> RecordRows:
        """This reader's `ok` `poll` rows of its topic."""
        return RecordRows(self.history, self.process, OK, POLL, self.topic)


@dataclass
class ConsumerProcess(ReaderLoop):
    """One consumer client in its own thread, assigned every partition of the topic.

    `positions` is the next offset this process expects per partition, so a replacement client after a
    fatal error resumes where the previous one stopped (and says so in its `assign` row).
    """

    process: str
    settings: dict[str, object]
    topic: str
    partitions: int
    history: HistoryWriter
    positions: dict[int, int] = field(default_factory=dict)
    fatal: KafkaError | None = None
    consumer: Consumer | None = None
    #: Set by the workload while this process may read; cleared to hold it back.
    reading: threading.Event = field(default_factory=threading.Event)
    #: Set by this process once it has paused its client; the workload waits on it.
    held: threading.Event = field(default_factory=threading.Event)

    def _connect(self) -> None:
        """Assigns every partition from where this process got to (from the beginning at first)."""
        if self.consumer is not None:
            self.consumer.close()
        self.consumer = Consumer({**self.settings, "error_cb": self._on_error})
        assign_every_partition(
            self.consumer, self.topic, self.partitions, self.positions, self.history, self.process,
            isolation_of(self.settings),
        )  # fmt: skip

    def _hold(self, stop: threading.Event) -> None:
        """Pauses fetching until released; librdkafka drops what it had prefetched, so nothing from the
        held period reaches this process later from a stale local queue."""
        assert self.consumer is not None
        assignment = self.consumer.assignment()
        self.consumer.pause(assignment)
        self.history.record(self.process, INFO, HOLD, topic=self.topic)
        self.held.set()
        while not (self.reading.wait(0.2) or stop.is_set()):
            pass
        self.consumer.resume(assignment)
        self.held.clear()
        self.history.record(self.process, INFO, RELEASE, topic=self.topic)

    def _advanced(self, partition: int, next_offset: int) -> None:
        self.positions[partition] = next_offset


class ConsumerWorkload(ReaderThreads):
    """`consumers` independent readers of the whole topic, running until the workload stops."""

    def __init__(self, config: RunConfig, bootstrap: str, history: HistoryWriter) -> None:
        names = [consumer_process(i) for i in range(config.consumers)]
        topics = topics_by_process(names, config.topic, config.topics, paired_readers(config))
        super().__init__(
            [
                ConsumerProcess(
                    process=consumer_process(i),
                    settings=consumer_settings(
                        bootstrap,
                        consumer_process(i),
                        reader_group(config.run_id, consumer_process(i)),
                        config.reader_isolation(i),
                        config.consumer_config,
                    ),
                    topic=topics[consumer_process(i)],
                    partitions=config.partitions,
                    history=history,
                )
                for i in range(config.consumers)
            ]
        )
