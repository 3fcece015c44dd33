"""How a librdkafka transactional client's calls and delivery reports become the transactional worker's
lines (kchaos/compose/rdkafka/line_formats.py `TXN_FIELDS`), for the transactional worker (txn_worker.py) and
the eos processor (eos_worker.py) alike: a record's produce and its delivery report (`TransactionRecords`),
commit with its attempts, abort, and the errors that make a client unusable.

Python's standard library and confluent-kafka only: the module runs in the client container
(kchaos/harness/rdkafka_image.py); the harness judges its in-process sends by the same `NEVER_SENT`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from confluent_kafka import KafkaError, KafkaException

from kchaos.compose.rdkafka.line_formats import (
    ABORT,
    ABORT_ERROR,
    ABORTED,
    ACKED,
    COMMIT,
    COMMIT_ERROR,
    COMMITTED,
    ERRORED,
    REFUSED,
)
from kchaos.compose.rdkafka.worker import Lines, offset_field

#: Longest each flush, commit, abort or init_transactions may block, seconds: the in-process workload's
#: (`TransactionalProducerProcess.timeout`) and the Java worker's `max.block.ms`.
CALL_TIMEOUT_S = 10.0
#: The transaction protocol word of every commit and abort line: librdkafka has only protocol 1.
PROTOCOL = "none"
#: The errors librdkafka reports for a record it never put on the wire: such a record is not in doubt
#: (kchaos/workloads/outcome.py judges the in-process producers' sends by it too).
NEVER_SENT = frozenset(
    {
        KafkaError._UNKNOWN_PARTITION,
        KafkaError._UNKNOWN_TOPIC,
        KafkaError._INVALID_ARG,
        KafkaError._QUEUE_FULL,
        KafkaError.MSG_SIZE_TOO_LARGE,
        KafkaError.INVALID_RECORD,
        KafkaError.TOPIC_AUTHORIZATION_FAILED,
    }
)
#: Why a client that aborted a transaction with records in doubt is replaced: the in-process workload's
#: words and reason (kchaos/workloads/in_harness/transactions.py `IN_DOUBT_AT_ABORT`).
IN_DOUBT_AT_ABORT = (
    "aborted with records in doubt, whose sequence numbers the client may reuse; a new instance starts a "
    "new producer epoch"
)
#: A record's or transaction's outcome, as the lines and the recorder spell it.
OK, FAIL, INFO = "ok", "fail", "info"
#: The worker argument saying what the application does when its commit times out (`--txn-on-timeout`,
#: kchaos/model/txn_on_timeout.py, which says why `abort` is refused before a worker starts): `retry` asks
#: again up to the attempts, `restart` replaces the client at once.
ON_TIMEOUT_ARGUMENT = "kchaos.txn.on.timeout"
RETRY, RESTART = "retry", "restart"
ON_TIMEOUT_POLICIES = (RETRY, RESTART)


def on_timeout_policy(worker: dict[str, str]) -> str:
    """The worker's `kchaos.txn.on.timeout`; ValueError naming it when missing or not a policy it runs."""
    policy = worker.get(ON_TIMEOUT_ARGUMENT)
    if policy not in ON_TIMEOUT_POLICIES:
        raise ValueError(f"{ON_TIMEOUT_ARGUMENT} must be {' or '.join(ON_TIMEOUT_POLICIES)}, not {policy!r}")
    return policy


def restart_after(error: KafkaError, call: str, txn: str) -> KafkaError:
    """Why a client whose `call` (commit or abort) of `txn` timed out is replaced under `restart`: the
    client's own error, its reason naming the policy, so the `restart` line (and the in-process workload's
    `producer-restart` row) says the application chose it."""
    return KafkaError(
        error.code(), f"txn-on-timeout=restart after the {call} of {txn} timed out: {error.str()}"
    )


class TransactionalClient(Protocol):
    """The part of confluent-kafka's `Producer` the worker uses (a test scripts it)."""

    def init_transactions(self, timeout: float = -1) -> None: ...
    def begin_transaction(self) -> None: ...
    def produce(
        self,
        topic: str,
        *,
        value: bytes,
        key: bytes,
        partition: int,
        on_delivery: Callable[[Any, Any], None],
    ) -> None: ...
    def flush(self, timeout: float = -1) -> int: ...
    def commit_transaction(self, timeout: float = -1) -> None: ...
    def abort_transaction(self, timeout: float = -1) -> None: ...


def must_exit(error: KafkaError) -> bool:
    """A fatal error (fenced, or librdkafka's fatal state): the process ends and the supervisor starts a
    new one, whose `init_transactions` fences this one's transactional id and aborts what it left open."""
    return bool(error.fatal()) or error.code() in (KafkaError._FENCED, KafkaError.PRODUCER_FENCED)


def kafka_error(exc: KafkaException) -> KafkaError:
    error: KafkaError = exc.args[0]
    return error


