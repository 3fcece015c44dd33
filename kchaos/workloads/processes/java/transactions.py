"""Transactional producers that are the release's Java client (`--client java --workload txn`), each a
process in a container of its own, recorded from what the process prints.

The worker (kchaos/compose/client/KchaosTransactions.java, the client image's worker in `kchaos.mode=txn`)
writes transactions as the librdkafka transactional workload does
(kchaos/workloads/in_harness/transactions.py): the same transaction ids and record values, the transaction id
as every record's key, the same pacing, commit attempts and `transactional.id`, so this module records the
same rows (`txn-begin`, `txn-send`, `txn-commit`, `txn-abort`, `producer-restart`) and the same checks judge
either client. What differs is the client's own error handling, which the worker follows as the Java client
documents it. Each commit's and abort's invoke row names the transaction protocol the client used
(kchaos/model/txn_protocol.py).

A transaction whose process died with it under way keeps what the process printed: records it never heard
back about are `info`, and so is a commit or abort it asked for and never reported, since either may have
reached the coordinator.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from kchaos.compose.rdkafka.line_formats import (
    ABORT,
    ABORT_ERROR,
    ABORTED,
    ACKED,
    ASSIGNED,
    BEGIN_FAILED,
    BEGUN,
    COMMIT,
    COMMIT_ERROR,
    COMMITTED,
    ERRORED,
    INVOKED,
    POLLED,
    REFUSED,
    STARTED,
    STOPPED,
    TXN_FIELDS,
)
from kchaos.compose.rdkafka.transaction_calls import ON_TIMEOUT_ARGUMENT
from kchaos.compose.rdkafka.transaction_polls import (
    POLLS_ARGUMENT,
    READ_SETTING_PREFIX,
    SUBSCRIBE,
    VIA_ARGUMENT,
)
from kchaos.model.config import RunConfig
from kchaos.model.events import (
    ASSIGN,
    FAIL,
    INFO,
    INVOKE,
    OK,
    PRODUCER_RESTART,
    READ_COMMITTED,
    SUBSCRIBED,
    TRANSACTIONAL_ID,
    TXN_ABORT,
    TXN_BEGIN,
    TXN_COMMIT,
    TXN_POLL,
    TXN_SEND,
    EventType,
    producer_process,
    transactional_name,
)
from kchaos.model.history import HistoryWriter
from kchaos.model.releases import Release
from kchaos.model.stamped_rows import StampedRows
from kchaos.model.txn_on_timeout import commit_attempts, worker_policy
from kchaos.model.txn_protocol import TRANSACTION_PROTOCOL_DERIVED, TRANSACTION_PROTOCOL_OBSERVED
from kchaos.model.workload_rules import chosen_txn_on_timeout
from kchaos.workloads.in_harness.consumer import isolation_of, reader_group
from kchaos.workloads.in_harness.transactions import TRANSACTION_TIMEOUT_MS
from kchaos.workloads.processes.client_process import EXIT_SLACK_S
from kchaos.workloads.processes.java.group import java_consumer_settings
from kchaos.workloads.processes.java.producer import JavaProducerWorkload, java_producer_settings
from kchaos.workloads.processes.member_recorder import assigned_detail
from kchaos.workloads.processes.worker_lines import LineError, named_fields
from kchaos.workloads.processes.worker_recorder import WorkerRecorder

log = logging.getLogger(__name__)

#: The worker's PROTOCOL word (`KchaosTransactions.protocol`) as a `detail`: the client's own flag, or
#: a client without transaction V2 (protocol 1, known from its code rather than seen); `unknown` is none.
PROTOCOL_DETAIL: dict[str, dict[str, Any]] = {
    "1": {TRANSACTION_PROTOCOL_OBSERVED: 1},
    "2": {TRANSACTION_PROTOCOL_OBSERVED: 2},
    "none": {TRANSACTION_PROTOCOL_DERIVED: 1},
}
#: Why a record was given no outcome by the time its transaction ended: the librdkafka workload's words.
NO_REPORT_AT_END = "no delivery report before the transaction ended"
#: Longest the worker's initTransactions, commit, abort or send may block (`max.block.ms`): the librdkafka
#: workload's bound on each such call.
CALL_TIMEOUT_MS = 10_000


@dataclass(frozen=True)
class TxnLine:
    """One line of a transactional worker's stdout, its fields named."""

    kind: str
    txn: str = ""
    value: str = ""
    partition: int = 0
    offset: int | None = None
    exception: str = ""
    message: str = ""
    said: tuple[str, ...] = ()
    #: An `assign` line's partitions and where its consumer resumed.
    partitions: str = ""
    offsets: str = ""
    #: When the worker said it, by the host's monotonic clock (`kchaos.model.stamped_rows`).
    time_ns: int = 0


def parse_txn_line(line: str) -> TxnLine:
    """The event a transactional worker's line says; LineError for anything else."""
    return TxnLine(**named_fields(line, TXN_FIELDS, "transactional worker"))


