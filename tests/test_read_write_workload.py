"""Read-write transactions (`--txn-polls`) without a cluster: a transaction's polls at their seeded slots
between its sends, each record a poll returned a `txn-poll` row of that transaction, through a scripted
producer (tests.test_transactions_workload's) and a scripted consumer."""

from __future__ import annotations

import io
import random
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import pytest
from confluent_kafka import OFFSET_BEGINNING, KafkaError, KafkaException, Message, TopicPartition

from kchaos.compose.rdkafka.transaction_plan import PlannedTransaction
from kchaos.compose.rdkafka.transaction_polls import TransactionPolls, poll_generator
from kchaos.compose.rdkafka.txn_worker import TransactionalWriter, TxnArguments
from kchaos.compose.rdkafka.worker import Lines
from kchaos.model.config import ConfigError, load_config
from kchaos.model.events import (
    ASSIGN,
    ISOLATION,
    OK,
    READ_COMMITTED,
    TXN_BEGIN,
    TXN_COMMIT,
    TXN_POLL,
    TXN_SEND,
)
from kchaos.model.history import HistoryWriter
from kchaos.model.history_files import history_path
from kchaos.model.run_files import RunDir
from kchaos.workloads.in_harness.read_write import ReadWriteProcess
from kchaos.workloads.outcome import named_send_outcome
from kchaos.workloads.processes.java.transactions import JavaTransactionalWorkload, TransactionRecorder
from kchaos.workloads.processes.rdkafka.transactions import RdkafkaTransactionalWorkload
from tests.test_java_transactions import _NoCluster
from tests.test_rdkafka_txn_worker import _arguments, _rows
from tests.test_transactions_workload import TOPIC, ScriptedClient, planner


@dataclass
class ScriptedConsumer:
    """Hands each `consume` the next batch of (partition, offset, value) records, then nothing."""

    batches: list[list[tuple[int, int, str]]] = field(default_factory=list)
    assigned: list[object] = field(default_factory=list)
    #: The topics it subscribed to and the assignment callback it gave, if it subscribed.
    subscribed: list[str] = field(default_factory=list)
    on_assign: Callable[..., None] | None = None
    #: Refuses `assign` as librdkafka does under a cooperative rebalance.
    cooperative: bool = False

    def assign(self, partitions: list[object]) -> None:
        if self.cooperative:
            raise KafkaException(KafkaError(KafkaError._STATE))
        self.assigned = partitions

    def incremental_assign(self, partitions: list[object]) -> None:
        self.assigned = [*self.assigned, *partitions]

    def subscribe(self, topics: list[str], on_assign: Callable[..., None]) -> None:
        self.subscribed, self.on_assign = topics, on_assign

    def consume(self, num_messages: int = 1, timeout: float = -1) -> list[Message]:
        batch = self.batches.pop(0) if self.batches else []
        return [Message(topic=TOPIC, partition=p, offset=o, value=v.encode(), key=b"k") for p, o, v in batch]

    def close(self) -> None:
        pass


def process(
    history: HistoryWriter, consumer: ScriptedConsumer, polls: int, seed: int = 1
) -> ReadWriteProcess:
    made = ReadWriteProcess(
        process="producer-0", settings={"transactional.id": "kchaos-producer-0"}, topic=TOPIC,
        planner=planner(), history=history, make_client=lambda settings: ScriptedClient(), polls=polls,
        reads={"isolation.level": READ_COMMITTED}, partitions=2, rng=random.Random(seed),
    )  # fmt: skip
    made.consumer = consumer  # connected already: its `assign` row is `_connect`'s, tested below
    made.start_client(threading.Event())
    return made


def rows(history: HistoryWriter) -> pd.DataFrame:
    history.finish()
    return pd.read_parquet(history_path(history.files.path))


TWO = PlannedTransaction("t", ((0, "a"), (1, "b")), commit=True)
#: A transactional worker's own arguments, as the harness gives them.
WORKER_ARGUMENTS = {
    "kchaos.process": "producer-0", "kchaos.topic": TOPIC, "kchaos.partitions": "2",
    "kchaos.interval.us": "0", "kchaos.drain.ms": "0", "kchaos.seed": "7", "kchaos.txn.records": "2",
    "kchaos.txn.abort.ratio": "0.3", "kchaos.commit.attempts": "3", "kchaos.txn.on.timeout": "retry",
}  # fmt: skip


