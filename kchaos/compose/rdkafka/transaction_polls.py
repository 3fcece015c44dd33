"""The polls of a read-write transaction (`--txn-polls N`, issue 49), for the in-process producers
(kchaos/workloads/in_harness/read_write.py) and the librdkafka transactional processes (txn_worker.py)
alike: one plan of where a transaction polls, drawn from the seed, so both clients' transactions read at the
same steps, and the worker's consumer, which prints what each poll returned.

A transaction of a producer polls its topic 0 to N times, each poll at a seeded slot: before its first
record, between two, or after its last. Its consumer reads at read_committed, assigned every partition of
the topic from where the process got to (from the beginning at first); its positions are the process's
own, not committed with the transaction, so a transaction that aborts does not rewind them. With
`--txn-polls-via subscribe` (`VIA_ARGUMENT`) the consumer subscribes instead, in a group of its own, and
the group coordinator hands it the partitions (all of them, as its only member), again after each
rebalance; each time, it reads on from the process's positions (`assign_from`), as with assign.

Lines (kchaos/compose/rdkafka/line_formats.py `TXN_FIELDS`): `assign PARTITIONS FROM` at each new consumer,
or each assignment the group hands it, as the assigned reader's (FROM: `partition=offset` where it
resumed), and `poll TXN PARTITION OFFSET VALUE`
for each record a poll of transaction TXN returned.

Standard library and confluent-kafka only: the module runs in the client container too.
"""

from __future__ import annotations

import random
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, TopicPartition

from kchaos.compose.rdkafka.line_formats import ASSIGNED, POLLED
from kchaos.compose.rdkafka.worker import Lines

#: The most records one poll hands over, and how long it waits for them: a poll is one micro-step of a
#: transaction, not a drain, so it takes what the consumer has fetched. Waiting 50 ms a poll held a run
#: of two producers, three polls a transaction at most, to 32 of its 200 records a second.
POLL_RECORDS = 100
POLL_WAIT_S = 0.01
#: The worker's argument that gives the most polls a transaction makes (0 or absent: none), and the prefix
#: of its consumer's librdkafka settings among the worker's own arguments.
POLLS_ARGUMENT = "kchaos.txn.polls"
READ_SETTING_PREFIX = "kchaos.read."
#: The worker's argument that says how its consumer gets its partitions: `assign` (absent: so) or
#: `subscribe`.
VIA_ARGUMENT = "kchaos.txn.polls.via"
SUBSCRIBE = "subscribe"


def assign_from(consumer: Any, partitions: list[TopicPartition], positions: Mapping[int, int]) -> None:
    """In a subscribed consumer's assignment callback: takes the `partitions` the group hands over, each
    from where the process got to (from the beginning where it got nowhere). An eager rebalance hands over
    the whole assignment, which `assign` takes; a cooperative one (the consumer protocol, KIP-848, or the
    cooperative-sticky assignor) only what it adds, which librdkafka takes by `incremental_assign` alone
    and refuses by `assign`."""
    for tp in partitions:
        tp.offset = positions.get(tp.partition, OFFSET_BEGINNING)
    try:
        consumer.assign(partitions)
    except KafkaException:
        consumer.incremental_assign(partitions)


def poll_generator(seed: object, process: str) -> random.Random:
    """The seeded generator of a process's poll slots, apart from its transaction plan's."""
    return random.Random(f"{seed}:{process}:polls")


def plan_polls(rng: random.Random, polls: int, slots: int) -> dict[int, int]:
    """0 to `polls` polls, each at one of `slots` (a transaction's record count plus one): how many polls
    are due at each slot."""
    due: dict[int, int] = {}
    for _ in range(rng.randint(0, polls)):
        slot = rng.randrange(slots)
        due[slot] = due.get(slot, 0) + 1
    return due


def read_settings(worker: Mapping[str, str]) -> dict[str, str]:
    """The consumer's settings among the worker's arguments (`kchaos.read.NAME=VALUE`)."""
    return {
        name.removeprefix(READ_SETTING_PREFIX): value
        for name, value in worker.items()
        if name.startswith(READ_SETTING_PREFIX)
    }


@dataclass
class TransactionPolls:
    """A worker's read-write transactions' polls: what is due at each slot of the current transaction, the
    consumer that serves them, and where the process got to in each partition."""

    polls: int
    settings: dict[str, str]
    topic: str
    partitions: int
    lines: Lines
    rng: random.Random
    make_consumer: Callable[[dict[str, Any]], Any] = Consumer
    #: Whether its consumer subscribes (`SUBSCRIBE`) rather than assigns every partition itself.
    subscribe: bool = False
    consumer: Any = None
    #: Its consumer failed for good: a new one reads on from the positions at the next poll.
    failed: bool = False
    positions: dict[int, int] = field(default_factory=dict)
    due: dict[int, int] = field(default_factory=dict)

    def plan(self, records: int) -> None:
        """Draws where the next transaction, of `records` records, polls."""
        self.due = plan_polls(self.rng, self.polls, records + 1)

    def between(self, txn: str, slot: int) -> None:
        """The polls due before record `slot` of `txn` (after its last at the record count)."""
        for _ in range(self.due.get(slot, 0)):
            self.poll(txn)

    def poll(self, txn: str) -> None:
        """One poll micro-step: whatever records have arrived, each a `poll` line of `txn`."""
        if self.consumer is None or self.failed:
            self._connect()
        for message in self.consumer.consume(num_messages=POLL_RECORDS, timeout=POLL_WAIT_S):
            partition, offset, value = message.partition(), message.offset(), message.value()
            if message.error() is not None or partition is None or offset is None or value is None:
                continue
            self.lines.add(POLLED, txn, str(partition), str(offset), value.decode(errors="replace"))
            self.positions[partition] = offset + 1
        self.lines.flush()

    def close(self) -> None:
        if self.consumer is not None:
            self.consumer.close()
            self.consumer = None

    def _connect(self) -> None:
        self.close()
        self.failed = False
        self.consumer = self.make_consumer({**self.settings, "error_cb": self._on_error})
        if self.subscribe:
            self.consumer.subscribe([self.topic], on_assign=self._on_assign)
            return
        partitions = [TopicPartition(self.topic, p) for p in range(self.partitions)]
        assign_from(self.consumer, partitions, self.positions)
        self._said_assigned(partitions)

    def _on_assign(self, consumer: Any, partitions: list[TopicPartition]) -> None:
        assign_from(consumer, partitions, self.positions)
        self._said_assigned(partitions)

    def _said_assigned(self, partitions: list[TopicPartition]) -> None:
        resumed = ",".join(f"{p}={o}" for p, o in sorted(self.positions.items()))
        self.lines.add(ASSIGNED, ",".join(str(p) for p in sorted(tp.partition for tp in partitions)), resumed)

    def _on_error(self, error: KafkaError) -> None:
        if error.fatal():
            print(f"its consumer failed, a new one reads on: {error}", file=sys.stderr, flush=True)
            self.failed = True