def _error(said: TxnLine) -> str:
    """A Java exception as an error text: `Class: message`, as the send errors are written."""
    return f"{said.exception}: {said.message}" if said.message else said.exception


def java_transactional_settings(
    config: RunConfig, bootstrap: str, process: str, release: Release
) -> dict[str, str]:
    """A transactional worker's or eos processor's producer settings: the run's (`java_producer_settings`),
    idempotent whatever --idempotence says (as librdkafka's must be), its own `transactional.id`, a
    transaction timeout of at least the message timeout, and each call bounded by `CALL_TIMEOUT_MS`."""
    return {
        **java_producer_settings(config, bootstrap, process, release),
        "enable.idempotence": "true",
        "transactional.id": transactional_name(config.run_id, process),
        "transaction.timeout.ms": str(max(TRANSACTION_TIMEOUT_MS, config.message_timeout_ms)),
        "max.block.ms": str(CALL_TIMEOUT_MS),
    }


@dataclass
class TransactionRecorder(WorkerRecorder):
    """Records one transactional worker's lines as history rows, and what it left outstanding as
    indeterminate; a failed send is judged by `judge` (the Java client's rule, or librdkafka's for its
    processes)."""

    #: Records invoked and not yet answered: value -> (transaction, partition).
    records: dict[str, tuple[str, int]] = field(default_factory=dict)
    #: The commit or abort asked for and not yet answered: (operation, transaction).
    ending: tuple[str, str] | None = None
    #: The isolation level of its read-write transactions' polls (their consumer's settings).
    isolation: str = READ_COMMITTED
    #: The group that hands those polls' consumer its partitions (`--txn-polls-via subscribe`), named in
    #: each `assign` row (`SUBSCRIBED`) as the in-process consumer's; None when it assigns them itself.
    group: str | None = None

    def take(self, line: str) -> None:
        """Records what one line says; a line outside the protocol is logged and skipped."""
        try:
            said = parse_txn_line(line)
            self._take(said)
        except LineError as exc:
            log.warning("%s: %s", self.process, exc)

    def _take(self, said: TxnLine) -> None:
        rows = StampedRows(self.history, said.time_ns)
        if said.kind == STARTED:
            self.version = said.said[0]
            log.info("%s: client %s started", self.process, self.version)
            self.started.set()
        elif said.kind == STOPPED:
            log.info("%s: stopped after %s transactions, %s committed", self.process, *said.said)
        elif said.kind in (INVOKED, ACKED, ERRORED, REFUSED):
            self._send(said, rows)
        elif said.kind == POLLED:
            rows.record(self.process, OK, TXN_POLL, topic=self.topic, partition=said.partition,
                        offset=said.offset, key=said.txn, value=said.value)  # fmt: skip
        elif said.kind == ASSIGNED:
            detail = assigned_detail(said.partitions, said.offsets, self.isolation)
            if self.group is not None:
                detail[SUBSCRIBED] = self.group
            rows.record(self.process, OK, ASSIGN, topic=self.topic, detail=detail)
        elif said.kind in (COMMIT, ABORT):
            self._unreported(said.txn, NO_REPORT_AT_END, rows)
            f = TXN_COMMIT if said.kind == COMMIT else TXN_ABORT
            with self._lock:
                self.ending = (f, said.txn)
            rows.record(self.process, INVOKE, f, key=said.txn, detail=PROTOCOL_DETAIL.get(said.said[0]))
        elif said.kind in (COMMITTED, ABORTED, COMMIT_ERROR, ABORT_ERROR):
            with self._lock:
                self.ending = None
            f = TXN_COMMIT if said.kind in (COMMITTED, COMMIT_ERROR) else TXN_ABORT
            failed = said.kind in (COMMIT_ERROR, ABORT_ERROR)
            # Never `fail`: an EndTxn that errs may still have reached the coordinator.
            rows.record(self.process, INFO if failed else OK, f, key=said.txn,
                        error=_error(said) if failed else None)  # fmt: skip
        elif said.kind == BEGUN:
            rows.record(self.process, OK, TXN_BEGIN, key=said.txn, detail={TRANSACTIONAL_ID: said.said[0]})
        elif said.kind == BEGIN_FAILED:
            rows.record(self.process, FAIL, TXN_BEGIN, key=said.txn, error=_error(said))
        else:  # RESTART
            log.warning("%s: replacing the transactional client: %s", self.process, _error(said))
            rows.record(self.process, INFO, PRODUCER_RESTART, error=_error(said))

    def _send(self, said: TxnLine, rows: StampedRows) -> None:
        if said.kind == INVOKED:
            with self._lock:
                self.records[said.value] = (said.txn, said.partition)
            rows.record(self.process, INVOKE, TXN_SEND, topic=self.topic, partition=said.partition,
                        key=said.txn, value=said.value)  # fmt: skip
            return
        with self._lock:
            known = self.records.pop(said.value, None)
        if known is None:
            return  # already given its outcome: each record has exactly one
        outcome: EventType = OK
        error = None
        if said.kind == REFUSED:  # thrown by send(): never in the client's buffer
            outcome, error = FAIL, self.judge(said.exception, said.message)[1]
        elif said.kind == ERRORED:
            outcome, error = self.judge(said.exception, said.message)
        rows.record(
            self.process, outcome, TXN_SEND, topic=self.topic, partition=said.partition, offset=said.offset,
            key=said.txn, value=said.value, error=error,
        )  # fmt: skip

    def _unreported(self, txn: str | None, reason: str, rows: StampedRows | HistoryWriter) -> int:
        """Records each record still unanswered (of transaction `txn`, or all) as indeterminate, into `rows`
        (stamped by the line that ended them, or now)."""
        with self._lock:
            left = {v: tp for v, tp in self.records.items() if txn is None or tp[0] == txn}
            for value in left:
                del self.records[value]
        for value, (owner, partition) in left.items():
            rows.record(
                self.process, INFO, TXN_SEND, topic=self.topic, partition=partition, key=owner, value=value,
                error=reason,
            )  # fmt: skip
        return len(left)

    def abandon(self, reason: str) -> int:
        """Records every record still unanswered, and a commit or abort asked for and never answered, as
        indeterminate, with `reason`; returns how many records."""
        left = self._unreported(None, reason, self.history)
        with self._lock:
            ending, self.ending = self.ending, None
        if ending is not None:
            self.history.record(self.process, INFO, ending[0], key=ending[1], error=reason)
        return left


