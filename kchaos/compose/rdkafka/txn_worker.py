"""kchaos's librdkafka transactional producer as a process of its own (`kchaos.mode=txn` of the worker image,
kchaos/compose/rdkafka/worker.py): what `--client librdkafka-process --workload txn` writes with.

Why a process: the in-process transactional producers (kchaos/workloads/in_harness/transactions.py) are
threads of the harness, which no fault can freeze or kill alone; a process can be paused with its EndTxn
outstanding (`txn-client-pause`), as an application's client can.

It writes what the in-process workload writes, so the same checks judge it: the same seeded plan
(`Planner`, drawn exactly as `TransactionPlanner` draws it from `kchaos.seed` and the process name: the same
transaction ids, record values, sizes, partitions and abort choices), the transaction id as every record's
key, the same pacing, timeouts and librdkafka error handling: a record not acknowledged aborts a transaction
planned to commit without asking to commit; a commit that raises a retriable error (a timeout) is asked
again up to `kchaos.commit.attempts` times, one that requires an abort is aborted, and the attempts spent
abort it too; an abort with records in doubt, a failed abort or a failed begin replaces the client in the
process (a `restart` line; the new instance's `init_transactions` fences the old one and aborts what it left
open). A fatal error (librdkafka's `fatal()`, fenced among them) ends the process after a `restart` line
with FATAL_EXIT, so the harness's supervisor starts a new process, as it would restart a crashed
application.

It speaks the Java transactional worker's line protocol (kchaos/compose/client/KchaosTransactions.java's
javadoc), read by the same recorder (kchaos/workloads/processes/java/transactions.py): `started VERSION`,
`begun TXN TRANSACTIONAL_ID`, `begin-failed TXN ERROR MESSAGE`, `invoke TXN VALUE PARTITION`, `ok TXN VALUE
PARTITION OFFSET`, `error TXN VALUE PARTITION ERROR MESSAGE`, `refused TXN VALUE PARTITION ERROR MESSAGE`,
`commit TXN PROTOCOL`, `abort TXN PROTOCOL`, `committed TXN`, `aborted TXN`, `commit-error TXN ERROR MESSAGE`,
`abort-error TXN ERROR MESSAGE`, `restart ERROR MESSAGE`, `stopped BEGUN COMMITTED`; ERROR is librdkafka's
error name (`_TIMED_OUT`, `INVALID_PRODUCER_EPOCH`). PROTOCOL is `none`: librdkafka 2.16 has no transaction
protocol 2 and sends EndTxn v1 (kchaos/model/txn_protocol.py), which the recorder takes as protocol 1
derived, as for a Java client before 4.0. Every `invoke`, `commit` and `abort` line reaches stdout before
its call (the attacks key on the commit and abort lines), every outcome as soon as the call that served it
returns.

Import-light, as every worker module: Python's standard library, confluent-kafka and the worker's own
modules only.
"""

from __future__ import annotations

import io
import os
import random
import signal
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from confluent_kafka import KafkaError, KafkaException, Producer, libversion

from kchaos.compose.rdkafka.worker import BAD_ARGUMENTS_EXIT, FATAL_EXIT, Lines, offset_field

#: Longest each flush, commit, abort or init_transactions may block, seconds: the in-process workload's
#: (`TransactionalProducerProcess.timeout`) and the Java worker's `max.block.ms`.
CALL_TIMEOUT_S = 10.0
#: The transaction protocol word of every commit and abort line: librdkafka has only protocol 1.
PROTOCOL = "none"
#: The errors librdkafka reports for a record it never put on the wire: such a record is not in doubt
#: (kchaos/workloads/outcome.py's `_NEVER_SENT`, which a test holds this to).
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
#: Beyond the drain, how long a SIGTERM'd worker may take before it exits anyway (the Java worker's).
EXIT_HOLD_MS = 2000
#: Longest sleep before the next transaction is due, so a SIGTERM is seen promptly.
WAIT_SLICE_S = 0.05

#: A record's or transaction's outcome, as the lines and the recorder spell it.
OK, FAIL, INFO = "ok", "fail", "info"