def test_each_record_a_poll_returned_is_a_txn_poll_row_of_the_transaction(tmp_path: Path) -> None:
    history = HistoryWriter(RunDir(tmp_path), "rw-test")
    consumer = ScriptedConsumer([[(0, 5, "x"), (1, 7, "y")], [(0, 6, "z")]])
    made = process(history, consumer, polls=3)
    made.due = {}
    made._plan_polls = lambda slots: {0: 1, 2: 1}  # type: ignore[method-assign]
    made.run_one(TWO)
    frame = rows(history)
    steps = list(zip(frame["f"], frame["type"], frame["value"].fillna(""), strict=True))
    assert steps == [
        (TXN_BEGIN, OK, ""),
        (TXN_POLL, OK, "x"), (TXN_POLL, OK, "y"),  # before the first record
        ("txn-send", "invoke", "a"), ("txn-send", "invoke", "b"),
        (TXN_POLL, OK, "z"),  # after the last
        (TXN_SEND, OK, "a"), (TXN_SEND, OK, "b"),
        (TXN_COMMIT, "invoke", ""), (TXN_COMMIT, OK, ""),
    ]  # fmt: skip
    polled = frame[frame["f"] == TXN_POLL]
    assert set(polled["key"]) == {"t"}
    assert list(zip(polled["partition"], polled["offset"], strict=True)) == [(0, 5), (1, 7), (0, 6)]
    assert made.positions == {0: 7, 1: 8}


def test_the_polls_are_seeded_at_most_the_limit_and_at_every_kind_of_slot(tmp_path: Path) -> None:
    history = HistoryWriter(RunDir(tmp_path), "rw-test")
    made = process(history, ScriptedConsumer(), polls=2, seed=5)
    plans = [made._plan_polls(3) for _ in range(300)]
    again = process(history, ScriptedConsumer(), polls=2, seed=5)
    assert plans == [again._plan_polls(3) for _ in range(300)]
    assert {sum(plan.values()) for plan in plans} == {0, 1, 2}
    assert {slot for plan in plans for slot in plan} == {0, 1, 2}
    history.finish()


def test_a_new_consumer_is_assigned_from_the_positions_and_says_it_reads_committed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    history = HistoryWriter(RunDir(tmp_path), "rw-test")
    made = process(history, ScriptedConsumer(), polls=1)
    made.consumer = None
    made.positions = {1: 4}
    monkeypatch.setattr(
        "kchaos.workloads.in_harness.read_write.Consumer", lambda settings: ScriptedConsumer()
    )
    made._poll("t")
    frame = rows(history)
    assign = frame[frame["f"] == ASSIGN]
    assert len(assign) == 1 and f'"{ISOLATION}": "{READ_COMMITTED}"' in assign["detail"].iloc[0]
    assert '"from": {"0": null, "1": 4}' in assign["detail"].iloc[0]


@pytest.mark.parametrize("cooperative", [False, True])
def test_a_subscribed_consumer_reads_each_assignment_on_from_the_positions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cooperative: bool
) -> None:
    """`--txn-polls-via subscribe`: the consumer subscribes, and what the group hands it (all of it under an
    eager rebalance, what is added under a cooperative one, which refuses `assign`) starts where the
    process got to, from the beginning elsewhere, each assignment an `assign` row naming the group it
    subscribed in, never as a group member's row (`group`), which the consumer-group checks would judge."""
    history = HistoryWriter(RunDir(tmp_path), "rw-test")
    made = process(history, ScriptedConsumer(), polls=1)
    made.consumer, made.subscribe, made.positions = None, True, {1: 4}
    made.reads = {**made.reads, "group.id": "kchaos-r-producer-0-reads"}
    consumer = ScriptedConsumer(cooperative=cooperative)
    monkeypatch.setattr("kchaos.workloads.in_harness.read_write.Consumer", lambda settings: consumer)
    made._poll("t")
    assert consumer.subscribed == [TOPIC] and consumer.on_assign is not None
    consumer.on_assign(consumer, [TopicPartition(TOPIC, 0), TopicPartition(TOPIC, 1)])
    made.positions[0] = 9
    consumer.on_assign(consumer, [TopicPartition(TOPIC, 0)])  # a rebalance hands partition 0 back
    starts = [(tp.partition, tp.offset) for tp in consumer.assigned]  # type: ignore[attr-defined]
    if cooperative:
        assert starts == [(0, OFFSET_BEGINNING), (1, 4), (0, 9)]
    else:
        assert starts == [(0, 9)]
    frame = rows(history)
    details = list(frame[frame["f"] == ASSIGN]["detail"])
    assert len(details) == 2 and all('"subscribed": "kchaos-r-producer-0-reads"' in d for d in details)
    assert not any('"group"' in d for d in details)  # no group member's row: the group checks pass it by
    assert '"from": {"0": null, "1": 4}' in details[0] and '"from": {"0": 9}' in details[1]


