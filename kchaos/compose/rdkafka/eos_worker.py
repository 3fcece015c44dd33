"""kchaos's librdkafka consume-transform-produce processor as a process of its own: `kchaos.mode=eos` of the
librdkafka worker (kchaos/compose/rdkafka/worker.py), what `--client librdkafka-process --workload eos`
processes with.

It does what the in-process processor does (kchaos/workloads/in_harness/eos.py): a member of the input topic's
group (read_committed) and a transactional producer (`transactional.id` fixed per processor) in one. Per
polled batch it begins a transaction (`<kchaos.txn.prefix>-txn-<n>`), writes one output record per input
record to the same partition of `kchaos.output` (value `<input value>@<txn>`, key the transaction), flushes,
adds the consumer's positions to the transaction with the group's metadata (`send_offsets_to_transaction`,
KIP-447) and commits: a commit that raises a retriable error is asked again up to `kchaos.commit.attempts`
times, one that requires an abort is aborted, and the attempts spent abort it too; with
`kchaos.txn.on.timeout=restart` the first timeout replaces the producer at once instead (a `restart` line
naming the policy), as a timed-out abort does. A transaction that did not
commit is aborted where it can be and the consumer seeks back to the group's committed offsets, so its inputs
are processed again. A record not acknowledged aborts the transaction without asking to commit; an abort with
records in doubt, a failed begin or abort replaces the producer in the process (its `init_transactions`
fences the old one and aborts what it left open).

Its lines are the Java processor's protocol (kchaos/compose/client/KchaosEosProcessor.java's javadoc), so
the Java workload's recorder (kchaos/workloads/processes/java/eos.py) turns them into the same rows: the group
member's (kchaos/compose/rdkafka/group_worker.py), the transactional worker's (`begun`, `begin-failed`,
`invoke`, `ok`, `error`, `refused`, `commit TXN none`, `committed`, `commit-error`, `abort TXN none`,
`aborted`, `abort-error`, `restart`), and its own: `offsets TXN OFFSETS` (before the offsets are sent),
`offsets-error TXN ERROR MESSAGE`, `fate TXN ok|fail|info` (committed; definitely not; asked to commit and
not confirmed), `rewind PARTITIONS FROM MEMBER`, `stopped TRANSACTIONS COMMITTED`. ERROR is librdkafka's
error name; PROTOCOL is `none` (librdkafka sends EndTxn v1: protocol 1, known from its code).

A fatal error of either client ends the process (exit `FATAL_EXIT`) after a `restart` or `poll-error` line,
so the harness's supervisor starts a new process, whose `init_transactions` fences this one. So does a
`send_offsets_to_transaction` that never returns (librdkafka #5456: its coordinator request's timeout is
never checked; the in-process processor gives such a client up the same way), its transaction never asked
to commit. At SIGTERM it finishes the transaction under way, fences a failed producer, closes the consumer
(LeaveGroup) and exits.

Arguments: `kchaos.process`, `kchaos.txn.prefix` (default the process), `kchaos.topic`, `kchaos.output`,
`kchaos.commit.attempts`, `kchaos.txn.on.timeout` (`retry` or `restart`); `consumer.X` and `producer.X` are
the two clients' librdkafka properties.
Imports only the standard library, confluent-kafka and the worker modules (the image holds nothing else).
"""

from __future__ import annotations

import io
import os
import signal
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import KafkaError

from kchaos.compose.rdkafka.group_worker import (
    BATCH,
    POLL_TIMEOUT_S,
    MemberLines,
    offsets_field,
    subscribe,
)
from kchaos.compose.rdkafka.line_formats import (
    BEGIN_FAILED,
    BEGUN,
    FATE,
    INVOKED,
    OFFSETS,
    OFFSETS_ERROR,
    RESTART,
    REWIND,
    STARTED,
    STOPPED,
)
from kchaos.compose.rdkafka.transaction_calls import (
    CALL_TIMEOUT_S,
    FAIL,
    IN_DOUBT_AT_ABORT,
    INFO,
    OK,
    TransactionRecords,
    abort,
    commit_or_abort,
    must_exit,
    named,
    on_timeout_policy,
)
from kchaos.compose.rdkafka.worker import BAD_ARGUMENTS_EXIT, FATAL_EXIT, Lines