@dataclass(frozen=True)
class Planned:
    """One transaction: its id, (partition, value) of each record in order, and whether it means to commit."""

    txn: str
    records: tuple[tuple[int, str], ...]
    commit: bool


@dataclass
class Planner:
    """A process's transactions, drawn as the in-process `TransactionPlanner` draws them: Python's Random
    seeded with `<seed>:<process>`; per transaction a size of 1 to `max_records`, a first partition, then the
    commit-or-abort choice (abort with probability `abort_ratio`)."""

    process: str
    partitions: int
    max_records: int
    abort_ratio: float
    seed: str
    planned: int = 0
    rng: random.Random = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if self.partitions < 1 or self.max_records < 1:
            raise ValueError(f"need one partition and one record ({self.partitions}, {self.max_records})")
        if not 0 <= self.abort_ratio <= 1:
            raise ValueError(f"abort ratio {self.abort_ratio} is not between 0 and 1")
        self.rng = random.Random(f"{self.seed}:{self.process}")

    def next(self) -> Planned:
        txn = f"{self.process}-txn-{self.planned}"
        self.planned += 1
        count = self.rng.randint(1, self.max_records)
        first = self.rng.randrange(self.partitions)
        commit = self.rng.random() >= self.abort_ratio
        return Planned(
            txn, tuple(((first + i) % self.partitions, f"{txn}-{i}") for i in range(count)), commit
        )


@dataclass(frozen=True)
class TxnArguments:
    """The worker's own `kchaos.` arguments in `txn` mode, the Java transactional worker's."""

    process: str
    topic: str
    partitions: int
    interval_ns: int
    drain_ms: int
    seed: str
    max_records: int
    abort_ratio: float
    commit_attempts: int

    @classmethod
    def parse(cls, worker: dict[str, str]) -> TxnArguments:
        """ValueError naming the argument missing or unusable."""
        try:
            made = cls(
                process=worker["kchaos.process"],
                topic=worker["kchaos.topic"],
                partitions=int(worker["kchaos.partitions"]),
                interval_ns=int(worker["kchaos.interval.us"]) * 1000,
                drain_ms=int(worker["kchaos.drain.ms"]),
                seed=worker["kchaos.seed"],
                max_records=int(worker["kchaos.txn.records"]),
                abort_ratio=float(worker["kchaos.txn.abort.ratio"]),
                commit_attempts=int(worker["kchaos.commit.attempts"]),
            )
        except KeyError as exc:
            raise ValueError(f"missing argument {exc.args[0]}") from None
        if made.commit_attempts < 1 or made.interval_ns < 0 or made.drain_ms < 0:
            raise ValueError(
                "kchaos.commit.attempts must be at least 1, kchaos.interval.us and drain.ms >= 0"
            )
        return made

    def planner(self) -> Planner:
        return Planner(self.process, self.partitions, self.max_records, self.abort_ratio, self.seed)


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


