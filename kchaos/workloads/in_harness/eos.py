"""Consume-transform-produce, exactly once: the loop Kafka Streams runs (`--workload eos`).

Plain producers write the input topic; each processor is a member of one consumer group reading it
read_committed, and a transactional producer (`transactional.id` fixed per processor) writing the output
topic (`kchaos.model.events.output_topic`). Per batch it polls, begins a transaction, writes one output record
per input record (the value names its input: `kchaos.model.events.output_value`), adds the consumer's
positions to the transaction (`send_offsets_to_transaction`, with the group's metadata, so since KIP-447 the
group's generation fences a zombie), and commits. A transaction that did not commit is aborted and the
consumer seeks back to the group's committed offsets, so its inputs are processed again: exactly once means
every input record reaches the output topic once among its committed transactions, however often it was read.

Each step is recorded in the vocabulary `kchaos.model.events` gives for it (poll rows, the transaction's rows,
a `commit` row whose outcome is the transaction's, an `assign` row for a rewind), so a checker can hold the
output, read read_committed by the final read, against the acknowledged inputs.

A processor crashes (`kill-member`) as a group member does (`kchaos.workloads.in_harness.crash`), its producer
abandoned with it; ordered while a transaction is open, the crash leaves it open, as a dead process would,
until the processor's new instance fences it with the same `transactional.id`.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, cast

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, TopicPartition

from kchaos.compose.rdkafka.transaction_plan import PlannedTransaction, TransactionPlanner
from kchaos.model.config import RunConfig
from kchaos.model.events import (
    ASKED_NS,
    ASSIGN,
    COMMIT,
    FAIL,
    INFO,
    ISOLATION,
    OK,
    PRODUCER_RESTART,
    READ_COMMITTED,
    EventType,
    group_name,
    output_topic,
    output_value,
    processor_process,
    transaction_id,
    transactional_name,
)
from kchaos.model.history import HistoryWriter
from kchaos.model.txn_on_timeout import commit_attempts, worker_policy
from kchaos.model.waiting import WaitTimeout, wait_until
from kchaos.model.workload_rules import chosen_txn_on_timeout
from kchaos.workloads.in_harness.consumer import BATCH, isolation_of, record_message
from kchaos.workloads.in_harness.group_consumer import CommitMode, GroupMember, GroupThreads, group_settings
from kchaos.workloads.in_harness.transactions import (
    TransactionalClient,
    TransactionalProducerProcess,
    transactional_settings,
)
from kchaos.workloads.outcome import error_text

log = logging.getLogger(__name__)

#: The `mode` of a processor's `commit` rows: its offsets commit with its transaction.
TRANSACTION_MODE: CommitMode = "transaction"


class ProcessorClient(TransactionalClient, Protocol):
    """The transactional producer a processor uses: it also adds its consumer's offsets to a transaction."""

    def send_offsets_to_transaction(
        self, positions: list[TopicPartition], group_metadata: Any, timeout: float = -1
    ) -> None: ...


class CrashedMidTransaction(Exception):
    """The processor was ordered to crash while its transaction was open: it stops right there."""


class OffsetsHung(Exception):
    """Adding the offsets to the transaction never returned: the producer is abandoned, its transaction
    open until its replacement fences it (it was never asked to commit, so it never commits)."""


#: Seconds past its own timeout a `send_offsets_to_transaction` call is waited for before it counts as hung.
OFFSETS_GRACE = 5.0

#: The threads whose `send_offsets_to_transaction` never returned. Their clients cannot be destroyed (every
#: call waits for the hung one), so their librdkafka threads outlive the run; see `hung_offset_calls`.
_HUNG: list[threading.Thread] = []


def hung_offset_calls() -> int:
    """How many given-up offset calls are still blocked in librdkafka. While any is, the process must not
    end through the C library's exit handlers: OpenSSL's, bundled in librdkafka, tears its per-thread
    state down under the hung client's live threads, and a CI run here died of it (SIGSEGV in
    `init_thread_stop` after every test had passed)."""
    return sum(thread.is_alive() for thread in _HUNG)


#: What a processor's consumer says before each commit: the positions to commit and the group's metadata.
OffsetsSource = Callable[[], tuple[list[TopicPartition], Any]]


