"""The leader watcher: what it records, that it outlives an unreachable cluster, that no check reads it."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException
from pyspark.sql import DataFrame, SparkSession

from kchaos.checkers.anomalies.findings import find_anomalies
from kchaos.checkers.faults import fault_intervals, nemesis_events
from kchaos.checkers.passes.frames import HISTORY_STRUCT
from kchaos.checkers.summary import summarize
from kchaos.harness.leaders import Leadership, LeaderWatcher, changes
from kchaos.model.events import INFO, LEADER, LEADER_WATCH_PROCESS, Event
from kchaos.model.history import HistoryWriter
from kchaos.model.history_files import read_ndjson
from kchaos.model.history_schema import COLUMNS, event_row
from kchaos.model.run_files import RunDir
from tests.canned_histories import SCENARIOS, Scenario
from tests.histories import TOPIC, HistoryBuilder
from tests.test_report import lossy_history


class ScriptedMetadata:
    """Answers from a script, one entry per call (an exception is raised); the last entry repeats."""

    def __init__(self, *answers: Mapping[int, Leadership] | Exception) -> None:
        self.answers = list(answers)
        self.calls = 0

    def leadership(self) -> Mapping[int, Leadership]:
        answer = self.answers[min(self.calls, len(self.answers) - 1)]
        self.calls += 1
        if isinstance(answer, Exception):
            raise answer
        return answer


def led(**partitions: tuple[int, list[int]] | tuple[int, list[int], list[int]]) -> dict[int, Leadership]:
    """`led(p0=(1, [1, 2, 3]))`: partition 0 of replicas 1-3 led by broker 1 with that ISR (and the ELR
    given third, if any)."""
    return {
        int(name[1:]): Leadership(
            state[0], tuple(state[1]), tuple(state[2]) if len(state) > 2 else (), replicas=(1, 2, 3)
        )
        for name, state in partitions.items()
    }


@pytest.fixture
def history(tmp_path: Path) -> Iterator[HistoryWriter]:
    writer = HistoryWriter(RunDir(tmp_path), "leaders-test")
    yield writer
    writer.finish()


def recorded(writer: HistoryWriter) -> list[dict[str, Any]]:
    writer.flush()
    return list(read_ndjson(writer.files.history_staging))


def unreachable() -> KafkaException:
    return KafkaException(KafkaError(KafkaError._TRANSPORT, "Failed to get metadata"))


def test_changes_are_every_partition_first_then_only_what_moved() -> None:
    first = led(p0=(1, [1, 2, 3]), p1=(2, [1, 2, 3]))
    assert changes({}, first) == sorted(first.items())
    assert changes(first, first) == []
    moved = led(p0=(2, [2, 3]), p1=(2, [1, 2, 3]))
    assert changes(first, moved) == [(0, Leadership(2, (2, 3), replicas=(1, 2, 3)))]
    assert changes(first, led(p1=(2, [1, 2, 3]))) == [], "a partition missing from an answer did not change"


def test_watcher_records_leader_isr_and_elr_changes_only(history: HistoryWriter) -> None:
    source = ScriptedMetadata(
        led(p0=(1, [1, 2, 3]), p1=(2, [1, 2, 3])),
        led(p0=(1, [1, 2, 3]), p1=(2, [1, 2, 3])),
        unreachable(),
        led(p0=(-1, [2, 3]), p1=(2, [1, 2, 3])),
        led(p0=(2, [2, 3]), p1=(2, [1, 2])),
        led(p0=(2, [2, 3]), p1=(2, [2], [1])),
    )
    watcher = LeaderWatcher("unused:9092", TOPIC, history, source=source)
    assert [watcher.poll_once() for _ in range(6)] == [2, 0, 0, 1, 2, 1]
    rows = recorded(history)
    assert {(row["process"], row["type"], row["f"], row["topic"]) for row in rows} == {
        (LEADER_WATCH_PROCESS, "info", LEADER, TOPIC)
    }
    assert [(row["partition"], row["key"], json.loads(row["detail"])) for row in rows] == [
        (0, "1", {"leader": 1, "isr": [1, 2, 3], "elr": [], "replicas": [1, 2, 3]}),
        (1, "2", {"leader": 2, "isr": [1, 2, 3], "elr": [], "replicas": [1, 2, 3]}),
        (0, "-1", {"leader": -1, "isr": [2, 3], "elr": [], "replicas": [1, 2, 3]}),
        (0, "2", {"leader": 2, "isr": [2, 3], "elr": [], "replicas": [1, 2, 3]}),
        (1, "2", {"leader": 2, "isr": [1, 2], "elr": [], "replicas": [1, 2, 3]}),
        (1, "2", {"leader": 2, "isr": [2], "elr": [1], "replicas": [1, 2, 3]}),
    ]


def wait_for(condition: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def test_watcher_thread_survives_errors_and_stops(history: HistoryWriter) -> None:
    source = ScriptedMetadata(unreachable(), RuntimeError("a bug in a tick"), led(p0=(3, [3])))
    watcher = LeaderWatcher("unused:9092", TOPIC, history, interval=0.01, source=source)
    watcher.start()
    watcher.start()  # idempotent: still one thread
    wait_for(lambda: source.calls >= 5)
    watcher.stop()
    watcher.stop()
    assert not any(t.name == LEADER_WATCH_PROCESS for t in threading.enumerate())
    assert [(row["partition"], row["key"]) for row in recorded(history)] == [(0, "3")]


def test_admin_metadata_of_an_unreachable_cluster_raises_kafka_exception() -> None:
    """What the watcher swallows: the real client's error when no broker answers."""
    from kchaos.harness.leaders import AdminMetadata

    with pytest.raises(KafkaException):
        AdminMetadata("127.0.0.1:1", TOPIC, timeout=0.5).leadership()


