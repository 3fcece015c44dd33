"""The eos processor without a cluster: which runs may ask for it, how an output record names its input,
and what it records for each way a batch's transaction can go, driven through a scripted consumer and the
scripted transactional client the transactional producer's tests use."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import pandas as pd
import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from kchaos.compose.rdkafka.transaction_plan import TransactionPlanner
from kchaos.model.config import ConfigError, load_config
from kchaos.model.events import (
    ASSIGN,
    COMMIT,
    FAIL,
    OK,
    POLL,
    PRODUCER_RESTART,
    TXN_ABORT,
    TXN_COMMIT,
    TXN_SEND,
    input_value,
    output_topic,
    output_value,
)
from kchaos.model.history import HistoryWriter
from kchaos.model.history_files import history_path
from kchaos.model.run_files import RunDir
from kchaos.workloads.in_harness import eos as eos_module
from kchaos.workloads.in_harness.eos import TRANSACTION_MODE, Processor, ProcessorWriter
from kchaos.workloads.in_harness.group_consumer import group_settings
from tests.test_transactions_workload import ScriptedClient

TOPIC = "kchaos"


def eos(**overrides: Any) -> dict[str, Any]:
    values: dict[str, Any] = {
        "run_id": "t",
        "workload": "eos",
        "nemesis": "kill:target=leader",
        "consumers": 2,
    }
    return values | overrides


def test_eos_runs_where_its_transactions_and_zombie_fencing_exist() -> None:
    config = load_config(**eos())
    assert config.idempotence and config.reader_isolation(1) == "read_committed"
    load_config(**eos(nemesis="kill-member:target=processor-1,kill:target=leader", duration=90))
    refusals = {
        "give --consumers 1 or more": eos(consumers=0),
        "need acks=all": eos(acks="1", idempotence=False),
        "transactional producers are idempotent": eos(idempotence=False),
        "that came in 2.5, KIP-447": eos(kafka_version="2.4.1"),
        "leave --isolation out": eos(isolation="read_uncommitted"),
        "commits its group's offsets inside its transactions": eos(commit="sync"),
        "has members processor-0 to processor-1": eos(nemesis="kill-member:target=member-0"),
    }
    for message, values in refusals.items():
        with pytest.raises(ConfigError, match=message):
            load_config(**values)


def test_an_output_record_names_its_input_and_is_unique_per_write() -> None:
    assert output_topic("kchaos") == "kchaos-out"
    first, again = (
        output_value("producer-0-17", "processor-0-txn-3"),
        output_value("producer-0-17", "p-txn-9"),
    )
    assert first != again
    assert input_value(first) == input_value(again) == "producer-0-17"


@dataclass
class Record:
    """A message as a consumer hands it over."""

    partition_: int
    offset_: int
    value_: str

    def error(self) -> None:
        return None

    def topic(self) -> str:
        return TOPIC

    def partition(self) -> int:
        return self.partition_

    def offset(self) -> int:
        return self.offset_

    def key(self) -> None:
        return None

    def value(self) -> bytes:
        return self.value_.encode()


@dataclass
class ScriptedConsumer:
    """Hands over `batches` in turn; says `committed` when asked, and remembers where it was sent."""

    batches: list[list[Record]]
    committed_at: dict[int, int] = field(default_factory=dict)
    seeks: list[tuple[int, int]] = field(default_factory=list)
    place: dict[int, int] = field(default_factory=dict)

    def consume(self, num_messages: int = 1, timeout: float = -1) -> list[Record]:
        batch = self.batches.pop(0) if self.batches else []
        for record in batch:
            self.place[record.partition_] = record.offset_ + 1
        return batch

    def assignment(self) -> list[TopicPartition]:
        return [TopicPartition(TOPIC, p) for p in (0, 1)]

    def position(self, partitions: list[TopicPartition]) -> list[TopicPartition]:
        return [TopicPartition(TOPIC, tp.partition, self.place.get(tp.partition, -1001)) for tp in partitions]

    def consumer_group_metadata(self) -> str:
        return "group-metadata"

    def committed(self, partitions: list[TopicPartition], timeout: float = -1) -> list[TopicPartition]:
        return [
            TopicPartition(TOPIC, tp.partition, self.committed_at.get(tp.partition, -1001))
            for tp in partitions
        ]

    def seek(self, partition: TopicPartition) -> None:
        self.seeks.append((partition.partition, partition.offset))

    def memberid(self) -> str:
        return "member-id"


@dataclass
class OffsetsClient(ScriptedClient):
    """The scripted transactional client, which also takes a transaction's offsets."""

    offsets: list[tuple[list[TopicPartition], Any]] = field(default_factory=list)
    offset_errors: list[KafkaException | None] = field(default_factory=list)

    def send_offsets_to_transaction(
        self, positions: list[TopicPartition], group_metadata: Any, timeout: float = -1
    ) -> None:
        self._next(self.offset_errors)
        self.offsets.append((positions, group_metadata))


@pytest.fixture
def history(tmp_path: Path) -> Iterator[HistoryWriter]:
    writer = HistoryWriter(RunDir(tmp_path), "eos-test")
    yield writer
    writer.finish()