def test_a_librdkafka_process_s_polls_become_the_rows_the_in_process_transactions_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same seed, scripted producer and consumer batches: the worker's `assign` and `poll` lines, read by
    the transactional recorder, are the in-process read-write transactions' rows, polls at the same slots."""
    batches = [[(0, 5, "x"), (1, 7, "y")], [(0, 6, "z")], [(1, 8, "w")], [(1, 9, "v")]]
    planned = [TWO, PlannedTransaction("u", ((1, "c"),), commit=False), TWO]
    threads = HistoryWriter(RunDir(tmp_path / "threads"), "rw-test")
    monkeypatch.setattr(
        "kchaos.workloads.in_harness.read_write.Consumer", lambda settings: ScriptedConsumer(list(batches))
    )
    made = ReadWriteProcess(
        process="producer-0", settings={"transactional.id": "kchaos-producer-0"}, topic=TOPIC,
        planner=planner(), history=threads, make_client=lambda settings: ScriptedClient(), polls=3,
        reads={"isolation.level": READ_COMMITTED}, partitions=2, rng=poll_generator(7, "producer-0"),
    )  # fmt: skip
    made.start_client(threading.Event())
    out = io.BytesIO()
    lines = Lines(io.BufferedWriter(out))  # type: ignore[arg-type]
    arguments = _arguments(partitions=2, polls=3, read_settings=(("isolation.level", READ_COMMITTED),))
    writer = TransactionalWriter(
        arguments, {"transactional.id": "kchaos-producer-0"}, lines, make_client=lambda _: ScriptedClient()
    )
    assert writer.polls is not None
    writer.polls.make_consumer = lambda settings: ScriptedConsumer(list(batches))
    writer.start_client(lambda: False)
    for transaction in planned:
        made.run_one(transaction)
        writer.transaction(transaction)
    lines.flush()
    process_rows = HistoryWriter(RunDir(tmp_path / "process"), "rw-test")
    recorder = TransactionRecorder("producer-0", TOPIC, process_rows, judge=named_send_outcome)
    for line in out.getvalue().decode().splitlines():
        recorder.take(line)
    recorded = _rows(process_rows)
    assert recorded == _rows(threads)
    assert sum(row[2] == TXN_POLL for row in recorded) >= 2  # the seeded plan polls
    assert sum(row[2] == ASSIGN for row in recorded) == 1


def test_a_worker_s_subscribed_consumer_says_each_assignment_and_reads_on_from_its_positions() -> None:
    out = io.BytesIO()
    lines = Lines(io.BufferedWriter(out))  # type: ignore[arg-type]
    consumer = ScriptedConsumer()
    polls = TransactionPolls(
        1, {}, TOPIC, 2, lines, random.Random(1), make_consumer=lambda settings: consumer, subscribe=True
    )
    polls.positions = {1: 4}
    polls.poll("t")
    assert consumer.subscribed == [TOPIC] and consumer.on_assign is not None
    consumer.on_assign(consumer, [TopicPartition(TOPIC, 1), TopicPartition(TOPIC, 0)])
    lines.flush()
    said = [line.split("\t") for line in out.getvalue().decode().splitlines()]
    assert [(words[0], *words[2:]) for words in said] == [("assign", "0,1", "1=4")]
    starts = [(tp.partition, tp.offset) for tp in consumer.assigned]  # type: ignore[attr-defined]
    assert starts == [(1, 4), (0, OFFSET_BEGINNING)]