def retire(held: list[object], timeout: float) -> None:
    """Lets go of a replaced client (`held`'s only item, and its last reference) in a thread of its own,
    waiting at most `timeout`: destroying it waits for its brokers' threads, which a coordinator that is
    gone could hold (the Java worker's bounded close)."""
    ending = threading.Thread(target=held.clear, name="retire", daemon=True)
    ending.start()
    ending.join(timeout)


@dataclass
class TransactionRecords:
    """The records of the transaction under way: each one's produce and delivery report as a line, and its
    outcome, which decides whether the transaction may commit and whether it ended with records in doubt."""

    lines: Lines
    #: Records not yet answered: value -> partition.
    pending: dict[str, int] = field(default_factory=dict)
    #: Each record's outcome: ok, fail (never sent) or info (in doubt).
    outcomes: dict[str, str] = field(default_factory=dict)

    def begin(self) -> None:
        self.pending, self.outcomes = {}, {}

    def produce(self, client: Any, topic: str, txn: str, partition: int, value: str) -> None:
        """Produces one record, its transaction as its key; a record the client refused is `refused`."""
        self.pending[value] = partition

        def delivered(error: Any, message: Any) -> None:
            self._delivered(txn, value, error, message)

        try:
            client.produce(topic, value=value.encode(), key=txn.encode(), partition=partition,
                           on_delivery=delivered)  # fmt: skip
        except BufferError as exc:
            self._refused(txn, value, partition, "_QUEUE_FULL", str(exc))
        except KafkaException as exc:
            self._refused(txn, value, partition, *named(kafka_error(exc)))

    def unanswered(self) -> None:
        """After the flush: a record without a report is in doubt (the recorder says so when the commit or
        abort line comes)."""
        for value in self.pending:
            self.outcomes[value] = INFO
        self.pending = {}

    def _refused(self, txn: str, value: str, partition: int, name: str, message: str) -> None:
        self.pending.pop(value, None)
        self.outcomes[value] = FAIL
        self.lines.add(REFUSED, txn, value, str(partition), name, message)

    def _delivered(self, txn: str, value: str, error: Any, message: Any) -> None:
        """A delivery report; one after its transaction was decided (a flush that timed out) is left out,
        as the recorder has given that record its outcome already."""
        partition = self.pending.pop(value, None)
        if partition is None:
            return
        if error is None:
            self.outcomes[value] = OK
            self.lines.add(ACKED, txn, value, str(partition), offset_field(message.offset()))
        else:
            self.outcomes[value] = FAIL if error.code() in NEVER_SENT else INFO
            self.lines.add(ERRORED, txn, value, str(partition), *named(error))


def commit_or_abort(
    lines: Lines, client: Any, txn: str, attempts: int, timeout: float, on_timeout: str
) -> tuple[bool, KafkaError | None]:
    """Asks to commit `txn`, as the in-process workload does, each ask and answer a line. A retriable
    error (a timeout) is, as rdkafka.h's rd_kafka_commit_transaction allows, asked again up to `attempts`
    times under `retry`, the transaction aborted when they run out; under `restart` the client is given up
    at once (librdkafka refuses any other call while the commit is resumable: the supervisor's new instance
    fences it). An error that requires an abort is aborted. Returns whether it committed, and the error
    that leaves the client unusable (fatal, or what librdkafka says to treat as fatal; a failed abort; the
    restart chosen), if any. Shared by the transactional worker and the eos processor."""
    for _ in range(attempts):
        lines.add(COMMIT, txn, PROTOCOL)
        lines.flush()
        try:
            client.commit_transaction(timeout)
        except KafkaException as exc:
            error = kafka_error(exc)
            lines.add(COMMIT_ERROR, txn, *named(error))
            lines.flush()
            if error.txn_requires_abort():
                break
            if not error.retriable():
                return False, error
            if on_timeout == RESTART:
                return False, restart_after(error, "commit", txn)
        else:
            lines.add(COMMITTED, txn)
            lines.flush()
            return True, None
    return False, abort(lines, client, txn, timeout, on_timeout)


def abort(lines: Lines, client: Any, txn: str, timeout: float, on_timeout: str) -> KafkaError | None:
    """Asks to abort `txn`, the ask and the answer each a line; the error if that failed (the client must
    then be replaced: a new instance's `init_transactions` aborts what it left open), a timeout's reason
    naming the policy under `restart`."""
    lines.add(ABORT, txn, PROTOCOL)
    lines.flush()
    try:
        client.abort_transaction(timeout)
    except KafkaException as exc:
        error = kafka_error(exc)
        lines.add(ABORT_ERROR, txn, *named(error))
        lines.flush()
        return restart_after(error, "abort", txn) if on_timeout == RESTART and error.retriable() else error
    lines.add(ABORTED, txn)
    lines.flush()
    return None


def named(error: KafkaError) -> tuple[str, str]:
    """An error as the protocol's ERROR and MESSAGE fields: librdkafka's name and text."""
    return str(error.name()), str(error.str())
