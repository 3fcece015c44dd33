"""Consume-transform-produce processors that are the release's Java client (`--client java --workload eos`),
each a process in a container of its own, recorded from what the process prints.

The worker (kchaos/compose/client/KchaosEosProcessor.java) does what the librdkafka processors do
(kchaos/workloads/in_harness/eos.py): a member of the input topic's group and a transactional producer in one,
each polled batch a transaction on the output topic that also carries the group's offsets
(`sendOffsetsToTransaction`), rewound to the group's committed offsets when it did not commit. Its lines are
the group member's (`kchaos.workloads.processes.java.group`) and the transactional worker's
(`kchaos.workloads.processes.java.transactions`), recorded by their recorders, plus the processor's own: the
offsets a transaction carried and its fate become the `commit` row (`mode` transaction, keyed by the
transaction), a rewind an `assign` row with `rewind` and `from`, as the librdkafka processor records them. So
the same exactly-once checks judge either client.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from kchaos.compose.rdkafka.line_formats import (
    FATE,
    OFFSETS,
    OFFSETS_ERROR,
    PROCESSOR_FIELDS,
    PROCESSOR_MEMBER_KINDS,
)
from kchaos.compose.rdkafka.transaction_calls import ON_TIMEOUT_ARGUMENT
from kchaos.harness.client_cluster import ClientCluster
from kchaos.model.config import RunConfig
from kchaos.model.events import (
    ASKED_NS,
    ASSIGN,
    COMMIT,
    FAIL,
    INFO,
    ISOLATION,
    OK,
    READ_COMMITTED,
    EventType,
    output_topic,
    processor_process,
)
from kchaos.model.history import HistoryWriter
from kchaos.model.releases import Release
from kchaos.model.stamped_rows import StampedRows
from kchaos.model.txn_on_timeout import commit_attempts, worker_policy
from kchaos.model.workload_rules import chosen_txn_on_timeout
from kchaos.workloads.in_harness.eos import TRANSACTION_MODE, group_lag, wait_caught_up
from kchaos.workloads.processes.java.group import java_member_settings
from kchaos.workloads.processes.java.transactions import TransactionRecorder, java_transactional_settings
from kchaos.workloads.processes.member_processes import MemberProcesses
from kchaos.workloads.processes.member_recorder import MemberRecorder, parse_offsets
from kchaos.workloads.processes.worker_lines import LineError, named_fields

log = logging.getLogger(__name__)

#: The worker's main class in the client image.
MAIN_CLASS = "KchaosEosProcessor"
#: A transaction's fate as the worker says it: committed, definitely not, or asked and not confirmed.
FATES: dict[str, EventType] = {"ok": OK, "fail": FAIL, "info": INFO}
#: Why a transaction whose process ended before it said its fate is indeterminate.
NO_FATE = "the processor ended before its transaction's fate was known"


@dataclass(frozen=True)
class ProcessorLine:
    """One of the processor's own lines, its fields named."""

    kind: str
    time_ns: int = 0
    txn: str = ""
    offsets: str = ""
    exception: str = ""
    message: str = ""
    fate: str = ""
    partitions: str = ""
    member: str = ""
    said: tuple[str, ...] = ()


def parse_processor_line(line: str) -> ProcessorLine:
    """A processor's own line; LineError for anything else (a member or transaction line included)."""
    return ProcessorLine(**named_fields(line, PROCESSOR_FIELDS, "eos processor"))


def _from(text: str) -> dict[str, int | None]:
    """`0=5,1=` as a rewind's `from`: the group's committed offset by partition, None where it has none."""
    try:
        pairs = (pair.split("=", 1) for pair in text.split(",") if pair)
        return {str(int(p)): (int(o) if o else None) for p, o in pairs}
    except ValueError:
        raise LineError(f"not a list of offsets: {text!r}") from None


