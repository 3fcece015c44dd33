"""Read-write transactions (`--txn-polls N`, issue 49): transactional producers that also poll inside each
transaction, as Jepsen's Kafka workload's transactions and a consume-transform-produce loop do.

Each transaction of a producer polls its topic up to N times, at seeded slots among its sends (before any of
them, between, after the last: kchaos/compose/rdkafka/transaction_polls.py, the librdkafka processes' plan
too), with a consumer of its own at read_committed assigned every partition of the topic (or, with
`--txn-polls-via subscribe`, handed them by the group coordinator as the only member of a group of its own,
reading on from the process's positions at each assignment). Every record a poll returns is a `txn-poll` row
keyed by the transaction, so the checks can tell what each transaction read of others' records and of its own,
and in which order (`kchaos.checkers.passes.read_write.internal_passes`). The consumer's positions are the
process's own: they are not committed with the transaction (the eos workload's processors do that), so a
transaction that aborts does not rewind them, and the next one reads on.
"""

from __future__ import annotations

import logging
import random
import threading
from dataclasses import dataclass, field

from confluent_kafka import Consumer, KafkaError, TopicPartition

from kchaos.compose.rdkafka.transaction_plan import PlannedTransaction, TransactionPlanner
from kchaos.compose.rdkafka.transaction_polls import (
    POLL_RECORDS,
    POLL_WAIT_S,
    SUBSCRIBE,
    assign_from,
    plan_polls,
    poll_generator,
)
from kchaos.model.config import RunConfig
from kchaos.model.events import ASSIGN, ISOLATION, OK, READ_COMMITTED, SUBSCRIBED, TXN_POLL, EventType
from kchaos.model.history import HistoryWriter
from kchaos.workloads.in_harness.consumer import (
    assign_every_partition,
    consumer_settings,
    isolation_of,
    reader_group,
)
from kchaos.workloads.in_harness.transactions import TransactionalProducerProcess, TransactionalWorkload

log = logging.getLogger(__name__)


def read_write_settings(config: RunConfig, bootstrap: str, process: str) -> dict[str, object]:
    """The consumer settings of a read-write transaction's polls: read_committed always (a transaction
    must not read uncommitted records, its own included), the run's `--consumer-config` last."""
    return consumer_settings(
        bootstrap, f"{process}-reads", reader_group(config.run_id, f"{process}-reads"), READ_COMMITTED,
        config.consumer_config,
    )  # fmt: skip


@dataclass
class ReadWriteProcess(TransactionalProducerProcess):
    """A transactional producer whose transactions poll too. `polls`: the most polls a transaction makes;
    `reads`: its consumer's settings; `partitions`: its topic's."""

    polls: int = 1
    reads: dict[str, object] = field(default_factory=dict)
    partitions: int = 1
    #: Whether its consumer subscribes (`--txn-polls-via subscribe`) rather than assigns.
    subscribe: bool = False
    consumer: Consumer | None = None
    #: Its consumer failed for good: a new one reads on from the recorded positions at the next poll.
    consumer_failed: bool = False
    #: The next offset this process reads of each partition, kept across consumer instances.
    positions: dict[int, int] = field(default_factory=dict)
    #: The slots (`_between`) of the current transaction at which it polls, and how often at each.
    due: dict[int, int] = field(default_factory=dict)
    rng: random.Random = field(default_factory=random.Random)

    def run(self, stop: threading.Event) -> None:
        try:
            super().run(stop)
        finally:
            if self.consumer is not None:
                self.consumer.close()
                self.consumer = None

    def run_one(self, planned: PlannedTransaction) -> EventType:
        self.due = self._plan_polls(len(planned.records) + 1)
        return super().run_one(planned)

    def _plan_polls(self, slots: int) -> dict[int, int]:
        return plan_polls(self.rng, self.polls, slots)

    def _between(self, txn: str, slot: int) -> None:
        for _ in range(self.due.get(slot, 0)):
            self._poll(txn)

    def _connect(self) -> None:
        """A consumer assigned every partition from where this process got to (from the beginning at
        first), recorded as an `assign` row naming its isolation level, as a reader's is."""
        if self.consumer is not None:
            self.consumer.close()
        self.consumer_failed = False
        self.consumer = Consumer({**self.reads, "error_cb": self._on_consumer_error})
        if self.subscribe:
            self.consumer.subscribe([self.topic], on_assign=self._on_assign)
            return
        assign_every_partition(
            self.consumer, self.topic, self.partitions, self.positions, self.history, self.process,
            isolation_of(self.reads),
        )  # fmt: skip

    def _on_assign(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        """The group handed `partitions` over: read on from this process's positions, and say so in an
        `assign` row, as an assigned consumer's."""
        assign_from(consumer, partitions, self.positions)
        self.history.record(
            self.process, OK, ASSIGN, topic=self.topic,
            detail={"partitions": sorted(tp.partition for tp in partitions),
                    "from": {str(tp.partition): self.positions.get(tp.partition) for tp in partitions},
                    SUBSCRIBED: self.reads.get("group.id"), ISOLATION: isolation_of(self.reads)},
        )  # fmt: skip

    def _on_consumer_error(self, error: KafkaError) -> None:
        if error.fatal():
            log.warning("%s: its consumer failed, a new one reads on: %s", self.process, error)
            self.consumer_failed = True

    def _poll(self, txn: str) -> None:
        """One poll micro-step: whatever records have arrived, each a `txn-poll` row of `txn`."""
        if self.consumer is None or self.consumer_failed:
            self._connect()
        assert self.consumer is not None
        for message in self.consumer.consume(num_messages=POLL_RECORDS, timeout=POLL_WAIT_S):
            partition, offset = message.partition(), message.offset()
            if message.error() is not None or partition is None or offset is None:
                continue
            value = message.value()
            self.history.record(
                self.process, OK, TXN_POLL, topic=message.topic() or self.topic, partition=partition,
                offset=offset, key=txn, value=value.decode() if value is not None else None,
            )  # fmt: skip
            self.positions[partition] = offset + 1


class ReadWriteWorkload(TransactionalWorkload):
    """`--workload txn` with `--txn-polls N`: the transactional producers' transactions poll too."""

    def __init__(self, config: RunConfig, bootstrap: str, history: HistoryWriter) -> None:
        self.bootstrap = bootstrap
        super().__init__(config, bootstrap, history)

    def _writer(
        self,
        process: str,
        settings: dict[str, object],
        topic: str,
        planner: TransactionPlanner,
        history: HistoryWriter,
    ) -> TransactionalProducerProcess:
        config = self.config
        return ReadWriteProcess(
            process, settings, topic, planner, history, polls=config.txn_polls,
            reads=read_write_settings(config, self.bootstrap, process), partitions=config.partitions,
            rng=poll_generator(config.seed, process), subscribe=config.txn_polls_via == SUBSCRIBE,
        )  # fmt: skip