def processor(history: HistoryWriter, consumer: ScriptedConsumer, client: OffsetsClient) -> Processor:
    process = "processor-0"
    writer = ProcessorWriter(
        process, {"transactional.id": "kchaos-processor-0"}, output_topic(TOPIC),
        TransactionPlanner(process, 2, 1, 0.0, 0), history, make_client=lambda settings: client,
    )  # fmt: skip
    made = Processor(
        process=process, settings=group_settings("localhost:1", process, "g", "transaction"), group="g",
        topic=TOPIC, commit="transaction", history=history, writer=writer,
    )  # fmt: skip
    made.consumer = cast(Consumer, consumer)
    writer.offsets = made._positions
    writer.crash_ordered = made.orders.crash.is_set
    writer.start_client(threading.Event())
    return made


def rows(history: HistoryWriter) -> pd.DataFrame:
    history.finish()
    return pd.read_parquet(history_path(history.files.path))


BATCH = [Record(0, 5, "producer-0-1"), Record(1, 7, "producer-1-1"), Record(0, 6, "producer-0-2")]


def test_a_batch_becomes_one_transaction_carrying_the_consumers_offsets(history: HistoryWriter) -> None:
    client = OffsetsClient()
    made = processor(history, ScriptedConsumer([BATCH]), client)
    made._poll_once()
    assert client.offsets == [([TopicPartition(TOPIC, 0, 7), TopicPartition(TOPIC, 1, 8)], "group-metadata")]
    assert made.handed == len(BATCH), "kill-member waits for a processor that was handed records"
    frame = rows(history)
    assert list(frame.loc[frame["f"] == POLL, "value"]) == [r.value_ for r in BATCH]
    sent = frame[(frame["f"] == TXN_SEND) & (frame["type"] == OK)]
    assert set(sent["topic"]) == {output_topic(TOPIC)}
    assert [input_value(v) for v in sent["value"]] == [r.value_ for r in BATCH]
    assert list(sent["partition"]) == [0, 1, 0], "an output record goes to its input's partition"
    commit = frame[frame["f"] == COMMIT]
    assert list(commit["type"]) == [OK] and list(commit["key"]) == list(sent["key"].unique())
    detail = json.loads(str(commit["detail"].iloc[0]))
    asked_ns = detail.pop("asked_ns")  # when the offsets were handed to the transaction, before its commit
    assert detail == {"offsets": {"0": 7, "1": 8}, "group": "g", "mode": TRANSACTION_MODE}
    assert asked_ns <= int(commit["time_ns"].iloc[0])


def test_a_transaction_that_did_not_commit_is_read_again_from_the_committed_offsets(
    history: HistoryWriter,
) -> None:
    refused = KafkaException(KafkaError(KafkaError.CONCURRENT_TRANSACTIONS, "scripted", retriable=True))
    client = OffsetsClient(offset_errors=[refused])
    consumer = ScriptedConsumer([BATCH], committed_at={0: 5})
    processor(history, consumer, client)._poll_once()
    assert consumer.seeks == [(0, 5), (1, -2)], "back to the committed offset, or the beginning"
    frame = rows(history)
    assert list(frame.loc[frame["f"] == TXN_ABORT, "type"]) == ["invoke", OK]
    assert TXN_COMMIT not in set(frame["f"])
    commit = frame[frame["f"] == COMMIT]
    assert list(commit["type"]) == [FAIL] and "CONCURRENT_TRANSACTIONS" in str(commit["error"].iloc[0])
    rewind = json.loads(str(frame.loc[frame["f"] == ASSIGN, "detail"].iloc[0]))
    assert rewind["rewind"] is True and rewind["from"] == {"0": 5, "1": None}


def test_a_crash_ordered_mid_transaction_leaves_it_open(history: HistoryWriter) -> None:
    client = OffsetsClient()
    made = processor(history, ScriptedConsumer([BATCH]), client)
    made.orders.crash.set()
    made._poll_once()  # handed a batch as it was dying: processes none of it
    made.orders.crash.clear()
    made.consumer = cast(Consumer, ScriptedConsumer([BATCH]))
    writer = made.writer
    assert writer is not None
    writer.crash_ordered = lambda: True  # ordered once its records are written
    made._poll_once()
    frame = rows(history)
    assert not set(frame["f"]) & {TXN_COMMIT, TXN_ABORT, COMMIT, ASSIGN}
    assert len(frame[(frame["f"] == TXN_SEND) & (frame["type"] == OK)]) == len(BATCH)
    assert client.offsets == []


@dataclass
class HangingClient(OffsetsClient):
    """Blocks in `send_offsets_to_transaction` past its timeout, as librdkafka #5456 does, until released."""

    release: threading.Event = field(default_factory=threading.Event)

    def send_offsets_to_transaction(
        self, positions: list[TopicPartition], group_metadata: Any, timeout: float = -1
    ) -> None:
        self.release.wait(30)


def test_a_client_hung_adding_the_offsets_is_replaced_and_the_batch_read_again(
    history: HistoryWriter, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(eos_module, "OFFSETS_GRACE", 0.1)
    hung = HangingClient()
    consumer = ScriptedConsumer([BATCH], committed_at={0: 5, 1: 7})
    made = processor(history, consumer, hung)
    assert made.writer is not None
    made.writer.timeout = 0.1
    made._poll_once()
    hung.release.set()
    assert made.writer.client is None, "the hung client is given up"
    assert consumer.seeks == [(0, 5), (1, 7)]
    frame = rows(history)
    assert not set(frame["f"]) & {TXN_COMMIT, TXN_ABORT}, "a hung client can neither commit nor abort"
    commit = frame[frame["f"] == COMMIT]
    assert list(commit["type"]) == [FAIL] and "did not return" in str(commit["error"].iloc[0])
    assert PRODUCER_RESTART in set(frame["f"])
