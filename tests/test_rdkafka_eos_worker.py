"""The librdkafka eos processor process without a cluster: each transaction's steps, printed in the Java
processor's protocol against a client that answers as librdkafka does, become the rows the in-process
processor writes (the shared recorder), with librdkafka's error handling: a record in doubt aborts without
asking to commit and replaces the producer, offsets that could not be sent abort, a retriable commit is
asked again and one that requires an abort is `info`; and the process gets the in-process processor's two
clients' settings under `consumer.` and `producer.`."""

from __future__ import annotations

import io
import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pandas as pd
import pytest
from confluent_kafka import KafkaError, KafkaException, TopicPartition

from kchaos.compose.rdkafka.eos_worker import Transactions, from_field, must_exit, split_clients
from kchaos.compose.rdkafka.worker import Lines, mode_module
from kchaos.harness.cluster import KafkaCluster
from kchaos.model.config import load_config
from kchaos.model.events import COMMIT, FAIL, INFO, INVOKE, OK, TXN_ABORT, TXN_BEGIN, TXN_COMMIT, TXN_SEND
from kchaos.model.history import HistoryWriter
from kchaos.model.run_files import RunDir
from kchaos.workloads.outcome import named_send_outcome
from kchaos.workloads.processes.java.eos import ProcessorRecorder
from kchaos.workloads.processes.rdkafka.eos import RdkafkaEosWorkload


class _Producer:
    """A transactional producer answering as librdkafka does: each delivery report by the record's value
    (`failing`), each commit from `commits` (None: committed)."""

    def __init__(
        self, failing: dict[str, KafkaError] | None = None, commits: list[Any] | None = None
    ) -> None:
        self.failing = failing or {}
        self.commits = commits or [None]
        self.reports: list[tuple[Any, str]] = []
        self.calls: list[str] = []

    def init_transactions(self, timeout: float = -1) -> None:
        self.calls.append("init")

    def begin_transaction(self) -> None:
        self.calls.append("begin")

    def produce(self, topic: str, value: bytes, key: bytes, partition: int, on_delivery: Any) -> None:
        self.reports.append((on_delivery, value.decode()))

    def flush(self, timeout: float = -1) -> int:
        for n, (report, value) in enumerate(self.reports):
            report(self.failing.get(value), SimpleNamespace(offset=lambda n=n: 40 + n))
        self.reports = []
        return 0

    def commit_transaction(self, timeout: float = -1) -> None:
        self.calls.append("commit")
        error = self.commits.pop(0)
        if error is not None:
            raise KafkaException(error)

    def abort_transaction(self, timeout: float = -1) -> None:
        self.calls.append("abort")


def _processor(producer: _Producer, on_timeout: str = "retry") -> tuple[Transactions, io.BytesIO]:
    out = io.BytesIO()
    writer = Transactions(
        Lines(cast(io.BufferedWriter, out)), {"transactional.id": "kchaos-r-processor-0"}, "t-out", 3,
        on_timeout, lambda _: producer,
    )  # fmt: skip
    writer.start_client(lambda: False)
    return writer, out


def _offsets(error: KafkaError | None = None) -> Any:
    def send(txn: str) -> KafkaError | None:
        return error

    return send


def _recorded(tmp_path: Path, out: io.BytesIO, txn: str, fate: str) -> pd.DataFrame:
    """The lines printed, with the transaction's `fate` and the offsets it carried, as recorded rows."""
    history = HistoryWriter(RunDir(tmp_path), "r")
    recorder = ProcessorRecorder("processor-0", "t", history, group="g", mode="transaction", output="t-out")
    assert recorder.transactions is not None
    recorder.transactions.judge = named_send_outcome
    for line in out.getvalue().decode().splitlines():
        recorder.take(line)
    recorder.take(f"offsets\t1\t{txn}\t0=5")  # the offsets line comes from the consumer's side
    recorder.take(f"fate\t2\t{txn}\t{fate}")
    return pd.read_parquet(history.finish())


def _steps(rows: pd.DataFrame) -> list[tuple[str, str]]:
    return list(zip(rows["f"], rows["type"], strict=True))


def test_a_committed_transaction_becomes_the_in_process_processors_rows(tmp_path: Path) -> None:
    writer, out = _processor(_Producer())
    fate = writer.transaction("processor-0-txn-0", [(0, "producer-0-4"), (1, "producer-1-2")], _offsets())
    assert fate == "ok" and writer.unusable is None
    rows = _recorded(tmp_path, out, "processor-0-txn-0", fate)
    assert _steps(rows) == [
        (TXN_BEGIN, OK), (TXN_SEND, INVOKE), (TXN_SEND, INVOKE), (TXN_SEND, OK), (TXN_SEND, OK),
        (TXN_COMMIT, INVOKE), (TXN_COMMIT, OK), (COMMIT, OK),
    ]  # fmt: skip
    sends = rows[(rows["f"] == TXN_SEND) & (rows["type"] == OK)]
    assert list(sends["value"]) == ["producer-0-4@processor-0-txn-0", "producer-1-2@processor-0-txn-0"]
    assert set(sends["key"]) == {"processor-0-txn-0"} and list(sends["topic"]) == ["t-out", "t-out"]
    commit = json.loads(rows["detail"].iloc[-1])
    assert commit["offsets"] == {"0": 5} and commit["mode"] == "transaction"