@dataclass
class ProcessorRecorder(MemberRecorder):
    """Records one processor's lines: its group member's, its transactions' and its own."""

    output: str = ""
    transactions: TransactionRecorder | None = None
    #: The offsets the open transaction carries (and when they were handed to it), and why they could not
    #: be sent.
    carried: dict[str, tuple[dict[str, int], int]] = field(default_factory=dict)
    offsets_error: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.transactions = TransactionRecorder(self.process, self.output, self.history)

    def take(self, line: str) -> None:
        kind = line.split("\t", 1)[0]
        if kind in PROCESSOR_MEMBER_KINDS:
            super().take(line)
        elif kind not in PROCESSOR_FIELDS:
            assert self.transactions is not None
            self.transactions.take(line)  # logs and skips a line outside every protocol
        else:
            try:
                said = parse_processor_line(line)
                self._own(said, StampedRows(self.history, said.time_ns))
            except LineError as exc:
                log.warning("%s: %s", self.process, exc)

    def _own(self, said: ProcessorLine, rows: StampedRows) -> None:
        if said.kind == OFFSETS:
            with self._lock:
                self.carried[said.txn] = (parse_offsets(said.offsets), said.time_ns)
        elif said.kind == OFFSETS_ERROR:
            error = f"{said.exception}: {said.message}" if said.message else said.exception
            with self._lock:
                self.offsets_error[said.txn] = error
        elif said.kind == FATE:
            fate = FATES.get(said.fate)
            if fate is None:
                raise LineError(f"not a fate: {said.fate!r}")
            self._fate(said.txn, fate, rows)
        else:  # REWIND
            rows.record(
                self.process, OK, ASSIGN, topic=self.topic,
                detail={"partitions": sorted(int(p) for p in said.partitions.split(",") if p),
                        "group": self.group, "from": _from(said.offsets), "member": said.member or None,
                        "rewind": True, ISOLATION: self.isolation},
            )  # fmt: skip

    def _fate(
        self, txn: str, fate: EventType, rows: StampedRows | HistoryWriter, why: str | None = None
    ) -> None:
        """The group's offsets went with the transaction: committed with it, or not."""
        with self._lock:
            offsets, asked_ns = self.carried.pop(txn, ({}, None))
            error = self.offsets_error.pop(txn, None) or why
        # Asked for when the offsets were handed to the transaction: its commit can only apply them later.
        detail: dict[str, Any] = {"offsets": offsets, "group": self.group, "mode": TRANSACTION_MODE}
        if asked_ns is not None:
            detail[ASKED_NS] = asked_ns
        rows.record(self.process, fate, COMMIT, topic=self.topic, key=txn, error=error, detail=detail)

    def abandon(self, reason: str) -> int:
        """Records what the transactional worker left unanswered, and a transaction whose offsets were
        sent and whose fate never came, as indeterminate."""
        assert self.transactions is not None
        left = self.transactions.abandon(reason)
        with self._lock:
            open_txns = list(self.carried)
        for txn in open_txns:
            self._fate(txn, INFO, self.history, f"{NO_FATE}: {reason}")
        return left


class JavaEosWorkload(MemberProcesses):
    """`consumers` Java processors (`--workload eos`) reading the input topic in one group and writing its
    output topic in transactions, each a process of its own."""

    main_class = MAIN_CLASS

    def __init__(
        self, config: RunConfig, cluster: ClientCluster, history: HistoryWriter, image: str, version: str
    ) -> None:
        super().__init__(
            config, cluster, history, image, [processor_process(i) for i in range(config.consumers)]
        )
        self.client_release = Release.parse(version)

    def _worker(self, name: str) -> dict[str, str]:
        """The processor's own arguments (the rest are its consumer's and its producer's settings)."""
        return {
            "kchaos.process": name,
            # A restarted processor names its transactions apart from its predecessor's (`<name>.<k>-txn-N`).
            "kchaos.txn.prefix": f"{name}.{self.restarts[name]}" if self.restarts[name] else name,
            "kchaos.topic": self.config.topic,
            "kchaos.output": output_topic(self.config.topic),
            "kchaos.commit.attempts": str(commit_attempts(chosen_txn_on_timeout(self.config))),
            ON_TIMEOUT_ARGUMENT: worker_policy(chosen_txn_on_timeout(self.config)),
        }

    def _command(self, name: str, isolation: str) -> list[str]:
        config = self.config
        bootstrap = self.cluster.client_bootstrap
        consumer = java_member_settings(config, bootstrap, name, self.group, READ_COMMITTED)
        producer = java_transactional_settings(config, bootstrap, name, self.client_release)
        return [
            *(f"{k}={v}" for k, v in self._worker(name).items()),
            *(f"consumer.{k}={v}" for k, v in consumer.items()),
            *(f"producer.{k}={v}" for k, v in producer.items()),
        ]

    def _recorder(self, name: str, isolation: str) -> MemberRecorder:
        return ProcessorRecorder(
            name, self.config.topic, self.history, group=self.group, mode=TRANSACTION_MODE,
            isolation=READ_COMMITTED, tally=self.tallies[name], output=output_topic(self.config.topic),
        )  # fmt: skip

    def wait_caught_up(self, timeout: float) -> dict[int, int]:
        """Waits until the group has committed every input record (see `kchaos.workloads.in_harness.eos`)."""
        return wait_caught_up(
            lambda: group_lag(self.cluster.bootstrap, self.group, self.config.topic, self.config.partitions),
            timeout,
        )
