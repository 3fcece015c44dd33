"""The transactional producer without a cluster: its seeded plan, and what it records for each way a
transaction can go, driven through a scripted client. The rows it records are read back through the
history's Parquet and checked by the pandas reference, so the workload and the definitions agree on the
vocabulary. Only the settings test touches librdkafka itself (creating a client checks its settings
before it connects anywhere)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import pytest
from confluent_kafka import KafkaError, KafkaException, Message, Producer

from kchaos.checkers.rules.anomaly_names import ABORTED_READ, TRANSACTION_ANOMALY_NAMES
from kchaos.compose.rdkafka.transaction_calls import IN_DOUBT_AT_ABORT
from kchaos.compose.rdkafka.transaction_plan import PlannedTransaction, TransactionPlanner
from kchaos.model.config import load_config
from kchaos.model.events import (
    ASSIGN,
    FAIL,
    INFO,
    INVOKE,
    ISOLATION,
    OK,
    POLL,
    PRODUCER_RESTART,
    READ_COMMITTED,
    TXN_ABORT,
    TXN_BEGIN,
    TXN_COMMIT,
    TXN_SEND,
)
from kchaos.model.history import HistoryWriter
from kchaos.model.history_files import history_path
from kchaos.model.run_files import RunDir
from kchaos.workloads.in_harness.transactions import (
    DeliveryCallback,
    TransactionalProducerProcess,
    TransactionalWorkload,
    transactional_settings,
)
from tests.reference.transactions import reference_transaction_anomaly_ids

TOPIC = "kchaos"
NOTHING = {name: set[str]() for name in TRANSACTION_ANOMALY_NAMES}


def planner(**overrides: object) -> TransactionPlanner:
    values: dict[str, object] = {
        "process": "producer-0", "partitions": 3, "max_records": 4, "abort_ratio": 0.3, "seed": 7,
    }  # fmt: skip
    values.update(overrides)
    return TransactionPlanner(**values)  # type: ignore[arg-type]


def plans(made: TransactionPlanner, count: int) -> list[PlannedTransaction]:
    return [made.next() for _ in range(count)]


def test_the_plan_is_the_seeds_alone() -> None:
    assert plans(planner(), 50) == plans(planner(), 50)
    assert plans(planner(), 50) != plans(planner(seed=8), 50)
    assert plans(planner(), 50) != plans(planner(process="producer-1"), 50)


def test_each_transaction_writes_one_to_n_records_to_distinct_partitions_with_unique_values() -> None:
    planned = plans(planner(), 500)
    sizes = {len(p.records) for p in planned}
    assert sizes == {1, 2, 3, 4}
    for p in planned:
        partitions = [partition for partition, _ in p.records]
        assert len(set(partitions)) == min(len(partitions), 3)
    values = [value for p in planned for _, value in p.records]
    assert len(values) == len(set(values))
    assert len({p.txn for p in planned}) == len(planned)


@pytest.mark.parametrize(("ratio", "low", "high"), [(0.0, 0, 0), (1.0, 1000, 1000), (0.3, 250, 350)])
def test_the_abort_ratio_is_kept(ratio: float, low: int, high: int) -> None:
    aborted = sum(not p.commit for p in plans(planner(abort_ratio=ratio), 1000))
    assert low <= aborted <= high


@pytest.mark.parametrize("bad", [{"partitions": 0}, {"max_records": 0}, {"abort_ratio": 1.5}])
def test_a_plan_that_cannot_be_kept_is_refused(bad: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        planner(**bad)


def error(code: int, *, retriable: bool = False, abort: bool = False, fatal: bool = False) -> KafkaException:
    return KafkaException(
        KafkaError(code, "scripted", fatal=fatal, retriable=retriable, txn_requires_abort=abort)
    )


@dataclass
class ScriptedClient:
    """Does what the test says: a delivery report per value (success unless `errors` names one; none before
    the flush ends for `unreported` ones), and the errors begins, commits and aborts raise, in order (None:
    success)."""

    errors: dict[str, KafkaError] = field(default_factory=dict)
    unreported: set[str] = field(default_factory=set)
    refuse: set[str] = field(default_factory=set)
    commits: list[KafkaException | None] = field(default_factory=list)
    aborts: list[KafkaException | None] = field(default_factory=list)
    begins: list[KafkaException | None] = field(default_factory=list)
    queued: list[tuple[str, int, DeliveryCallback]] = field(default_factory=list)
    late: list[tuple[str, int, DeliveryCallback]] = field(default_factory=list)
    ends: dict[int, int] = field(default_factory=dict)
    inits: int = 0

    def init_transactions(self, timeout: float = -1) -> None:
        self.inits += 1

    def begin_transaction(self) -> None:
        self._next(self.begins)

    def produce(
        self, topic: str, *, value: bytes, key: bytes, partition: int, on_delivery: DeliveryCallback
    ) -> None:
        if value.decode() in self.refuse:
            raise BufferError("Local: Queue full")
        self.queued.append((value.decode(), partition, on_delivery))

    def flush(self, timeout: float = -1) -> int:
        for value, partition, report in self.queued:
            if value in self.unreported:
                self.late.append((value, partition, report))
                continue
            offset = self.ends.get(partition, 0)
            self.ends[partition] = offset + 1
            report(self.errors.get(value), Message(topic=TOPIC, partition=partition, offset=offset))
        self.queued.clear()
        return len(self.late)

    def deliver_late(self) -> None:
        for _, partition, report in self.late:
            report(None, Message(topic=TOPIC, partition=partition, offset=99))

    def commit_transaction(self, timeout: float = -1) -> None:
        self._next(self.commits)

    def abort_transaction(self, timeout: float = -1) -> None:
        self._next(self.aborts)

    @staticmethod
    def _next(script: list[KafkaException | None]) -> None:
        if script and (raised := script.pop(0)) is not None:
            raise raised


@pytest.fixture
def history(tmp_path: Path) -> Iterator[HistoryWriter]:
    writer = HistoryWriter(RunDir(tmp_path), "txn-test")
    yield writer
    writer.finish()


def producer(history: HistoryWriter, client: ScriptedClient) -> TransactionalProducerProcess:
    process = TransactionalProducerProcess(
        process="producer-0", settings={"transactional.id": "kchaos-producer-0"}, topic=TOPIC,
        planner=planner(), history=history, make_client=lambda settings: client,
    )  # fmt: skip
    process.start_client(threading.Event())
    return process


def rows(history: HistoryWriter) -> pd.DataFrame:
    history.finish()
    return pd.read_parquet(history_path(history.files.path))


def steps(history: HistoryWriter) -> list[tuple[str, str, str | None]]:
    """(f, type, value) of every row, in order."""
    frame = rows(history)
    values = [None if pd.isna(value) else str(value) for value in frame["value"]]
    return list(zip(frame["f"].astype(str), frame["type"].astype(str), values, strict=True))


TWO = PlannedTransaction("t", ((0, "a"), (1, "b")), commit=True)


def test_a_commit_records_every_record_where_it_landed_then_the_commit(history: HistoryWriter) -> None:
    producer(history, ScriptedClient()).run_one(TWO)
    assert steps(history) == [
        (TXN_BEGIN, OK, None),
        (TXN_SEND, INVOKE, "a"), (TXN_SEND, INVOKE, "b"), (TXN_SEND, OK, "a"), (TXN_SEND, OK, "b"),
        (TXN_COMMIT, INVOKE, None), (TXN_COMMIT, OK, None),
    ]  # fmt: skip
    frame = rows(history)
    assert set(frame["key"]) == {"t"}
    assert frame.loc[frame["type"] == OK, "detail"].iloc[0] == '{"transactional_id": "kchaos-producer-0"}'
    sent = frame[(frame["f"] == TXN_SEND) & (frame["type"] == OK)]
    assert list(zip(sent["partition"], sent["offset"], strict=True)) == [(0, 0), (1, 0)]
    # librdkafka reports no EndTxn version: its protocol is recorded as derived from its source, not seen.
    commit = frame[(frame["f"] == TXN_COMMIT) & (frame["type"] == INVOKE)]
    assert list(commit["detail"]) == ['{"transaction_protocol_derived": 1}']


def test_a_planned_abort_never_asks_to_commit(history: HistoryWriter) -> None:
    producer(history, ScriptedClient()).run_one(PlannedTransaction("t", ((0, "a"),), commit=False))
    assert steps(history)[-2:] == [(TXN_ABORT, INVOKE, None), (TXN_ABORT, OK, None)]
    assert TXN_COMMIT not in {f for f, _, _ in steps(history)}


def test_a_record_not_acknowledged_aborts_without_asking_to_commit(history: HistoryWriter) -> None:
    """Asking would only have raised an error of unknown effect; not asking makes the abort definite."""
    timed_out = KafkaError(KafkaError._MSG_TIMED_OUT, "scripted")
    producer(history, ScriptedClient(errors={"b": timed_out})).run_one(TWO)
    recorded = steps(history)
    assert (TXN_SEND, INFO, "b") in recorded
    assert recorded[-2:] == [(TXN_ABORT, INVOKE, None), (TXN_ABORT, OK, None)]
    assert TXN_COMMIT not in {f for f, _, _ in recorded}


def test_a_client_that_aborted_records_in_doubt_is_replaced_before_the_next_transaction(
    history: HistoryWriter,
) -> None:
    """Its next records could otherwise reuse the doubtful ones' sequence numbers, which the broker would
    acknowledge as duplicates without writing them; a record that definitely failed leaves no doubt."""
    refused = producer(history, ScriptedClient(refuse={"a"}))
    refused.run_one(TWO)
    assert refused.unusable is None
    client = ScriptedClient(unreported={"b"})
    made = producer(history, client)
    made.run_one(TWO)
    assert made.unusable is not None and made.unusable.str() == IN_DOUBT_AT_ABORT
    made.start_client(threading.Event())
    assert client.inits == 2 and made.unusable is None
    recorded = rows(history)
    assert (recorded["f"].iloc[-1], recorded["type"].iloc[-1]) == (PRODUCER_RESTART, INFO)
    assert recorded["error"].iloc[-1] == f"_PURGE_INFLIGHT: {IN_DOUBT_AT_ABORT}"


def test_a_record_the_client_refused_was_never_sent(history: HistoryWriter) -> None:
    producer(history, ScriptedClient(refuse={"a"})).run_one(TWO)
    recorded = steps(history)
    assert (TXN_SEND, FAIL, "a") in recorded and recorded[-1] == (TXN_ABORT, OK, None)


def test_a_record_without_a_report_is_indeterminate_once(history: HistoryWriter) -> None:
    client = ScriptedClient(unreported={"b"})
    made = producer(history, client)
    made.run_one(TWO)
    client.deliver_late()
    recorded = steps(history)
    assert [step for step in recorded if step[2] == "b"] == [(TXN_SEND, INVOKE, "b"), (TXN_SEND, INFO, "b")]
    assert recorded[-1] == (TXN_ABORT, OK, None)


def test_a_commit_that_timed_out_is_asked_again_and_is_indeterminate(history: HistoryWriter) -> None:
    client = ScriptedClient(commits=[error(KafkaError._TIMED_OUT, retriable=True), None])
    producer(history, client).run_one(TWO)
    assert steps(history)[-4:] == [
        (TXN_COMMIT, INVOKE, None), (TXN_COMMIT, INFO, None),
        (TXN_COMMIT, INVOKE, None), (TXN_COMMIT, OK, None),
    ]  # fmt: skip


def test_a_commit_the_client_says_must_be_aborted_is_indeterminate_then_aborted(
    history: HistoryWriter,
) -> None:
    client = ScriptedClient(commits=[error(KafkaError._TIMED_OUT, abort=True)])
    producer(history, client).run_one(TWO)
    assert steps(history)[-4:] == [
        (TXN_COMMIT, INVOKE, None), (TXN_COMMIT, INFO, None),
        (TXN_ABORT, INVOKE, None), (TXN_ABORT, OK, None),
    ]  # fmt: skip


def test_commits_that_keep_timing_out_end_in_an_abort(history: HistoryWriter) -> None:
    client = ScriptedClient(commits=[error(KafkaError._TIMED_OUT, retriable=True)] * 3)
    producer(history, client).run_one(TWO)
    recorded = steps(history)
    assert recorded.count((TXN_COMMIT, INFO, None)) == 3
    assert recorded[-1] == (TXN_ABORT, OK, None)


def test_a_fatal_commit_error_replaces_the_client(history: HistoryWriter) -> None:
    client = ScriptedClient(commits=[error(KafkaError._FENCED, fatal=True)])
    made = producer(history, client)
    made.run_one(TWO)
    assert made.unusable is not None
    made.start_client(threading.Event())
    recorded = steps(history)
    assert recorded[-2:] == [(TXN_COMMIT, INFO, None), (PRODUCER_RESTART, INFO, None)]
    assert client.inits == 2 and made.unusable is None


def test_a_failed_abort_is_indeterminate_and_replaces_the_client(history: HistoryWriter) -> None:
    client = ScriptedClient(aborts=[error(KafkaError._TIMED_OUT, retriable=True)])
    made = producer(history, client)
    made.run_one(PlannedTransaction("t", ((0, "a"),), commit=False))
    assert steps(history)[-1] == (TXN_ABORT, INFO, None) and made.unusable is not None


def test_a_transaction_the_client_would_not_begin_is_recorded_and_the_client_replaced(
    history: HistoryWriter,
) -> None:
    made = producer(history, ScriptedClient(begins=[error(KafkaError._STATE)]))
    made.run_one(TWO)
    assert steps(history) == [(TXN_BEGIN, FAIL, None)] and made.unusable is not None


def test_what_the_workload_records_is_what_the_definitions_read(history: HistoryWriter) -> None:
    """A committed, an aborted and an undecided transaction as the workload records them, then a
    read_committed reader returning all their records: only the aborted one's is an `aborted-read`."""
    client = ScriptedClient(commits=[None, error(KafkaError._TIMED_OUT, abort=True)])
    made = producer(history, client)
    made.run_one(PlannedTransaction("committed", ((0, "c0"), (1, "c1")), commit=True))
    made.run_one(PlannedTransaction("aborted", ((0, "a0"),), commit=False))
    made.run_one(PlannedTransaction("undecided", ((1, "u1"),), commit=True))
    history.record(
        "consumer-0", OK, ASSIGN, topic=TOPIC, detail={"partitions": [0, 1], ISOLATION: READ_COMMITTED}
    )
    for value, partition, offset in [("c0", 0, 0), ("c1", 1, 0), ("a0", 0, 1), ("u1", 1, 1)]:
        history.record("consumer-0", OK, POLL, topic=TOPIC, partition=partition, offset=offset, value=value)
    assert reference_transaction_anomaly_ids(rows(history)) == {**NOTHING, ABORTED_READ: {"a0"}}