def test_a_record_in_doubt_aborts_without_a_commit_and_replaces_the_producer(tmp_path: Path) -> None:
    producer = _Producer({"v@x": KafkaError(KafkaError._MSG_TIMED_OUT)})
    writer, out = _processor(producer)
    assert writer.transaction("x", [(0, "v")], _offsets()) == "fail"
    assert "commit" not in producer.calls and producer.calls[-1] == "abort"
    assert writer.unusable is not None and writer.unusable.name() == "_PURGE_INFLIGHT"
    rows = _recorded(tmp_path, out, "x", "fail")
    assert (TXN_SEND, INFO) in _steps(rows) and (TXN_ABORT, OK) in _steps(rows)
    assert _steps(rows)[-1] == (COMMIT, FAIL)


def test_offsets_that_could_not_be_sent_abort_and_a_fatal_error_leaves_the_abort_to_a_new_instance() -> None:
    producer = _Producer()
    writer, out = _processor(producer)
    assert writer.transaction("a", [(0, "v")], _offsets(KafkaError(KafkaError._TIMED_OUT))) == "fail"
    assert producer.calls[-1] == "abort" and writer.unusable is None
    assert "offsets-error\t" in out.getvalue().decode()
    fenced = KafkaError(KafkaError._FENCED, fatal=True)
    assert writer.transaction("b", [(0, "w")], _offsets(fenced)) == "fail"
    assert producer.calls[-1] == "begin" and writer.unusable is fenced and must_exit(fenced)


def test_a_retriable_commit_is_asked_again_and_one_that_requires_an_abort_is_in_doubt() -> None:
    producer = _Producer(commits=[KafkaError(KafkaError._TIMED_OUT, retriable=True), None])
    writer, _ = _processor(producer)
    assert writer.transaction("a", [(0, "v")], _offsets()) == "ok"
    assert producer.calls.count("commit") == 2
    producer.commits = [KafkaError(KafkaError.INVALID_TXN_STATE, txn_requires_abort=True)]
    assert writer.transaction("b", [(0, "w")], _offsets()) == "info"
    assert producer.calls[-2:] == ["commit", "abort"]


def test_under_restart_a_timed_out_commit_replaces_the_producer_at_once_and_says_why() -> None:
    """`--txn-on-timeout restart`: one commit asked, no abort (librdkafka refuses one while the commit is
    resumable), the fate in doubt, and the `restart` line names the policy; the next transaction is written
    by a new instance, whose init fences the old one."""
    timed_out = KafkaError(KafkaError._TIMED_OUT, "Timed out", retriable=True)
    producer = _Producer(commits=[timed_out, None])
    writer, out = _processor(producer, "restart")
    assert writer.transaction("a", [(0, "v")], _offsets()) == "info"
    assert producer.calls.count("commit") == 1 and "abort" not in producer.calls
    assert writer.unusable is not None and not must_exit(writer.unusable)
    writer.start_client(lambda: False)
    said = out.getvalue().decode().splitlines()
    assert [line.split("\t")[0] for line in said[-3:]] == ["commit", "commit-error", "restart"]
    assert said[-1].split("\t")[2:] == [
        "_TIMED_OUT",
        "txn-on-timeout=restart after the commit of a timed out: Timed out",
    ]
    assert producer.calls[-1] == "init" and writer.transaction("b", [(0, "w")], _offsets()) == "ok"


def test_arguments_and_fields() -> None:
    consumer, producer = split_clients({"consumer.group.id": "g", "producer.transactional.id": "t"})
    assert consumer == {"group.id": "g"} and producer == {"transactional.id": "t"}
    with pytest.raises(ValueError, match=r"consumer\. or producer\."):
        split_clients({"acks": "all"})
    assert from_field([TopicPartition("t", 1, 7), TopicPartition("t", 0, -1001)]) == "0=,1=7"
    assert not must_exit(KafkaError(KafkaError._TIMED_OUT))


def test_a_processor_process_is_the_eos_mode_with_the_in_process_processors_settings(tmp_path: Path) -> None:
    assert mode_module("eos") == "kchaos.compose.rdkafka.eos_worker"
    config = load_config(run_id="r", client="librdkafka-process", workload="eos", kafka_version="4.3.1")
    cluster = SimpleNamespace(
        client_bootstrap="kafka-1:19092", run_id="r", name_prefix="kchaos-r", client_network="kchaos-r-net"
    )
    workload = RdkafkaEosWorkload(
        config, cast(KafkaCluster, cluster), HistoryWriter(RunDir(tmp_path), "r"), "kchaos/rdkafka-client:x"
    )
    assert workload.main_class is None and workload.names == ["processor-0"]
    args = dict(arg.split("=", 1) for arg in workload._command("processor-0", "read_committed"))
    assert args["kchaos.mode"] == "eos" and args["kchaos.txn.prefix"] == "processor-0"
    assert (
        args["consumer.isolation.level"] == "read_committed" and args["consumer.group.id"] == workload.group
    )
    assert args["consumer.enable.auto.commit"] == "false"
    assert args["producer.transactional.id"] == "kchaos-r-processor-0"
    assert args["producer.enable.idempotence"] == "true" and "producer.logger" not in args
    workload.restarts["processor-0"] = 1  # a restarted processor names its transactions apart
    args = dict(arg.split("=", 1) for arg in workload._command("processor-0", "read_committed"))
    assert args["kchaos.txn.prefix"] == "processor-0.1"
    recorder = workload._recorder("processor-0", "read_committed")
    assert isinstance(recorder, ProcessorRecorder) and recorder.transactions is not None
    assert recorder.transactions.judge is named_send_outcome