@dataclass
class ProcessorWriter(TransactionalProducerProcess):
    """A processor's transactional producer: before each commit it adds the consumer's positions to the
    transaction, and it stops dead if its processor was ordered to crash meanwhile. Its transactions are
    its processor's batches, so its `planner` plans nothing."""

    offsets: OffsetsSource | None = None
    crash_ordered: Callable[[], bool] = lambda: False
    #: The offsets the last transaction carried, by partition, when they were handed to it (the host's
    #: monotonic clock), and why they could not be sent.
    sent: dict[str, int] = field(default_factory=dict)
    sent_ns: int | None = None
    offsets_error: str | None = None

    def _before_commit(self, client: TransactionalClient, txn: str) -> bool:
        if self.crash_ordered():
            raise CrashedMidTransaction(txn)
        assert self.offsets is not None, "a processor gives its writer its offsets"
        positions, metadata = self.offsets()
        self.sent = {str(tp.partition): tp.offset for tp in positions}
        self.sent_ns = time.monotonic_ns()
        error = self._send_offsets(cast(ProcessorClient, client), positions, metadata)
        if error is not None:
            self.offsets_error = error_text(error)
            if error.fatal():
                self.unusable = error
            return False
        return True

    def _send_offsets(
        self, client: ProcessorClient, positions: list[TopicPartition], metadata: Any
    ) -> KafkaError | None:
        """Sends the offsets, in a thread of its own: librdkafka may block in this call past its timeout
        (librdkafka #5456, open: the coordinator request's timeout is never checked, and #5511: a group
        coordinator's broker gone keeps it waiting), which a killed leader that was also the group
        coordinator did here for minutes. Past the timeout and a grace the client is given up for hung
        (`OffsetsHung`): it cannot abort either, since every call on it waits for the one in progress."""
        result: list[KafkaError | None] = []

        def send() -> None:
            try:
                client.send_offsets_to_transaction(positions, metadata, self.timeout)
                result.append(None)
            except KafkaException as exc:
                result.append(exc.args[0])

        thread = threading.Thread(target=send, name=f"{self.process}-offsets", daemon=True)
        thread.start()
        thread.join(self.timeout + OFFSETS_GRACE)
        if not result:
            _HUNG.append(thread)
            raise OffsetsHung(
                f"send_offsets_to_transaction did not return within {self.timeout + OFFSETS_GRACE:.0f}s"
            )
        return result[0]

    def fence_abandoned(self) -> None:
        """Fences what a producer abandoned at a crash left open; whatever made it unusable went with it."""
        self.unusable = None
        self.fence_with_new_instance()


@dataclass
class Processor(GroupMember):
    """One processor: a group member of the input topic whose batches become transactions on the output."""

    writer: ProcessorWriter | None = None
    transactions: int = 0
    stopping: threading.Event = field(default_factory=threading.Event)

    def _writer(self) -> ProcessorWriter:
        assert self.writer is not None, "a processor has a writer"
        return self.writer

    def run(self, stop: threading.Event) -> None:
        self.stopping = stop
        writer = self._writer()
        writer.offsets = self._positions
        writer.crash_ordered = self.orders.crash.is_set
        try:
            super().run(stop)
        finally:
            if writer.client is None:
                writer.fence_abandoned()  # crashed and never brought back
            else:
                writer.fence()

    def _connect(self) -> None:
        super()._connect()
        writer = self._writer()
        if writer.client is None or writer.unusable is not None:
            writer.start_client(self.stopping)

    def _abandon(self) -> None:
        """Abandons the producer too, unclosed, with whatever transaction it had open."""
        writer = self._writer()
        client, writer.client = writer.client, None
        writer.pending.clear()
        del client
        super()._abandon()

    def _positions(self) -> tuple[list[TopicPartition], Any]:
        assert self.consumer is not None
        positions = self.consumer.position(self.consumer.assignment())
        return [tp for tp in positions if tp.offset >= 0], self.consumer.consumer_group_metadata()

    def _poll_once(self) -> None:
        assert self.consumer is not None
        writer = self._writer()
        if writer.client is None or writer.unusable is not None:
            writer.start_client(self.stopping)
            return
        try:
            messages = self.consumer.consume(num_messages=BATCH, timeout=0.5)
        except KafkaException as exc:
            if exc.args[0].fatal():
                self.fatal = exc.args[0]
                return
            raise
        inputs: list[tuple[int, str]] = []
        for message in messages:
            if record_message(self.history, self.process, self.topic, message) is not None:
                inputs.append((message.partition() or 0, (message.value() or b"").decode()))
        self.handed += len(inputs)
        if not inputs or self.orders.crash.is_set():
            return  # a process that dies right after it was handed a batch processes none of it
        txn = transaction_id(self.process, self.transactions)
        self.transactions += 1
        records = tuple((partition, output_value(value, txn)) for partition, value in inputs)
        writer.sent, writer.sent_ns, writer.offsets_error = {}, None, None
        try:
            fate = writer.run_one(PlannedTransaction(txn, records, commit=True))
        except CrashedMidTransaction:
            return
        except OffsetsHung as exc:
            log.warning("%s: %s; replacing its producer", self.process, exc)
            fate, writer.offsets_error, writer.client = FAIL, str(exc), None
            self.history.record(self.process, INFO, PRODUCER_RESTART, error=str(exc))
        self._record_offsets(txn, fate, writer)
        if fate != OK:
            self._rewind()

    def _record_offsets(self, txn: str, fate: EventType, writer: ProcessorWriter) -> None:
        """The group's offsets went with the transaction: committed with it, or not."""
        self.history.record(
            self.process, fate, COMMIT, topic=self.topic, key=txn, error=writer.offsets_error,
            detail={"offsets": writer.sent, "group": self.group, "mode": TRANSACTION_MODE,
                    **({ASKED_NS: writer.sent_ns} if writer.sent_ns is not None else {})},
        )  # fmt: skip

    def _rewind(self) -> None:
        """Seeks back to the group's committed offsets, so what the transaction did not commit is read and
        processed again; if the group cannot say, a new client rejoins and starts from them anyway."""
        assert self.consumer is not None
        try:
            assignment = self.consumer.assignment()
            committed = self.consumer.committed(assignment, timeout=self._writer().timeout)
            for tp in committed:
                start = tp.offset if tp.offset >= 0 else OFFSET_BEGINNING
                self.consumer.seek(TopicPartition(self.topic, tp.partition, start))
        except KafkaException as exc:
            log.warning("%s: cannot seek back to the committed offsets, rejoining: %s", self.process, exc)
            self.fatal = exc.args[0]
            return
        self.history.record(
            self.process, OK, ASSIGN, topic=self.topic,
            detail={"partitions": sorted(tp.partition for tp in committed), "group": self.group,
                    "from": {str(tp.partition): tp.offset if tp.offset >= 0 else None for tp in committed},
                    "member": self._member_id(self.consumer), "rewind": True,
                    ISOLATION: isolation_of(self.settings)},
        )  # fmt: skip


