"""Transactional producers: each transaction writes 1..N records across partitions and then commits or
aborts as a seeded plan says; every record and every outcome is recorded. Like every workload, they never
judge.

The checkers' transaction anomalies (`kchaos.checkers.passes.transaction_passes`) rest on two facts this
module keeps true:

- Every row of a transaction carries its id (`key`, see `kchaos.model.events`), and so does every record it
  writes, as its Kafka key: a read row names its transaction too.
- A commit's outcome is `ok` only when the client said so, and never `fail`: librdkafka's errors do not say
  whether the coordinator took the request (a commit that timed out "may be called again" because it may
  have been done), and a checker takes `fail` for definitely not done. An abort that raises is `info` too.

A transaction planned to commit whose records were not all acknowledged is aborted without asking to
commit: its fate is then definite (no commit was ever requested), where asking would only have produced
an error whose effect nobody knows. A client that failed for good, or whose abort failed, is replaced; the
new instance's `init_transactions` fences the old one and aborts whatever it left open.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from confluent_kafka import KafkaError, KafkaException, Message, Producer

from kchaos.compose.rdkafka.transaction_calls import IN_DOUBT_AT_ABORT, RESTART, RETRY, restart_after
from kchaos.compose.rdkafka.transaction_plan import PlannedTransaction, TransactionPlanner
from kchaos.model.config import RunConfig
from kchaos.model.events import (
    FAIL,
    INFO,
    INVOKE,
    OK,
    PRODUCER_RESTART,
    TRANSACTIONAL_ID,
    TXN_ABORT,
    TXN_BEGIN,
    TXN_COMMIT,
    TXN_SEND,
    EventType,
    producer_process,
    transactional_name,
)
from kchaos.model.history import HistoryWriter
from kchaos.model.txn_on_timeout import RETRY_ATTEMPTS, commit_attempts, worker_policy
from kchaos.model.txn_protocol import LIBRDKAFKA_TRANSACTION_PROTOCOL, TRANSACTION_PROTOCOL_DERIVED
from kchaos.model.workload_rules import chosen_txn_on_timeout
from kchaos.model.written_topics import topics_by_process
from kchaos.workloads.in_harness.producer import WriterThreads, producer_settings
from kchaos.workloads.outcome import error_text, outcome_of

log = logging.getLogger(__name__)

#: Times a commit is asked for again after a retriable error (a timeout) before the transaction is aborted.
COMMIT_ATTEMPTS = RETRY_ATTEMPTS

#: Why a client that aborted a transaction with records in doubt is replaced. A CI run on 4.3.1 with
#: librdkafka 2.16 showed the need: a record in flight when its leader was killed was written by the new
#: leader, the transaction was aborted without its delivery report, and the next transaction's record to
#: that partition went out under the same producer epoch and sequence number. The broker answered it as a
#: duplicate of the aborted record, with that record's offset: a committed record acknowledged and never
#: written. A new instance's `init_transactions` bumps the epoch, so no later record can be taken for one.
#: (the words are kchaos/compose/rdkafka/transaction_calls.py's, shared with the librdkafka processes)
#: What each commit's and abort's invoke row says of the protocol: librdkafka's, from its source
#: (kchaos/model/txn_protocol.py), since the client reports no EndTxn version.
LIBRDKAFKA_PROTOCOL = {TRANSACTION_PROTOCOL_DERIVED: LIBRDKAFKA_TRANSACTION_PROTOCOL}
#: Kafka's default `transaction.timeout.ms`.
TRANSACTION_TIMEOUT_MS = 60_000


DeliveryCallback = Callable[[KafkaError | None, Message], None]


class TransactionalClient(Protocol):
    """The part of confluent-kafka's `Producer` a transactional producer uses (a test fakes it)."""

    def init_transactions(self, timeout: float = -1) -> None: ...
    def begin_transaction(self) -> None: ...
    def produce(
        self, topic: str, *, value: bytes, key: bytes, partition: int, on_delivery: DeliveryCallback
    ) -> None: ...
    def flush(self, timeout: float = -1) -> int: ...
    def commit_transaction(self, timeout: float = -1) -> None: ...
    def abort_transaction(self, timeout: float = -1) -> None: ...