def _kafka_error(exc: KafkaException) -> KafkaError:
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
class TransactionalWriter:
    """One transactional client and the transactions it writes, each step a line."""

    arguments: TxnArguments
    settings: dict[str, str]
    lines: Lines
    make_client: Callable[[dict[str, Any]], TransactionalClient] = Producer
    timeout: float = CALL_TIMEOUT_S
    client: TransactionalClient | None = None
    #: Why the client must be replaced before the next transaction; None while it is usable.
    unusable: KafkaError | None = None
    #: Records of the current transaction not yet answered: value -> partition.
    pending: dict[str, int] = field(default_factory=dict)
    #: Each record's outcome in the current transaction: ok, fail (never sent) or info (in doubt).
    outcomes: dict[str, str] = field(default_factory=dict)

    def start_client(self, stopping: Callable[[], bool]) -> None:
        """A new client with its transactions initialised (init retried until it succeeds or the worker
        stops); a `restart` line says why the one it replaces went."""
        if self.client is not None:
            error, self.unusable = self.unusable, None
            self.lines.add("restart", *(named(error) if error else ("_STATE", "replaced")))
            self.lines.flush()
            held: list[object] = [self.client]
            self.client = None
            retire(held, self.timeout)
        self.unusable = None
        self.client = self.make_client(dict(self.settings))
        while not stopping():
            try:
                self.client.init_transactions(self.timeout)
                return
            except KafkaException as exc:
                error = _kafka_error(exc)
                print(f"{self.arguments.process}: init_transactions: {error}", file=sys.stderr, flush=True)
                if error.fatal():
                    failed: list[object] = [self.client]
                    self.client = self.make_client(dict(self.settings))
                    retire(failed, self.timeout)

    def fence(self) -> None:
        """A failed client may have left its transaction open, holding read_committed readers below it: a
        new instance's `init_transactions` aborts it. One attempt: if the cluster does not answer, the
        transaction timeout still will."""
        if self.client is None or self.unusable is None:
            return
        self.lines.add("restart", *named(self.unusable))
        self.lines.flush()
        held: list[object] = [self.client]
        self.client, self.unusable = None, None
        retire(held, self.timeout)
        self.client = self.make_client(dict(self.settings))
        try:
            self.client.init_transactions(self.timeout)
        except KafkaException as exc:
            print(f"{self.arguments.process}: could not fence its last transaction: {_kafka_error(exc)}",
                  file=sys.stderr, flush=True)  # fmt: skip

    def transaction(self, planned: Planned) -> bool:
        """Begins, writes and ends one transaction, each step a line; True if it committed."""
        client = self.client
        assert client is not None, "start_client first"
        txn = planned.txn
        try:
            client.begin_transaction()
        except KafkaException as exc:
            self.unusable = _kafka_error(exc)
            self.lines.add("begin-failed", txn, *named(self.unusable))
            self.lines.flush()
            return False
        self.lines.add("begun", txn, self.settings.get("transactional.id", ""))
        self.pending, self.outcomes = {}, {}
        for partition, value in planned.records:
            self.lines.add("invoke", txn, value, str(partition))
            self.lines.flush()  # out before its produce()
            self.pending[value] = partition
            self._produce(client, txn, partition, value)
        client.flush(self.timeout)
        for value in self.pending:  # no report: the recorder says so when the commit or abort line comes
            self.outcomes[value] = INFO
        self.pending = {}
        self.lines.flush()
        acknowledged = all(self.outcomes.get(value) == OK for _, value in planned.records)
        if planned.commit and acknowledged:
            return self._commit(client, txn)
        self._abort(client, txn)
        in_doubt = any(self.outcomes.get(value) == INFO for _, value in planned.records)
        if in_doubt and self.unusable is None:
            self.unusable = KafkaError(KafkaError._PURGE_INFLIGHT, IN_DOUBT_AT_ABORT)
        return False

    def _produce(self, client: TransactionalClient, txn: str, partition: int, value: str) -> None:
        def delivered(error: Any, message: Any) -> None:
            self._delivered(txn, value, error, message)

        try:
            client.produce(self.arguments.topic, value=value.encode(), key=txn.encode(), partition=partition,
                           on_delivery=delivered)  # fmt: skip
        except BufferError as exc:
            self._refused(txn, value, partition, "_QUEUE_FULL", str(exc))
        except KafkaException as exc:
            self._refused(txn, value, partition, *named(_kafka_error(exc)))

    def _refused(self, txn: str, value: str, partition: int, name: str, message: str) -> None:
        self.pending.pop(value, None)
        self.outcomes[value] = FAIL
        self.lines.add("refused", txn, value, str(partition), name, message)

    def _delivered(self, txn: str, value: str, error: Any, message: Any) -> None:
        """A delivery report; one after its transaction was decided (a flush that timed out) is left out,
        as the recorder has given that record its outcome already."""
        partition = self.pending.pop(value, None)
        if partition is None:
            return
        if error is None:
            self.outcomes[value] = OK
            self.lines.add("ok", txn, value, str(partition), offset_field(message.offset()))
        else:
            self.outcomes[value] = FAIL if error.code() in NEVER_SENT else INFO
            self.lines.add("error", txn, value, str(partition), *named(error))

    def _commit(self, client: TransactionalClient, txn: str) -> bool:
        committed, error = commit_or_abort(
            self.lines, client, txn, self.arguments.commit_attempts, self.timeout
        )
        if error is not None:
            self.unusable = error
        return committed

    def _abort(self, client: TransactionalClient, txn: str) -> None:
        error = abort(self.lines, client, txn, self.timeout)
        if error is not None:
            self.unusable = error


