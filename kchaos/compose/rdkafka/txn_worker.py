"""kchaos's librdkafka transactional producer as a process of its own (`kchaos.mode=txn` of the worker image,
kchaos/compose/rdkafka/worker.py): what `--client librdkafka-process --workload txn` writes with.

Why a process: the in-process transactional producers (kchaos/workloads/in_harness/transactions.py) are
threads of the harness, which no fault can freeze or kill alone; a process can be paused with its EndTxn
outstanding (`txn-client-pause`), as an application's client can.

It writes what the in-process workload writes, so the same checks judge it: the same seeded plan
(`TransactionPlanner`, transaction_plan.py, drawn from `kchaos.seed` and the process name: the same
transaction ids, record values, sizes, partitions and abort choices), the transaction id as every record's
key, the same pacing, timeouts and librdkafka error handling: a record not acknowledged aborts a transaction
planned to commit without asking to commit; a commit that raises a retriable error (a timeout) is asked
again up to `kchaos.commit.attempts` times, one that requires an abort is aborted, and the attempts spent
abort it too, or, with `kchaos.txn.on.timeout=restart` (`--txn-on-timeout`), the first timeout replaces the
client at once (a `restart` line whose message begins `txn-on-timeout=restart after the commit of TXN timed
out`), as a timed-out abort does; an abort with records in doubt, a failed abort or a failed begin
replaces the client in the process (a `restart` line; the new instance's `init_transactions` fences the old
one and aborts what it left open). A fatal error (librdkafka's `fatal()`, fenced among them) ends the
process after a `restart` line with FATAL_EXIT, so the harness's supervisor starts a new process, as it
would restart a crashed application.

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
import signal
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Producer, libversion

from kchaos.compose.rdkafka.line_formats import (
    BEGIN_FAILED,
    BEGUN,
    INVOKED,
    RESTART,
    STARTED,
    STOPPED,
)
from kchaos.compose.rdkafka.transaction_calls import (
    CALL_TIMEOUT_S,
    IN_DOUBT_AT_ABORT,
    INFO,
    OK,
    TransactionalClient,
    TransactionRecords,
    abort,
    commit_or_abort,
    kafka_error,
    must_exit,
    named,
    on_timeout_policy,
    retire,
)
from kchaos.compose.rdkafka.transaction_plan import PlannedTransaction, TransactionPlanner
from kchaos.compose.rdkafka.transaction_polls import (
    POLLS_ARGUMENT,
    SUBSCRIBE,
    VIA_ARGUMENT,
    TransactionPolls,
    poll_generator,
    read_settings,
)
from kchaos.compose.rdkafka.worker import BAD_ARGUMENTS_EXIT, FATAL_EXIT, Lines

#: Beyond the drain, how long a SIGTERM'd worker may take before it exits anyway (the Java worker's).
EXIT_HOLD_MS = 2000
#: Longest sleep before the next transaction is due, so a SIGTERM is seen promptly.
WAIT_SLICE_S = 0.05


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
    #: What the application does when its commit times out (`kchaos.txn.on.timeout`): `retry` or
    #: `restart` (transaction_calls.py `commit_or_abort`).
    on_timeout: str
    #: The most polls a transaction makes (`kchaos.txn.polls`; 0: it only writes), and its consumer's
    #: settings (`kchaos.read.*`): transaction_polls.py.
    polls: int = 0
    read_settings: tuple[tuple[str, str], ...] = ()
    #: Whether that consumer subscribes (`kchaos.txn.polls.via=subscribe`) rather than assigns.
    subscribe: bool = False

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
                on_timeout=on_timeout_policy(worker),
                polls=int(worker.get(POLLS_ARGUMENT, "0")),
                read_settings=tuple(read_settings(worker).items()),
                subscribe=worker.get(VIA_ARGUMENT, "assign") == SUBSCRIBE,
            )
        except KeyError as exc:
            raise ValueError(f"missing argument {exc.args[0]}") from None
        if made.commit_attempts < 1 or made.interval_ns < 0 or made.drain_ms < 0:
            raise ValueError(
                "kchaos.commit.attempts must be at least 1, kchaos.interval.us and drain.ms >= 0"
            )
        if made.polls < 0 or (made.polls and not made.read_settings):
            raise ValueError(f"{POLLS_ARGUMENT} must be 0 or more, and polls need kchaos.read.* settings")
        if worker.get(VIA_ARGUMENT, "assign") not in ("assign", SUBSCRIBE):
            raise ValueError(f"{VIA_ARGUMENT} must be assign or {SUBSCRIBE}")
        return made

    def planner(self) -> TransactionPlanner:
        return TransactionPlanner(
            self.process, self.partitions, self.max_records, self.abort_ratio, self.seed
        )

    def transaction_polls(self, lines: Lines) -> TransactionPolls | None:
        """The polls of its read-write transactions; None when they only write."""
        if not self.polls:
            return None
        return TransactionPolls(
            self.polls, dict(self.read_settings), self.topic, self.partitions, lines,
            poll_generator(self.seed, self.process), subscribe=self.subscribe,
        )  # fmt: skip


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
    #: The current transaction's records and their outcomes.
    records: TransactionRecords = field(init=False)
    #: What its transactions read, when they poll too.
    polls: TransactionPolls | None = field(init=False)

    def __post_init__(self) -> None:
        self.records = TransactionRecords(self.lines)
        self.polls = self.arguments.transaction_polls(self.lines)

    def start_client(self, stopping: Callable[[], bool]) -> None:
        """A new client with its transactions initialised (init retried until it succeeds or the worker
        stops); a `restart` line says why the one it replaces went."""
        if self.client is not None:
            error, self.unusable = self.unusable, None
            self.lines.add(RESTART, *(named(error) if error else ("_STATE", "replaced")))
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
                error = kafka_error(exc)
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
        self.lines.add(RESTART, *named(self.unusable))
        self.lines.flush()
        held: list[object] = [self.client]
        self.client, self.unusable = None, None
        retire(held, self.timeout)
        self.client = self.make_client(dict(self.settings))
        try:
            self.client.init_transactions(self.timeout)
        except KafkaException as exc:
            print(f"{self.arguments.process}: could not fence its last transaction: {kafka_error(exc)}",
                  file=sys.stderr, flush=True)  # fmt: skip

    def transaction(self, planned: PlannedTransaction) -> bool:
        """Begins, writes and ends one transaction, each step a line; True if it committed."""
        client = self.client
        assert client is not None, "start_client first"
        txn = planned.txn
        try:
            client.begin_transaction()
        except KafkaException as exc:
            self.unusable = kafka_error(exc)
            self.lines.add(BEGIN_FAILED, txn, *named(self.unusable))
            self.lines.flush()
            return False
        self.lines.add(BEGUN, txn, self.settings.get("transactional.id", ""))
        records = self.records
        records.begin()
        polls = self.polls
        if polls is not None:
            polls.plan(len(planned.records))
        for slot, (partition, value) in enumerate(planned.records):
            if polls is not None:
                polls.between(txn, slot)
            self.lines.add(INVOKED, txn, value, str(partition))
            self.lines.flush()  # out before its produce()
            records.produce(client, self.arguments.topic, txn, partition, value)
        if polls is not None:
            polls.between(txn, len(planned.records))
        client.flush(self.timeout)
        records.unanswered()
        self.lines.flush()
        acknowledged = all(records.outcomes.get(value) == OK for _, value in planned.records)
        if planned.commit and acknowledged:
            return self._commit(client, txn)
        self._abort(client, txn)
        in_doubt = any(records.outcomes.get(value) == INFO for _, value in planned.records)
        if in_doubt and self.unusable is None:
            self.unusable = KafkaError(KafkaError._PURGE_INFLIGHT, IN_DOUBT_AT_ABORT)
        return False

    def _commit(self, client: TransactionalClient, txn: str) -> bool:
        arguments = self.arguments
        committed, error = commit_or_abort(
            self.lines, client, txn, arguments.commit_attempts, self.timeout, arguments.on_timeout
        )
        if error is not None:
            self.unusable = error
        return committed

    def _abort(self, client: TransactionalClient, txn: str) -> None:
        error = abort(self.lines, client, txn, self.timeout, self.arguments.on_timeout)
        if error is not None:
            self.unusable = error


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
    lines.add(STARTED, libversion()[0])
    lines.flush()
    begun = committed = 0
    due = time.monotonic_ns()
    interval = arguments.interval_ns
    while not stopping.is_set():
        if writer.client is None or writer.unusable is not None:
            if writer.unusable is not None and must_exit(writer.unusable):
                lines.add(RESTART, *named(writer.unusable))
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
    if writer.polls is not None:
        writer.polls.close()
    lines.add(STOPPED, str(begun), str(committed))
    lines.flush()
    # Not a destroy: every transaction has ended, and it could wait on a coordinator that is gone.
    os._exit(0)