# --- no checker reads leader rows -------------------------------------------------------------------------


def interleaved(h: HistoryBuilder, with_leaders: bool) -> list[dict[str, Any]]:
    """The history's rows at even indices; with leader rows between them at odd ones (a change after every
    third event, cycling through brokers and leaderless), so both versions share every original index."""
    rows: list[dict[str, Any]] = []
    for n, row in enumerate(h.rows):
        rows.append({**row, "index": 2 * n})
        if with_leaders and n % 3 == 0:
            broker = n % 4 - 1
            rows.append(
                event_row(
                    h.run_id, 2 * n + 1, row["time_ns"] + 1, row["wall_time"] + 0.001,
                    Event(LEADER_WATCH_PROCESS, INFO, LEADER, topic=TOPIC, partition=n % 3, key=str(broker),
                          detail={"leader": broker, "isr": [b for b in (1, 2, 3) if b != broker]}),
                )
            )  # fmt: skip
    return rows


def frame(spark: SparkSession, rows: list[dict[str, Any]]) -> DataFrame:
    return spark.createDataFrame([tuple(row[c] for c in COLUMNS) for row in rows], schema=HISTORY_STRUCT)


#: Histories where a stray row could count: losses, read order (leader rows are `info` rows, as a
#: consumer's errors are), reads later truncated, and nemesis faults.
CASES: dict[str, Callable[[], Scenario]] = {
    **{name: SCENARIOS[name] for name in ("loss", "poll-order", "truncated-read")},
    "faults": lambda: Scenario(lossy_history(), None, {}),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_leader_rows_change_no_check(name: str, spark: SparkSession) -> None:
    scenario = CASES[name]()
    replicas = scenario.replicas.frame(spark) if scenario.replicas is not None else None
    plain = frame(spark, interleaved(scenario.history, with_leaders=False))
    watched = frame(spark, interleaved(scenario.history, with_leaders=True))
    assert watched.count() > plain.count()
    assert find_anomalies(watched, replicas=replicas) == find_anomalies(plain, replicas=replicas)
    assert summarize(watched) == summarize(plain)
    assert fault_intervals(nemesis_events(watched)) == fault_intervals(nemesis_events(plain))