def commit_or_abort(
    lines: Lines, client: Any, txn: str, attempts: int, timeout: float
) -> tuple[bool, KafkaError | None]:
    """Asks to commit `txn` up to `attempts` times, as the in-process workload does, each ask and answer a
    line; aborts it when the client says to or the attempts run out. Returns whether it committed, and the
    error that leaves the client unusable (fatal, or what librdkafka says to treat as fatal; a failed
    abort), if any. Shared by the transactional worker and the eos processor."""
    for _ in range(attempts):
        lines.add("commit", txn, PROTOCOL)
        lines.flush()
        try:
            client.commit_transaction(timeout)
        except KafkaException as exc:
            error = _kafka_error(exc)
            lines.add("commit-error", txn, *named(error))
            lines.flush()
            if error.txn_requires_abort():
                break
            if not error.retriable():
                return False, error
        else:
            lines.add("committed", txn)
            lines.flush()
            return True, None
    return False, abort(lines, client, txn, timeout)


def abort(lines: Lines, client: Any, txn: str, timeout: float) -> KafkaError | None:
    """Asks to abort `txn`, the ask and the answer each a line; the error if that failed (the client must
    then be replaced: a new instance's `init_transactions` aborts what it left open)."""
    lines.add("abort", txn, PROTOCOL)
    lines.flush()
    try:
        client.abort_transaction(timeout)
    except KafkaException as exc:
        error = _kafka_error(exc)
        lines.add("abort-error", txn, *named(error))
        lines.flush()
        return error
    lines.add("aborted", txn)
    lines.flush()
    return None


def named(error: KafkaError) -> tuple[str, str]:
    """An error as the protocol's ERROR and MESSAGE fields: librdkafka's name and text."""
    return str(error.name()), str(error.str())


def run(worker: dict[str, str], settings: dict[str, str]) -> int:  # pragma: no cover - in the container
    """The `txn` mode: transactions as planned, paced, until SIGTERM; then the one under way is ended, a
    failed client fenced, and the process exits (at the latest `kchaos.drain.ms` and EXIT_HOLD_MS after)."""
    try:
        arguments = TxnArguments.parse(worker)
        planner = arguments.planner()
    except ValueError as exc:
        print(f"kchaos rdkafka txn worker: bad arguments: {exc}", file=sys.stderr)
        return BAD_ARGUMENTS_EXIT
    stopping = threading.Event()

    def on_sigterm(*_: object) -> None:
        if not stopping.is_set():
            stopping.set()
            hold = threading.Timer((arguments.drain_ms + EXIT_HOLD_MS) / 1000, os._exit, (0,))
            hold.daemon = True
            hold.start()

    signal.signal(signal.SIGTERM, on_sigterm)
    lines = Lines(io.BufferedWriter(io.FileIO(1, "w", closefd=False), 1 << 16))
    writer = TransactionalWriter(arguments, settings, lines)
    lines.add("started", libversion()[0])
    lines.flush()
    begun = committed = 0
    due = time.monotonic_ns()
    interval = arguments.interval_ns
    while not stopping.is_set():
        if writer.client is None or writer.unusable is not None:
            if writer.unusable is not None and must_exit(writer.unusable):
                lines.add("restart", *named(writer.unusable))
                lines.flush()
                print(f"kchaos rdkafka txn worker: fatal client error: {writer.unusable}", file=sys.stderr,
                      flush=True)  # fmt: skip
                os._exit(FATAL_EXIT)  # not a destroy: it could wait on a coordinator that is gone
            writer.start_client(stopping.is_set)
            continue
        now = time.monotonic_ns()
        if due > now:
            time.sleep(min(WAIT_SLICE_S, (due - now) / 1e9))
            continue
        due = max(due + interval, now - interval)
        begun += 1
        if writer.transaction(planner.next()):
            committed += 1
    writer.fence()
    lines.add("stopped", str(begun), str(committed))
    lines.flush()
    # Not a destroy: every transaction has ended, and it could wait on a coordinator that is gone.
    os._exit(0)