def test_librdkafka_takes_the_transactional_settings_and_refuses_acks_1() -> None:
    """Creating a client checks its settings before it connects to anything."""
    settings = transactional_settings(load_config(message_timeout_ms=120_000), "127.0.0.1:1", "p", "kchaos-p")
    Producer(settings)
    with pytest.raises(KafkaException, match="acks"):
        Producer({**settings, "acks": "1"})


def test_a_client_that_failed_mid_transaction_is_fenced_before_the_run_ends(history: HistoryWriter) -> None:
    """Its transaction may still be open and would hold read_committed readers, the final read among
    them, below it until the transaction timeout: a new instance's init aborts it at once."""
    client = ScriptedClient(aborts=[error(KafkaError._TIMED_OUT, retriable=True)])
    made = producer(history, client)
    made.run_one(PlannedTransaction("t", ((0, "a"),), commit=False))
    made.fence()
    assert client.inits == 2 and made.unusable is None
    assert steps(history)[-1] == (PRODUCER_RESTART, INFO, None)
    made.fence()  # a usable client is left alone
    assert client.inits == 2


def test_a_stopped_producer_ends_the_transaction_it_began_and_keeps_its_pace(history: HistoryWriter) -> None:
    client = ScriptedClient()
    made = producer(history, client)
    made.interval = 0.05
    stop = threading.Event()
    thread = threading.Thread(target=made.run, args=(stop,))
    thread.start()
    threading.Event().wait(0.5)
    stop.set()
    thread.join(5)
    recorded = steps(history)
    begun = recorded.count((TXN_BEGIN, OK, None))
    ended = recorded.count((TXN_COMMIT, OK, None)) + recorded.count((TXN_ABORT, OK, None))
    assert begun == ended and 6 <= begun <= 12, f"{begun} transactions begun in 0.5 s at one per 50 ms"


def test_the_workload_paces_transactions_to_the_record_rate(history: HistoryWriter) -> None:
    config = load_config(workload="txn", producers=2, rate=100, txn_records=3)
    made = TransactionalWorkload(config, "127.0.0.1:1", history)
    # Two records a transaction on average, two producers: each starts one every 40 ms for 100 records/s.
    assert [p.interval for p in made.processes] == [pytest.approx(0.04)] * 2
    assert made.processes[1].settings["transactional.id"] == f"kchaos-{config.run_id}-producer-1"
    unpaced = TransactionalWorkload(load_config(workload="txn", rate=0), "127.0.0.1:1", history)
    assert unpaced.processes[0].interval == 0
