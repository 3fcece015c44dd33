"""The fast recording paths write exactly the rows the general one writes: `RecordRows` against
`HistoryWriter.write`, a producer worker's lines through `SendRecorder.take_all` and a reader worker's
through `ReaderRecorder.take_all` against their `take` one line at a time, and a consumer's batch through
`record_messages` against `record_message`. The fast paths exist only for speed (`bench/workload.py`); a
row they spelled differently would change what the checkers judge."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
from confluent_kafka import KafkaError, Message
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kchaos.model.events import INVOKE, OK, POLL, SEND, Event
from kchaos.model.history import HistoryWriter, RecordRows
from kchaos.model.run_files import RunDir
from kchaos.workloads.in_harness.consumer import record_message, record_messages
from kchaos.workloads.processes.reader_processes import ReaderRecorder
from kchaos.workloads.processes.worker_recorder import SendRecorder, WorkerRecorder

#: What a row holds that the history, not the event, supplies: no two recordings share them.
STAMPS = ("run_id", "index", "wall_time")
TEXTS = st.none() | st.text(max_size=12) | st.sampled_from(['a"b', "100%", "%s%d", "tab\there", "é\u2028x"])
NUMBERS = st.none() | st.integers(min_value=0, max_value=2**31 - 1)


def staged(history: HistoryWriter, without: tuple[str, ...] = STAMPS) -> list[dict[str, object]]:
    """The rows a history staged, in order, without the columns in `without`."""
    history.flush()
    lines = history.files.history_staging.read_text(encoding="utf-8").splitlines()
    return [{k: v for k, v in json.loads(line).items() if k not in without} for line in lines]


@settings(max_examples=200, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    process=st.text(min_size=1, max_size=8), topic=st.none() | st.text(max_size=8),
    partition=NUMBERS, offset=NUMBERS, key=TEXTS, value=TEXTS,
    at_ns=st.none() | st.integers(min_value=0, max_value=2**62),
)  # fmt: skip
def test_a_record_row_is_the_row_write_spells_for_the_same_event(
    tmp_path_factory: pytest.TempPathFactory,
    process: str,
    topic: str | None,
    partition: int | None,
    offset: int | None,
    key: str | None,
    value: str | None,
    at_ns: int | None,
) -> None:
    root = Path(tmp_path_factory.mktemp("rows"))
    general, fast = HistoryWriter(RunDir(root / "general"), "r"), HistoryWriter(RunDir(root / "fast"), "r")
    stamp = 12_345 if at_ns is None else at_ns
    general.write(
        Event(process, OK, POLL, topic=topic, partition=partition, offset=offset, key=key, value=value), stamp
    )
    fast.write_spelled([RecordRows(fast, process, OK, POLL, topic).row(partition, offset, key, value, stamp)])
    assert staged(fast, ("wall_time",)) == staged(general, ("wall_time",))
    assert fast.counts == general.counts == {(POLL, OK): 1}
    general.finish()
    fast.finish()


#: A producer worker's lines, well-formed and not: each must be recorded (or refused) as `take` does.
LINES = [
    "started\t1\t4.3.1",
    "invoke\t2\tproducer-0-0\t0",
    "invoke\t3\tproducer-0-1\t1",
    "ok\t4\tproducer-0-0\t2\t17",  # the partition it was invoked for wins, as in `take`
    "ok\t5\tproducer-0-1\t1\t",  # acknowledged without an offset
    "invoke\t6\tproducer-0-2\t2\r",
    "error\t7\tproducer-0-2\t2\tTimeoutException\tExpiring 1 record(s)",
    "invoke\t-8\tproducer-0-3\t0",  # a clock that is no clock: refused
    "invoke\t9\tproducer-0-3\tzero",  # no number: refused
    "invoke\t10\tproducer-0-3\t0\textra",  # a field too many: refused
    "ok\t11\tproducer-0-9\t1\t5",  # never invoked
    "invoke\t12\tproducer-0-4\t1",
    "refused\t13\tproducer-0-4\t1\tSerializationException\tbad",
    'invoke\t14\t"quoted"%s\t1',
    'ok\t15\t"quoted"%s\t1\t3\r',
    "surprise\t16",
    "invoke\t17\tproducer-0-5\t2",  # still in flight when the worker stopped
    "stopped\t18\t6\t1",
]


@settings(max_examples=100, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cuts=st.lists(st.integers(min_value=0, max_value=len(LINES)), max_size=6))
def test_a_producer_workers_lines_in_batches_are_the_rows_take_records_line_by_line(
    tmp_path_factory: pytest.TempPathFactory, cuts: list[int]
) -> None:
    root = Path(tmp_path_factory.mktemp("lines"))
    one_by_one = HistoryWriter(RunDir(root / "take"), "r")
    general = WorkerRecorder("producer-0", "t", one_by_one)
    for line in LINES:
        general.take(line)
    batched = HistoryWriter(RunDir(root / "take_all"), "r")
    fast = SendRecorder("producer-0", "t", batched)
    bounds = [0, *sorted(cuts), len(LINES)]
    for start, end in itertools.pairwise(bounds):
        fast.take_all(LINES[start:end])
    assert staged(batched) == staged(one_by_one)
    assert fast.pending == general.pending == {"producer-0-5": 2}
    assert batched.counts == one_by_one.counts
    assert batched.count(SEND, INVOKE) == 6 and batched.count(SEND, OK) == 4
    one_by_one.finish()
    batched.finish()


def test_a_consumers_batch_is_recorded_as_each_of_its_messages_would_be(tmp_path: Path) -> None:
    messages = [
        Message(topic="t", partition=1, offset=5, key=b"producer-0-1", value=b"producer-0-1"),
        Message(topic="t", partition=0, offset=0, key=None, value=b"v"),
        Message(topic="t", partition=2, error=KafkaError(KafkaError._PARTITION_EOF)),  # no row
        Message(topic="t", partition=2, error=KafkaError(KafkaError.OFFSET_OUT_OF_RANGE)),
        Message(topic="other", partition=0, offset=3, key=b"k", value=None),  # another topic: its own
        Message(topic="t", partition=1, offset=6, key="é".encode(), value=b'"q"%d'),
    ]
    each = HistoryWriter(RunDir(tmp_path / "each"), "r")
    expected = [record_message(each, "consumer-0", "t", m) for m in messages]
    batch = HistoryWriter(RunDir(tmp_path / "batch"), "r")
    reads = record_messages(RecordRows(batch, "consumer-0", OK, POLL, "t"), "t", messages)
    assert reads == [read for read in expected if read is not None] == [(1, 6), (0, 1), (0, 4), (1, 7)]
    without = (*STAMPS, "time_ns")  # stamped now, as each was recorded
    assert staged(batch, without) == staged(each, without)
    assert len(staged(batch)) == 5
    each.finish()
    batch.finish()


#: An assigned reader worker's lines, well-formed and not.
READER_LINES = [
    "started\t1\t2.16.1",
    "assign\t2\t0,1,2\t1:5",
    "poll\t3\t1\t5\t=producer-0-1\t=producer-0-1",
    "poll\t4\t0\t0\t\t=v",  # no key
    "poll\t5\t2\t\t=k\t=no offset",  # no offset: no position
    "poll-error\t6\tOFFSET_OUT_OF_RANGE\tBroker: Offset out of range\t2",
    "poll\t7\t1\tsix\t=k\t=v",  # no number: refused
    "poll\t-8\t1\t6\t=k\t=v",  # no clock: refused
    "hold\t9",
    "release\t10",
    'poll\t11\t1\t6\t=%s "q"\t=é',
    "stopped\t12\t4",
]


@settings(max_examples=100, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cuts=st.lists(st.integers(min_value=0, max_value=len(READER_LINES)), max_size=6))
def test_a_readers_lines_in_batches_are_the_rows_take_records_line_by_line(
    tmp_path_factory: pytest.TempPathFactory, cuts: list[int]
) -> None:
    root = Path(tmp_path_factory.mktemp("reader"))
    one_by_one = HistoryWriter(RunDir(root / "take"), "r")
    general = ReaderRecorder("consumer-0", "t", one_by_one, isolation="read_uncommitted")
    for line in READER_LINES:
        general.take(line)
    batched = HistoryWriter(RunDir(root / "take_all"), "r")
    fast = ReaderRecorder("consumer-0", "t", batched, isolation="read_uncommitted")
    bounds = [0, *sorted(cuts), len(READER_LINES)]
    for start, end in itertools.pairwise(bounds):
        fast.take_all(READER_LINES[start:end])
    assert staged(batched) == staged(one_by_one)
    assert fast.positions == general.positions == {1: 7, 0: 1}
    assert fast.tally.handed == general.tally.handed == 4
    assert batched.count(POLL, OK) == 4
    one_by_one.finish()
    batched.finish()