class EosWorkload(GroupThreads):
    """`consumers` processors (`--workload eos`) reading `topic` in one group and writing its output topic."""

    def __init__(self, config: RunConfig, bootstrap: str, history: HistoryWriter) -> None:
        self.bootstrap = bootstrap
        self.group = group_name(config.run_id)
        self.topic = config.topic
        self.partitions = config.partitions
        output = output_topic(config.topic)
        processors = []
        for i in range(config.consumers):
            process = processor_process(i)
            settings = transactional_settings(
                config, bootstrap, process, transactional_name(config.run_id, process)
            )
            writer = ProcessorWriter(
                process,
                settings,
                output,
                TransactionPlanner(process, config.partitions, 1, 0.0, config.seed),
                history,
            )
            writer.on_timeout = worker_policy(chosen_txn_on_timeout(config))
            writer.commit_attempts = commit_attempts(chosen_txn_on_timeout(config))
            processors.append(
                Processor(
                    process=process,
                    settings=group_settings(
                        bootstrap,
                        process,
                        self.group,
                        TRANSACTION_MODE,
                        READ_COMMITTED,
                        config.group_protocol,
                        config.consumer_config,
                    ),
                    group=self.group,
                    topic=config.topic,
                    commit=TRANSACTION_MODE,
                    history=history,
                    writer=writer,
                )
            )
        super().__init__(processors)

    def lag(self) -> dict[int, int]:
        """Per input partition, how many records lie between the group's committed offset and the end:
        what the processors have yet to commit."""
        return group_lag(self.bootstrap, self.group, self.topic, self.partitions)

    def wait_caught_up(self, timeout: float) -> dict[int, int]:
        """Waits until the group has committed every input record (the producers have stopped), for at
        most `timeout` seconds; returns what was still left (empty when caught up)."""
        return wait_caught_up(self.lag, timeout)


def group_lag(bootstrap: str, group: str, topic: str, partitions: int) -> dict[int, int]:
    """Per partition of `topic`, how many records lie between `group`'s committed offset and the end:
    what a group's processors (of either client) have yet to commit."""
    probe = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,  # never subscribes: asks for the group's offsets, joins nothing
            "enable.auto.commit": False,
            "isolation.level": READ_COMMITTED,
            "logger": logging.getLogger("kchaos.librdkafka.eos-lag"),
        }
    )
    try:
        places = [TopicPartition(topic, p) for p in range(partitions)]
        committed = {tp.partition: max(tp.offset, 0) for tp in probe.committed(places, timeout=10)}
        lag = {}
        for tp in places:
            _, high = probe.get_watermark_offsets(tp, timeout=10, cached=False)
            lag[tp.partition] = max(0, high - committed[tp.partition])
        return lag
    finally:
        probe.close()


def wait_caught_up(lag: Callable[[], dict[int, int]], timeout: float) -> dict[int, int]:
    """Waits until `lag` says the group has committed every input record (the producers have stopped), for
    at most `timeout` seconds; returns what was still left (empty when caught up)."""
    left: dict[int, int] = {-1: -1}  # unknown until the group first answers

    def caught_up() -> bool:
        behind = {p: n for p, n in lag().items() if n}
        left.clear()
        left.update(behind)
        return not behind

    try:
        wait_until(caught_up, timeout, "the processors to commit every input record", interval=1.0)
    except WaitTimeout as exc:
        log.warning("%s; left by partition: %s", exc, left)
    return dict(left)