#: Seconds past its timeout a `send_offsets_to_transaction` is waited for before the client counts as hung.
OFFSETS_GRACE_S = 5.0
#: Between an output record's input value and its transaction (kchaos/model/events.py `output_value`).
OUTPUT_SEPARATOR = "@"
CONSUMER, PRODUCER = "consumer.", "producer."


class ClientEnded(Exception):
    """The process must end for a new one to take its place (a fatal error, a hung call)."""


def split_clients(settings: dict[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """The consumer's and the producer's properties from `consumer.X` and `producer.X`; ValueError for a
    property of neither."""
    consumer: dict[str, str] = {}
    producer: dict[str, str] = {}
    for name, value in settings.items():
        if name.startswith(CONSUMER):
            consumer[name.removeprefix(CONSUMER)] = value
        elif name.startswith(PRODUCER):
            producer[name.removeprefix(PRODUCER)] = value
        else:
            raise ValueError(f"argument {name}={value} is not consumer. or producer.")
    return consumer, producer


def from_field(committed: list[Any]) -> str:
    """The group's committed offsets as a rewind's FROM: `partition=offset`, empty where it has none."""
    pairs = sorted((tp.partition, tp.offset) for tp in committed)
    return ",".join(f"{p}={o if o >= 0 else ''}" for p, o in pairs)


@dataclass
class Transactions:
    """The processor's transactional producer and its transactions, each step a line. `make_client`
    builds a producer; `send_offsets` adds the consumer's positions to the open transaction."""

    lines: Lines
    settings: dict[str, str]
    output: str
    attempts: int
    #: What the application does when its commit times out (`kchaos.txn.on.timeout`): `retry` or `restart`.
    on_timeout: str
    make_client: Callable[[dict[str, Any]], Any]
    timeout: float = CALL_TIMEOUT_S
    client: Any = None
    #: Why the producer must be replaced before the next transaction; None while it is usable.
    unusable: Any = None
    #: The current transaction's records and their outcomes.
    records: TransactionRecords = field(init=False)

    def __post_init__(self) -> None:
        self.records = TransactionRecords(self.lines)

    def start_client(self, stopping: Callable[[], bool]) -> None:
        """A new producer with its transactions initialised, fencing the one it replaces (a `restart` line
        says why that one went)."""
        if self.client is not None:
            why = named(self.unusable) if self.unusable is not None else ("_STATE", "replaced")
            self.lines.add(RESTART, *why)
            self.lines.flush()
        self.client, self.unusable = None, None
        while not stopping():
            client = self.make_client(dict(self.settings))
            try:
                client.init_transactions(self.timeout)
            except Exception as exc:  # KafkaException; a fatal one needs a new client
                print(f"init_transactions: {exc}", file=sys.stderr, flush=True)
                continue
            self.client = client
            return

    def fence(self) -> None:
        """A failed producer may have left its transaction open, holding read_committed readers below it:
        a new instance's `init_transactions` aborts it. One attempt: if the cluster does not answer, the
        transaction timeout still will."""
        if self.client is None or self.unusable is None:
            return
        self.lines.add(RESTART, *named(self.unusable))
        self.lines.flush()
        self.client, self.unusable = self.make_client(dict(self.settings)), None
        try:
            self.client.init_transactions(self.timeout)
        except Exception as exc:  # KafkaException
            print(f"could not fence its last transaction: {exc}", file=sys.stderr, flush=True)

    def transaction(
        self, txn: str, inputs: list[tuple[int, str]], send_offsets: Callable[[str], Any | None]
    ) -> str:
        """Begins, writes and ends one transaction of `inputs` (partition, value); returns its fate."""
        client = self.client
        assert client is not None, "start_client first"
        try:
            client.begin_transaction()
        except Exception as exc:
            self.unusable = exc.args[0]
            self.lines.add(BEGIN_FAILED, txn, *named(self.unusable))
            self.lines.flush()
            return FAIL
        self.lines.add(BEGUN, txn, self.settings.get("transactional.id", ""))
        records = self.records
        records.begin()
        for partition, value in inputs:
            out = f"{value}{OUTPUT_SEPARATOR}{txn}"
            self.lines.add(INVOKED, txn, out, str(partition))
            self.lines.flush()  # out before its produce()
            records.produce(client, self.output, txn, partition, out)
        client.flush(self.timeout)
        records.unanswered()
        self.lines.flush()
        if self.unusable is not None:
            return FAIL  # never asked to commit: the next producer's init_transactions aborts it
        if not all(outcome == OK for outcome in records.outcomes.values()):
            self._abort(txn)
            if INFO in records.outcomes.values() and self.unusable is None:
                self.unusable = KafkaError(KafkaError._PURGE_INFLIGHT, IN_DOUBT_AT_ABORT)
            return FAIL
        error = send_offsets(txn)
        if error is not None:
            self.lines.add(OFFSETS_ERROR, txn, *named(error))
            self.lines.flush()
            if must_exit(error):
                self.unusable = error
                return FAIL
            self._abort(txn)
            return FAIL
        return self._commit(txn)

    def _commit(self, txn: str) -> str:
        """`ok` once committed; `info` otherwise: asked to commit, whether it did an abort does not say."""
        committed, error = commit_or_abort(
            self.lines, self.client, txn, self.attempts, self.timeout, self.on_timeout
        )
        if error is not None:
            self.unusable = error
        return OK if committed else INFO

    def _abort(self, txn: str) -> None:
        error = abort(self.lines, self.client, txn, self.timeout, self.on_timeout)
        if error is not None:
            self.unusable = error


def offsets_sender(
    consumer: Any, client: Callable[[], Any], lines: Lines, timeout: float
) -> Callable[[str], Any | None]:
    """What adds the consumer's positions to transaction `txn` (after an `offsets` line): None, or the
    error it raised; `ClientEnded` when the call did not return within its timeout and a grace."""

    def send(txn: str) -> Any | None:
        positions = [tp for tp in consumer.position(consumer.assignment()) if tp.offset >= 0]
        lines.add(OFFSETS, txn, offsets_field({tp.partition: tp.offset for tp in positions}))
        lines.flush()
        result: list[Any] = []

        def call() -> None:
            try:
                client().send_offsets_to_transaction(positions, consumer.consumer_group_metadata(), timeout)
                result.append(None)
            except Exception as exc:  # KafkaException
                result.append(exc.args[0])

        thread = threading.Thread(target=call, name="offsets", daemon=True)
        thread.start()
        thread.join(timeout + OFFSETS_GRACE_S)
        if not result:
            raise ClientEnded(
                f"send_offsets_to_transaction did not return within {timeout + OFFSETS_GRACE_S}s"
            )
        return result[0]

    return send


def run(worker: dict[str, str], settings: dict[str, str]) -> int:  # pragma: no cover - in the container
    """The `eos` mode: the processor's loop, each line as the module's docstring says."""
    from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition, libversion

    try:
        process = worker["kchaos.process"]
        prefix = worker.get("kchaos.txn.prefix", process)
        topic = worker["kchaos.topic"]
        output = worker["kchaos.output"]
        attempts = int(worker["kchaos.commit.attempts"])
        on_timeout = on_timeout_policy(worker)
        consumer_settings, producer_settings = split_clients(settings)
    except (KeyError, ValueError) as exc:
        print(f"kchaos rdkafka eos processor: bad arguments: {exc}", file=sys.stderr)
        return BAD_ARGUMENTS_EXIT
    stopping = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopping.set())
    lines = Lines(io.BufferedWriter(io.FileIO(1, "w", closefd=False), 1 << 16))
    member = MemberLines(lines)
    fatal: list[Any] = []

    def on_error(error: Any) -> None:
        if error.fatal():
            fatal.append(error)

    def end(kind: str, error: Any, why: str) -> None:
        lines.add(kind, *named(error))
        lines.flush()
        print(f"kchaos rdkafka eos processor: {why}: {error}", file=sys.stderr, flush=True)
        os._exit(FATAL_EXIT)  # not a destroy: it could wait on a coordinator that is gone

    writer = Transactions(lines, producer_settings, output, attempts, on_timeout, Producer)
    writer.start_client(stopping.is_set)

    def join() -> Any:
        consumer = Consumer({**consumer_settings, "error_cb": on_error})
        subscribe(consumer, topic, member)
        return consumer

    consumer = join()
    lines.add(STARTED, libversion()[0], consumer_settings.get("group.protocol", "classic"))
    lines.flush()
    transactions = committed = 0
    while not stopping.is_set() and not fatal:
        if writer.client is None or writer.unusable is not None:
            if writer.unusable is not None and must_exit(writer.unusable):
                end("restart", writer.unusable, "fatal producer error")
            writer.start_client(stopping.is_set)
            continue
        try:
            messages = consumer.consume(num_messages=BATCH, timeout=POLL_TIMEOUT_S)
        except KafkaException as exc:
            if exc.args[0].fatal():
                fatal.append(exc.args[0])
            else:
                member.poll_error(*named(exc.args[0]))
                lines.flush()
            continue
        inputs: list[tuple[int, str]] = []
        for message in messages:
            error = message.error()
            partition, offset = message.partition(), message.offset()
            if error is None and partition is not None and offset is not None:
                member.handed(partition, offset, message.key(), message.value())
                inputs.append((partition, (message.value() or b"").decode(errors="replace")))
            elif error is not None:
                member.poll_error(*named(error))
        lines.flush()
        if not inputs:
            continue
        txn = f"{prefix}-txn-{transactions}"
        transactions += 1
        send = offsets_sender(consumer, lambda: writer.client, lines, writer.timeout)
        try:
            fate = writer.transaction(txn, inputs, send)
        except ClientEnded as exc:
            lines.add(OFFSETS_ERROR, txn, "_TIMED_OUT", str(exc))
            lines.add(FATE, txn, FAIL)  # never asked to commit: the next process's init aborts it
            end("restart", KafkaError(KafkaError._TIMED_OUT, str(exc)), "a hung producer")
        lines.add(FATE, txn, fate)
        lines.flush()
        if fate == OK:
            committed += 1
            continue
        try:  # seek back to the group's committed offsets, so the inputs are processed again
            assignment = consumer.assignment()
            at = consumer.committed(assignment, timeout=writer.timeout)
            for tp in at:
                consumer.seek(TopicPartition(topic, tp.partition, tp.offset if tp.offset >= 0 else -2))
            lines.add(REWIND, ",".join(str(p) for p in sorted(tp.partition for tp in at)), from_field(at),
                      str(consumer.memberid() or ""))  # fmt: skip
        except KafkaException as exc:
            member.poll_error(exc.args[0].name(), f"cannot seek back to the committed offsets, rejoining: "
                              f"{exc.args[0].str()}")  # fmt: skip
            consumer.close()
            consumer = join()
        lines.flush()
    if fatal:
        end("poll-error", fatal[0], "fatal consumer error")
    writer.fence()
    try:
        consumer.close()
    except (KafkaException, RuntimeError) as exc:
        print(f"kchaos rdkafka eos processor: consumer close: {exc}", file=sys.stderr, flush=True)
    lines.add(STOPPED, str(transactions), str(committed))
    lines.flush()
    os._exit(0)
