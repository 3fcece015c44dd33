"""The Java client's transactional producer without a cluster: its worker's lines become the rows the
librdkafka transactional workload writes (so the same checks judge it), every commit and abort names the
transaction protocol the client used and how the run knows it, a worker that dies mid-transaction leaves
what it had in flight indeterminate, and its command carries the librdkafka workload's plan and settings."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from kchaos.model.config import load_config
from kchaos.model.events import (
    FAIL,
    INFO,
    INVOKE,
    MESSAGE_TIMED_OUT,
    OK,
    PRODUCER_RESTART,
    TRANSACTIONAL_ID,
    TXN_ABORT,
    TXN_BEGIN,
    TXN_COMMIT,
    TXN_SEND,
    transactional_name,
)
from kchaos.model.history import HistoryWriter
from kchaos.model.run_files import RunDir
from kchaos.model.txn_protocol import TRANSACTION_PROTOCOL_DERIVED, TRANSACTION_PROTOCOL_OBSERVED
from kchaos.workloads.in_harness.transactions import COMMIT_ATTEMPTS
from kchaos.workloads.processes.java.transactions import (
    NO_REPORT_AT_END,
    JavaTransactionalWorkload,
    TransactionRecorder,
    TxnLine,
    parse_txn_line,
)
from kchaos.workloads.processes.java.transactions import parse_txn_line as parse_worker_txn_line
from kchaos.workloads.processes.worker_lines import LineError


def test_each_kind_of_transactional_line_is_read_with_its_fields() -> None:
    def parse_txn_line(line: str) -> TxnLine:
        return replace(parse_worker_txn_line(line), time_ns=0)

    assert parse_txn_line("started\t7\t4.3.1") == TxnLine("started", said=("4.3.1",))
    assert parse_txn_line("begun\t7\tp-0-txn-3\tkchaos-r-p-0") == TxnLine(
        "begun", "p-0-txn-3", said=("kchaos-r-p-0",)
    )
    assert parse_txn_line("invoke\t7\tp-0-txn-3\tp-0-txn-3-1\t2") == TxnLine(
        "invoke", "p-0-txn-3", "p-0-txn-3-1", 2
    )
    assert parse_txn_line("ok\t7\tt\tt-0\t1\t42\r") == TxnLine("ok", "t", "t-0", 1, 42)
    assert parse_txn_line("error\t7\tt\tt-0\t1\tTimeoutException\tExpiring") == TxnLine(
        "error", "t", "t-0", 1, exception="TimeoutException", message="Expiring"
    )
    assert parse_txn_line("commit\t7\tt\t2") == TxnLine("commit", "t", said=("2",))
    assert parse_txn_line("committed\t7\tt") == TxnLine("committed", "t")
    assert parse_txn_line("abort-error\t7\tt\tKafkaException\t") == TxnLine(
        "abort-error", "t", exception="KafkaException"
    )
    assert parse_txn_line("restart\t7\tProducerFencedException\tfenced") == TxnLine(
        "restart", exception="ProducerFencedException", message="fenced"
    )
    assert parse_txn_line("stopped\t7\t10\t7") == TxnLine("stopped", said=("10", "7"))


@pytest.mark.parametrize(
    "line",
    ["", "committed", "ok\t7\tt\tt-0\t1", "ok\t7\tt\tt-0\tone\t42", "invoke\t7\tt-0\t1", "sent\tt\tt-0\t0",
     "begun\t7\tt", "[main] WARN org.apache.kafka.clients.NetworkClient - disconnected"],
)  # fmt: skip
def test_a_line_outside_the_transactional_protocol_is_refused(line: str) -> None:
    with pytest.raises(LineError):
        parse_txn_line(line)


def _rows(history: HistoryWriter) -> pd.DataFrame:
    return pd.read_parquet(history.finish())


def _steps(rows: pd.DataFrame) -> list[tuple[str, str, Any]]:
    named = rows["value"].where(rows["f"] == TXN_SEND, rows["key"])
    return [
        (f, kind, None if pd.isna(name) else name)
        for f, kind, name in zip(rows["f"], rows["type"], named, strict=True)
    ]


def _detail(raw: Any) -> dict[str, Any]:
    return {} if not isinstance(raw, str) else dict(json.loads(raw))


def test_lines_become_the_rows_the_librdkafka_transactional_workload_writes(tmp_path: Path) -> None:
    history = HistoryWriter(RunDir(tmp_path), "java")
    recorder = TransactionRecorder("producer-0", "t", history)
    for line in [
        "started\t7\t4.3.1",
        "begun\t7\tproducer-0-txn-0\tkchaos-r-producer-0",
        "invoke\t7\tproducer-0-txn-0\tproducer-0-txn-0-0\t1",
        "invoke\t7\tproducer-0-txn-0\tproducer-0-txn-0-1\t2",
        "ok\t7\tproducer-0-txn-0\tproducer-0-txn-0-0\t1\t17",
        "ok\t7\tproducer-0-txn-0\tproducer-0-txn-0-1\t2\t9",
        "commit\t7\tproducer-0-txn-0\t2",
        "committed\t7\tproducer-0-txn-0",
        "begun\t7\tproducer-0-txn-1\tkchaos-r-producer-0",
        "invoke\t7\tproducer-0-txn-1\tproducer-0-txn-1-0\t0",
        "error\t7\tproducer-0-txn-1\tproducer-0-txn-1-0\t0\tTimeoutException\tExpiring 1 record(s)",
        "abort\t7\tproducer-0-txn-1\t1",
        "aborted\t7\tproducer-0-txn-1",
        "begin-failed\t7\tproducer-0-txn-2\tProducerFencedException\tfenced",
        "restart\t7\tProducerFencedException\tfenced",
        "not a line",
    ]:
        recorder.take(line)
    assert recorder.version == "4.3.1" and recorder.started.is_set()
    assert not recorder.records and recorder.ending is None
    rows = _rows(history)
    assert _steps(rows) == [
        (TXN_BEGIN, OK, "producer-0-txn-0"),
        (TXN_SEND, INVOKE, "producer-0-txn-0-0"),
        (TXN_SEND, INVOKE, "producer-0-txn-0-1"),
        (TXN_SEND, OK, "producer-0-txn-0-0"),
        (TXN_SEND, OK, "producer-0-txn-0-1"),
        (TXN_COMMIT, INVOKE, "producer-0-txn-0"),
        (TXN_COMMIT, OK, "producer-0-txn-0"),
        (TXN_BEGIN, OK, "producer-0-txn-1"),
        (TXN_SEND, INVOKE, "producer-0-txn-1-0"),
        (TXN_SEND, INFO, "producer-0-txn-1-0"),
        (TXN_ABORT, INVOKE, "producer-0-txn-1"),
        (TXN_ABORT, OK, "producer-0-txn-1"),
        (TXN_BEGIN, FAIL, "producer-0-txn-2"),
        (PRODUCER_RESTART, INFO, None),
    ]
    assert _detail(rows.iloc[0]["detail"]) == {TRANSACTIONAL_ID: "kchaos-r-producer-0"}
    sends = rows[rows["f"] == TXN_SEND]
    # Every record's row names its transaction as its key, as its Kafka key does, on its topic.
    assert set(sends["topic"]) == {"t"}
    assert list(sends["key"]) == ["producer-0-txn-0"] * 4 + ["producer-0-txn-1"] * 2
    acked = sends[sends["type"] == OK]
    assert list(zip(acked["partition"], acked["offset"], strict=True)) == [(1, 17), (2, 9)]
    assert sends.iloc[-1]["error"].startswith(f"{MESSAGE_TIMED_OUT}: TimeoutException: Expiring")
    assert _detail(rows.iloc[5]["detail"]) == {TRANSACTION_PROTOCOL_OBSERVED: 2}
    assert _detail(rows.iloc[10]["detail"]) == {TRANSACTION_PROTOCOL_OBSERVED: 1}
    assert rows.iloc[12]["error"] == "ProducerFencedException: fenced"
    assert rows.iloc[13]["error"] == "ProducerFencedException: fenced"
    assert set(rows["process"]) == {"producer-0"}


def test_an_endtxn_that_errs_is_indeterminate_and_a_client_without_v2_says_its_protocol_is_derived(
    tmp_path: Path,
) -> None:
    """A commit or abort that raised may still have reached the coordinator: `info`, never `fail`. A
    pre-4.0 client has no transaction V2 to read, so its protocol 1 is recorded as known from its code; a
    protocol the worker could not read is left out rather than guessed."""
    history = HistoryWriter(RunDir(tmp_path), "java")
    recorder = TransactionRecorder("producer-1", "t", history)
    for line in [
        "begun\t7\tproducer-1-txn-0\tx",
        "commit\t7\tproducer-1-txn-0\tnone",
        "commit-error\t7\tproducer-1-txn-0\tTimeoutException\tTimeout expired after 10000ms",
        "commit\t7\tproducer-1-txn-0\tunknown",
        "commit-error\t7\tproducer-1-txn-0\tKafkaException\tcannot commit",
        "abort\t7\tproducer-1-txn-0\tnone",
        "abort-error\t7\tproducer-1-txn-0\tKafkaException\tgone",
    ]:
        recorder.take(line)
    rows = _rows(history)
    ends = rows[rows["f"].isin([TXN_COMMIT, TXN_ABORT])]
    assert list(ends["type"]) == [INVOKE, INFO, INVOKE, INFO, INVOKE, INFO]
    assert list(ends["error"].dropna()) == [
        "TimeoutException: Timeout expired after 10000ms",
        "KafkaException: cannot commit",
        "KafkaException: gone",
    ]
    invokes = [_detail(d) for d in ends.loc[ends["type"] == INVOKE, "detail"]]
    assert invokes == [{TRANSACTION_PROTOCOL_DERIVED: 1}, {}, {TRANSACTION_PROTOCOL_DERIVED: 1}]


def test_a_dead_workers_transaction_in_flight_becomes_indeterminate(tmp_path: Path) -> None:
    """What the process printed before it died stays; the records it never heard back about, and the commit
    it asked for and never reported, are each `info` once, with the reason."""
    history = HistoryWriter(RunDir(tmp_path), "java")
    recorder = TransactionRecorder("producer-0", "t", history)
    for line in [
        "begun\t7\tp-txn-0\tx",
        "invoke\t7\tp-txn-0\tp-txn-0-0\t0",
        "invoke\t7\tp-txn-0\tp-txn-0-1\t1",
        "ok\t7\tp-txn-0\tp-txn-0-0\t0\t5",
        "commit\t7\tp-txn-0\t2",
    ]:
        recorder.take(line)
    reason = "the client process ended (exit 137) without reporting the send"
    assert recorder.abandon(reason) == 0  # the commit line already gave the unanswered record its outcome
    assert recorder.abandon("again") == 0
    recorder.take("begun\t7\tp-txn-1\tx")
    recorder.take("invoke\t7\tp-txn-1\tp-txn-1-0\t2")
    assert recorder.abandon(reason) == 1
    # A late outcome for a record already given one is not recorded again: each record has exactly one.
    recorder.take("ok\t7\tp-txn-1\tp-txn-1-0\t2\t8")
    rows = _rows(history)
    assert _steps(rows)[3:] == [
        (TXN_SEND, OK, "p-txn-0-0"), (TXN_SEND, INFO, "p-txn-0-1"), (TXN_COMMIT, INVOKE, "p-txn-0"),
        (TXN_COMMIT, INFO, "p-txn-0"), (TXN_BEGIN, OK, "p-txn-1"), (TXN_SEND, INVOKE, "p-txn-1-0"),
        (TXN_SEND, INFO, "p-txn-1-0"),
    ]  # fmt: skip
    errors = list(rows["error"].iloc[4:])
    assert errors[0] == NO_REPORT_AT_END and errors[2] == reason and errors[-1] == reason


class _NoCluster:
    """Stands in for the cluster: the command needs only the addresses its clients dial (none)."""

    client_bootstrap = ""


def test_the_command_carries_the_librdkafka_workloads_plan_settings_and_transactional_id() -> None:
    config = load_config(
        client="java", workload="txn", run_id="r", producers=2, rate=100, txn_records=4, abort_ratio=0.25,
        seed=7, message_timeout_ms=30000,
    )  # fmt: skip
    workload = JavaTransactionalWorkload(config, _NoCluster(), None, "img", "4.3.1")  # type: ignore[arg-type]
    said = dict(arg.split("=", 1) for arg in workload._command(1))
    assert said["kchaos.mode"] == "txn" and said["kchaos.process"] == "producer-1"
    assert (said["kchaos.txn.records"], said["kchaos.txn.abort.ratio"], said["kchaos.seed"]) == (
        "4",
        "0.25",
        "7",
    )
    # As TransactionalWorkload paces: producers x mean records / rate seconds between transactions.
    assert said["kchaos.interval.us"] == str(round(2 * 2.5 / 100 * 1e6))
    assert said["kchaos.commit.attempts"] == str(COMMIT_ATTEMPTS)
    assert said["transactional.id"] == transactional_name("r", "producer-1")
    assert (said["enable.idempotence"], said["acks"], said["transaction.timeout.ms"]) == (
        "true",
        "all",
        "60000",
    )
    assert int(said["kchaos.drain.ms"]) / 1000 + 12 == workload._exit_wait()