def test_the_worker_refuses_polls_without_their_consumer_settings() -> None:
    with pytest.raises(ValueError, match=r"kchaos\.txn\.polls"):
        TxnArguments.parse({**WORKER_ARGUMENTS, "kchaos.txn.polls": "2"})
    parsed = TxnArguments.parse(
        {**WORKER_ARGUMENTS, "kchaos.txn.polls": "2", "kchaos.read.isolation.level": READ_COMMITTED}
    )
    assert (parsed.polls, parsed.read_settings) == (2, (("isolation.level", READ_COMMITTED),))
    assert not parsed.subscribe
    reads = {**WORKER_ARGUMENTS, "kchaos.txn.polls": "2", "kchaos.read.isolation.level": READ_COMMITTED}
    assert TxnArguments.parse({**reads, "kchaos.txn.polls.via": "subscribe"}).subscribe
    with pytest.raises(ValueError, match=r"kchaos\.txn\.polls\.via must be assign or subscribe"):
        TxnArguments.parse({**reads, "kchaos.txn.polls.via": "subcribe"})
    writes_only = TxnArguments.parse(WORKER_ARGUMENTS)
    assert writes_only.transaction_polls(Lines(io.BufferedWriter(io.BytesIO()))) is None


def test_read_write_transactions_are_refused_outside_the_txn_workload() -> None:
    with pytest.raises(
        ConfigError, match=r"--txn-polls 2: .* this run is --workload sends: use --workload txn"
    ):
        load_config(txn_polls=2)
    for client in ("librdkafka", "librdkafka-process", "java"):
        assert load_config(txn_polls=2, workload="txn", client=client).txn_polls == 2
    with pytest.raises(ConfigError, match=r"--txn-polls-via subscribe: .* give --txn-polls N"):
        load_config(workload="txn", txn_polls_via="subscribe")
    assert load_config(workload="txn", txn_polls=1, txn_polls_via="subscribe").txn_polls_via == "subscribe"


@pytest.mark.parametrize(
    ("client", "workload_class", "librdkafka_words"),
    [
        ("java", JavaTransactionalWorkload, False),
        ("librdkafka-process", RdkafkaTransactionalWorkload, True),
    ],
)
def test_a_worker_is_told_its_polls_and_its_consumer_s_settings_in_its_client_s_words(
    client: str, workload_class: type[JavaTransactionalWorkload], librdkafka_words: bool
) -> None:
    """A librdkafka consumer's own setting (enable.auto.offset.store) goes to librdkafka processes only."""
    config = load_config(client=client, workload="txn", run_id="r", txn_polls=3)
    workload = workload_class(config, _NoCluster(), None, "img", "4.3.1")  # type: ignore[arg-type]
    said = workload._command(0)
    assert "kchaos.txn.polls=3" in said and "kchaos.txn.polls.via=assign" in said, said
    subscribed = load_config(
        client=client, workload="txn", run_id="r", txn_polls=3, txn_polls_via="subscribe"
    )
    told = workload_class(subscribed, _NoCluster(), None, "img", "4.3.1")._command(0)  # type: ignore[arg-type]
    assert "kchaos.txn.polls.via=subscribe" in told
    # Its assign rows name the group that handed the partitions over, as the in-process consumer's do.
    subscribed_workload = workload_class(subscribed, _NoCluster(), None, "img", "4.3.1")  # type: ignore[arg-type]
    assert subscribed_workload._recorder("producer-0").group == "kchaos-r-producer-0-reads"  # type: ignore[attr-defined]
    assert workload._recorder("producer-0").group is None  # type: ignore[attr-defined]
    assert ("kchaos.read.enable.auto.offset.store=false" in said) == librdkafka_words, said
    assert f"kchaos.read.isolation.level={READ_COMMITTED}" in said
    assert "kchaos.read.group.id=kchaos-r-producer-0-reads" in said
    assert workload._recorder("producer-0").isolation == READ_COMMITTED  # type: ignore[attr-defined]
    quiet = workload_class(load_config(client=client, workload="txn"), _NoCluster(), None, "img", "4.3.1")  # type: ignore[arg-type]
    assert not [arg for arg in quiet._command(0) if arg.startswith(("kchaos.read.", "kchaos.txn.polls"))]