def transactional_settings(
    config: RunConfig, bootstrap: str, client_id: str, transactional_id: str
) -> dict[str, object]:
    """The run's producer settings with a `transactional.id`.

    librdkafka refuses to create a transactional producer without idempotence, so it is set here whatever
    the run's `--idempotence`; it refuses acks=1 too, which is left as the run asked: a configuration asking
    for transactions with acks=1 must be refused before the run, not silently changed. Its transaction
    timeout must be at least the message timeout, so Kafka's default is raised to a longer one."""
    return {
        **producer_settings(config, bootstrap, client_id),
        "enable.idempotence": True,
        "transactional.id": transactional_id,
        "transaction.timeout.ms": max(TRANSACTION_TIMEOUT_MS, config.message_timeout_ms),
    }


def _kafka_error(exc: KafkaException) -> KafkaError:
    error: KafkaError = exc.args[0]
    return error


@dataclass
class TransactionalProducerProcess:
    """One transactional producer in its own thread: its transactions one after another, as planned."""

    process: str
    settings: dict[str, object]
    topic: str
    planner: TransactionPlanner
    history: HistoryWriter
    #: Longest each flush, commit, abort or init may block, seconds.
    timeout: float = 10.0
    make_client: Callable[[dict[str, Any]], TransactionalClient] = Producer
    client: TransactionalClient | None = None
    #: Why the client must be replaced before the next transaction, if it must.
    unusable: KafkaError | None = None
    #: Seconds from one transaction's start to the next's (0: no pause), which paces the run's rate.
    interval: float = 0.0
    #: Records produced in the current transaction and not yet given an outcome: value -> partition.
    pending: dict[str, int] = field(default_factory=dict)
    #: The outcome recorded for each record of the current transaction.
    outcomes: dict[str, EventType] = field(default_factory=dict)
    #: What it does when a commit times out (`--txn-on-timeout`): `retry`, or `restart` at once.
    on_timeout: str = RETRY
    #: How many times it asks to commit (`kchaos.model.txn_on_timeout.commit_attempts`).
    commit_attempts: int = COMMIT_ATTEMPTS

    def run(self, stop: threading.Event) -> None:
        """Transactions one after another until `stop`; each begun is ended before this returns, so none
        is left open to hold read_committed readers below it."""
        due = time.monotonic()
        try:
            while not stop.is_set():
                if self.client is None or self.unusable is not None:
                    self.start_client(stop)
                    continue
                if stop.wait(max(0.0, due - time.monotonic())):
                    break
                due = max(due + self.interval, time.monotonic() - self.interval)
                self.run_one(self.planner.next())
            self.fence()
        except Exception:
            log.exception("%s stopped writing", self.process)
            raise

    def fence(self) -> None:
        """A client that failed mid-transaction may have left it open, holding every read_committed reader
        below it until the transaction timeout aborts it; a new instance's `init_transactions` aborts it
        now. One attempt: if the cluster does not answer, the timeout still will."""
        if self.client is None or self.unusable is None:
            return
        error, self.unusable = self.unusable, None
        self.history.record(self.process, INFO, PRODUCER_RESTART, error=error_text(error))
        self.fence_with_new_instance()

    def fence_with_new_instance(self) -> None:
        """A new instance of the client, whose `init_transactions` aborts whatever an earlier instance
        left open. One attempt: if the cluster does not answer, the transaction timeout still will."""
        self.client = self.make_client(dict(self.settings))
        try:
            self.client.init_transactions(self.timeout)
        except KafkaException as exc:
            log.warning("%s: could not fence its last transaction: %s", self.process, _kafka_error(exc))

    def start_client(self, stop: threading.Event) -> None:
        """A new client, its transactions initialised (fencing any earlier instance with the same
        `transactional.id`); a replacement is recorded with the reason."""
        if self.client is not None:
            error, self.unusable = self.unusable, None
            log.warning("%s: replacing the transactional client: %s", self.process, error)
            self.history.record(
                self.process, INFO, PRODUCER_RESTART, error=error_text(error) if error else None
            )
        self.client = self.make_client(dict(self.settings))
        while not stop.is_set():
            try:
                self.client.init_transactions(self.timeout)
                return
            except KafkaException as exc:
                log.warning("%s: init_transactions: %s", self.process, _kafka_error(exc))
                if _kafka_error(exc).fatal():
                    self.client = self.make_client(dict(self.settings))

    def run_one(self, planned: PlannedTransaction) -> EventType:
        """Begins, writes and ends one transaction, recording each step. Returns its fate: `ok` committed,
        `fail` definitely not (aborted, or never begun, before any commit was asked for), `info` unknown
        (a commit was asked for and not confirmed)."""
        client = self.client
        assert client is not None, "start_client first"
        txn = planned.txn
        try:
            client.begin_transaction()
        except KafkaException as exc:
            self.unusable = _kafka_error(exc)
            self.history.record(self.process, FAIL, TXN_BEGIN, key=txn, error=error_text(self.unusable))
            return FAIL
        transactional_id = str(self.settings.get("transactional.id"))
        self.history.record(self.process, OK, TXN_BEGIN, key=txn, detail={TRANSACTIONAL_ID: transactional_id})
        self.outcomes = {}
        for slot, (partition, value) in enumerate(planned.records):
            self._between(txn, slot)
            self._produce(client, txn, partition, value)
        self._between(txn, len(planned.records))
        client.flush(self.timeout)
        for value, partition in list(self.pending.items()):
            self._record_send(
                txn, INFO, partition, value, error="no delivery report before the transaction ended"
            )
        acknowledged = all(self.outcomes.get(value) == OK for _, value in planned.records)
        if planned.commit and acknowledged and self._before_commit(client, txn):
            return self._commit(client, txn)
        outcome = self._abort(client, txn)
        in_doubt = any(self.outcomes.get(value) == INFO for _, value in planned.records)
        if in_doubt and self.unusable is None:
            self.unusable = KafkaError(KafkaError._PURGE_INFLIGHT, IN_DOUBT_AT_ABORT)
        return outcome

    def _between(self, txn: str, slot: int) -> None:
        """What the transaction does before its `slot`th record (after its last one at `slot` equal to
        the record count): nothing here; a read-write transaction polls
        (`kchaos.workloads.in_harness.read_write`)."""

    def _before_commit(self, client: TransactionalClient, txn: str) -> bool:
        """What must join the transaction after its records and before its commit; False to abort it
        instead. Nothing here; a processor sends its consumer's offsets
        (`kchaos.workloads.in_harness.eos`)."""
        return True

    def _produce(self, client: TransactionalClient, txn: str, partition: int, value: str) -> None:
        """Hands one record to the client; one it refuses was never sent (`fail`)."""
        self.history.record(self.process, INVOKE, TXN_SEND, topic=self.topic, partition=partition, key=txn,
                            value=value)  # fmt: skip
        self.pending[value] = partition
        try:
            client.produce(
                self.topic, value=value.encode(), key=txn.encode(), partition=partition,
                on_delivery=lambda error, message: self._delivered(txn, value, error, message),
            )  # fmt: skip
        except BufferError as exc:
            self._record_send(txn, FAIL, partition, value, error=f"_QUEUE_FULL: {exc}")
        except KafkaException as exc:
            self._record_send(txn, FAIL, partition, value, error=error_text(_kafka_error(exc)))

    def _delivered(self, txn: str, value: str, error: KafkaError | None, message: Message) -> None:
        """A delivery report; one for a record already given its outcome (after a flush that timed out) is
        not recorded again: each record has exactly one."""
        partition = self.pending.get(value)
        if partition is None:
            return
        outcome = outcome_of(error)
        offset = message.offset() if outcome == OK else None
        self._record_send(txn, outcome, partition, value, offset, error_text(error) if error else None)

    def _record_send(
        self,
        txn: str,
        outcome: EventType,
        partition: int,
        value: str,
        offset: int | None = None,
        error: str | None = None,
    ) -> None:
        self.pending.pop(value, None)
        self.outcomes[value] = outcome
        self.history.record(
            self.process, outcome, TXN_SEND, topic=self.topic, partition=partition, offset=offset, key=txn,
            value=value, error=error,
        )  # fmt: skip

    def _commit(self, client: TransactionalClient, txn: str) -> EventType:
        """Asks to commit, again after a retriable error (the request may or may not have been taken, and
        asking again is how librdkafka finds out), and aborts when the client says the transaction must be
        or the attempts run out; under `--txn-on-timeout restart` a retriable error replaces the client at
        once instead (kchaos/compose/rdkafka/transaction_calls.py `commit_or_abort`, whose lines the
        librdkafka processes print). Every error is `info`: the commit may have happened."""
        for _ in range(self.commit_attempts):
            self.history.record(self.process, INVOKE, TXN_COMMIT, key=txn, detail=LIBRDKAFKA_PROTOCOL)
            try:
                client.commit_transaction(self.timeout)
            except KafkaException as exc:
                error = _kafka_error(exc)
                self.history.record(self.process, INFO, TXN_COMMIT, key=txn, error=error_text(error))
                if error.txn_requires_abort():
                    break
                if not error.retriable():
                    self.unusable = error  # fatal, or what librdkafka says to treat as fatal
                    return INFO
                if self.on_timeout == RESTART:
                    self.unusable = restart_after(error, "commit", txn)
                    return INFO
            else:
                self.history.record(self.process, OK, TXN_COMMIT, key=txn)
                return OK
        self._abort(client, txn)
        return INFO  # asked to commit: whether it did, the abort does not say

    def _abort(self, client: TransactionalClient, txn: str) -> EventType:
        """Asks to abort; if that fails the client is replaced, and the new instance's
        `init_transactions` aborts what this one left open. Either way `fail` (not committed), as far as
        this call goes: after a commit was asked for, `_commit` says `info` instead."""
        self.history.record(self.process, INVOKE, TXN_ABORT, key=txn, detail=LIBRDKAFKA_PROTOCOL)
        try:
            client.abort_transaction(self.timeout)
        except KafkaException as exc:
            error = _kafka_error(exc)
            self.history.record(self.process, INFO, TXN_ABORT, key=txn, error=error_text(error))
            restart = self.on_timeout == RESTART and error.retriable()
            self.unusable = restart_after(error, "abort", txn) if restart else error
        else:
            self.history.record(self.process, OK, TXN_ABORT, key=txn)
        return FAIL