class JavaTransactionalWorkload(JavaProducerWorkload):
    """`producers` Java transactional workers (`--workload txn`), each running its own seeded plan, together
    writing about `rate` records a second, as TransactionalWorkload's threads do."""

    log = logging.getLogger(__name__)

    def _recorder(self, process: str) -> WorkerRecorder:
        reads = self._read_settings(process)
        return TransactionRecorder(
            process, self.topics[process], self.history, isolation=isolation_of(reads),
            group=str(reads["group.id"]) if self.config.txn_polls_via == SUBSCRIBE else None,
        )  # fmt: skip

    def _read_settings(self, process: str) -> dict[str, object]:
        """The consumer settings of its read-write transactions' polls (`--txn-polls`): the Java reader's,
        at read_committed, in a group of their own."""
        name = f"{process}-reads"
        group = reader_group(self.config.run_id, name)
        bootstrap = self.cluster.client_bootstrap
        return dict(
            java_consumer_settings(bootstrap, name, group, READ_COMMITTED, self.config.consumer_config)
        )

    def _poll_arguments(self, process: str) -> list[str]:
        """The worker's arguments for read-write transactions: how many polls at most, and its consumer's
        settings as `kchaos.read.NAME=VALUE` (none when the transactions only write)."""
        if not self.config.txn_polls:
            return []
        reads = [
            f"{READ_SETTING_PREFIX}{name}={value}" for name, value in self._read_settings(process).items()
        ]
        return [
            f"{POLLS_ARGUMENT}={self.config.txn_polls}",
            f"{VIA_ARGUMENT}={self.config.txn_polls_via}",
            *reads,
        ]

    def _drain_ms(self) -> int:
        """How long a stopped worker may take to end its transaction: its records' delivery timeout, every
        commit attempt, an abort, and a fence (a close and an init) of a failed client."""
        attempts = commit_attempts(chosen_txn_on_timeout(self.config))
        return self.config.message_timeout_ms + (attempts + 3) * CALL_TIMEOUT_MS

    def _exit_wait(self) -> float:
        return self._drain_ms() / 1000 + 2 + EXIT_SLACK_S

    def _command(self, n: int) -> list[str]:
        config = self.config
        process = producer_process(n)
        mean_records = (1 + config.transaction_records) / 2
        interval_s = config.producers * mean_records / config.rate if config.rate > 0 else 0.0
        worker = {
            "kchaos.mode": "txn",
            "kchaos.process": process,
            "kchaos.topic": self.topics[process],
            "kchaos.partitions": str(config.partitions),
            "kchaos.interval.us": str(round(interval_s * 1e6)),
            "kchaos.drain.ms": str(self._drain_ms()),
            "kchaos.seed": str(config.seed),
            "kchaos.txn.records": str(config.transaction_records),
            "kchaos.txn.abort.ratio": repr(config.transaction_abort_ratio),
            "kchaos.commit.attempts": str(commit_attempts(chosen_txn_on_timeout(config))),
            ON_TIMEOUT_ARGUMENT: worker_policy(chosen_txn_on_timeout(config)),
        }
        bootstrap = self.cluster.client_bootstrap
        settings = java_transactional_settings(config, bootstrap, process, self.release)
        return [
            *(f"{name}={value}" for name, value in worker.items()),
            *self._poll_arguments(process),
            *(f"{name}={value}" for name, value in settings.items()),
        ]