class TransactionalWorkload(WriterThreads):
    """`producers` transactional producers (`--workload txn`), each running its own seeded plan, together
    writing about `rate` records a second."""

    def __init__(self, config: RunConfig, bootstrap: str, history: HistoryWriter) -> None:
        self.config = config
        mean_records = (1 + config.transaction_records) / 2
        interval = config.producers * mean_records / config.rate if config.rate > 0 else 0.0
        self.processes: list[TransactionalProducerProcess] = []
        names = [producer_process(i) for i in range(config.producers)]
        topics = topics_by_process(names, config.topic, config.topics)
        for i in range(config.producers):
            process = producer_process(i)
            planner = TransactionPlanner(
                process, config.partitions, config.transaction_records, config.transaction_abort_ratio,
                config.seed,
            )  # fmt: skip
            settings = transactional_settings(
                config, bootstrap, process, transactional_name(config.run_id, process)
            )
            writer = self._writer(process, settings, topics[process], planner, history)
            writer.interval = interval
            writer.on_timeout = worker_policy(chosen_txn_on_timeout(config))
            writer.commit_attempts = commit_attempts(chosen_txn_on_timeout(config))
            self.processes.append(writer)
        super().__init__(self.processes)

    def _writer(
        self,
        process: str,
        settings: dict[str, object],
        topic: str,
        planner: TransactionPlanner,
        history: HistoryWriter,
    ) -> TransactionalProducerProcess:
        """The `process`'s transactional producer; a read-write workload's polls too
        (`kchaos.workloads.in_harness.read_write`)."""
        return TransactionalProducerProcess(process, settings, topic, planner, history)

    def stop(self) -> None:
        """Stops after each producer's current transaction has ended: a flush, up to its commit attempts
        and an abort, each bounded by the process's timeout, and a fence of a failed client."""
        self._join(max((p.timeout * (p.commit_attempts + 3) for p in self.processes), default=0.0))
