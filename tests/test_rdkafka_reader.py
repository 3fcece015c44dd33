"""The librdkafka reader process (`consumer-N` of `--client librdkafka-process`) without a cluster: its
arguments, that what it prints becomes exactly the rows the in-process reader writes for the same events,
that it gets the in-process reader's settings, that a reader that died is started again from the positions
it recorded, and that `hold()` returns once every reader said it held, sending again a signal that was
lost. The real-cluster counterpart is tests/cluster/test_rdkafka_readers.py."""

from __future__ import annotations

import io
import json
import queue
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pandas as pd
import pytest
from confluent_kafka import KafkaError, Message

from kchaos.compose.rdkafka.reader_worker import ReaderLines, parse_positions, reader_arguments
from kchaos.compose.rdkafka.worker import Lines, mode_module
from kchaos.harness.cluster import KafkaCluster
from kchaos.model.config import load_config
from kchaos.model.events import CONSUMER_RESTART, HOLD, INFO, RELEASE
from kchaos.model.history import HistoryWriter
from kchaos.model.run_files import RunDir
from kchaos.model.waiting import WaitTimeout
from kchaos.workloads.in_harness.consumer import (
    ConsumerProcess,
    consumer_settings,
    reader_group,
    record_message,
)
from kchaos.workloads.processes import consumer_processes
from kchaos.workloads.processes.rdkafka.reader import RdkafkaReaderWorkload
from kchaos.workloads.processes.reader_processes import ReaderRecorder

#: The columns a row's content is in (not when it was written).
CONTENT = ["process", "type", "f", "topic", "partition", "offset", "key", "value", "error", "detail"]


def test_a_readers_arguments_are_its_topic_partitions_start_and_hold() -> None:
    assert mode_module("reader") == "kchaos.compose.rdkafka.reader_worker"
    assert parse_positions("") == {} and parse_positions("0=12,2=7") == {0: 12, 2: 7}
    args = reader_arguments({"kchaos.topic": "t", "kchaos.partitions": "3", "kchaos.from": "2=7"})
    assert (args.topic, args.partitions, args.positions, args.held) == ("t", 3, {2: 7}, False)
    assert reader_arguments({"kchaos.topic": "t", "kchaos.partitions": "1", "kchaos.hold": "true"}).held
    for bad in (
        {"kchaos.from": "0:12"},
        {"kchaos.from": "3=1"},
        {"kchaos.from": "0=-1"},
        {"kchaos.hold": "yes"},
    ):
        with pytest.raises(ValueError):
            reader_arguments({"kchaos.topic": "t", "kchaos.partitions": "3", **bad})
    with pytest.raises(KeyError):
        reader_arguments({"kchaos.partitions": "3"})


def _rows(history: HistoryWriter) -> pd.DataFrame:
    return pd.read_parquet(history.finish())[CONTENT]


def test_what_a_reader_prints_becomes_the_rows_the_in_process_reader_writes(tmp_path: Path) -> None:
    """The same events, met by the in-process reader (its own assign, record and hold code) and by the
    process (printed, then recorded): the same rows, field for field."""
    settings = consumer_settings("127.0.0.1:1", "consumer-0", "g", "read_uncommitted")
    threads = HistoryWriter(RunDir(tmp_path / "threads"), "r")
    thread = ConsumerProcess("consumer-0", settings, "t", 3, threads, positions={1: 5})
    thread._connect()  # assign needs no broker
    messages = [
        Message(topic="t", partition=1, offset=5, key=b"producer-0-1", value=b"producer-0-1"),
        Message(topic="t", partition=0, offset=0, key=None, value=b"v"),
        Message(topic="t", partition=2, error=KafkaError(KafkaError._PARTITION_EOF)),  # no row
        Message(topic="t", partition=2, error=KafkaError(KafkaError.OFFSET_OUT_OF_RANGE)),
    ]
    for message in messages:
        record_message(threads, "consumer-0", "t", message)
    thread.reading.set()  # held, then let go at once
    thread._hold(stop=SimpleNamespace(is_set=lambda: False))  # type: ignore[arg-type]
    assert thread.consumer is not None
    thread.consumer.close()

    out = io.BytesIO()
    reader = ReaderLines(Lines(cast(io.BufferedWriter, out)))
    reader.lines.add("started", "2.16.1")
    reader.assigned(3, {1: 5})
    for message in messages:
        error = message.error()
        if error is None:
            reader.handed(message.partition(), message.offset(), message.key(), message.value())
        else:
            reader.poll_error(error.name(), error.str(), message.partition())
    reader.steered(True)
    reader.steered(False)
    reader.lines.add("stopped", str(reader.polled))
    reader.lines.flush()
    processes = HistoryWriter(RunDir(tmp_path / "processes"), "r")
    recorder = ReaderRecorder("consumer-0", "t", processes, isolation="read_uncommitted")
    for line in out.getvalue().decode().splitlines():
        recorder.take(line)
    assert recorder.started.is_set() and recorder.version == "2.16.1"
    assert recorder.positions == {1: 6, 0: 1} and not recorder.held.is_set()

    expected, got = _rows(threads), _rows(processes)
    assert list(got["f"]) == ["assign", "poll", "poll", "poll", "hold", "release"]
    assert json.loads(got["detail"][0]) == {
        "partitions": [0, 1, 2], "from": {"0": None, "1": 5, "2": None}, "isolation": "read_uncommitted"
    }  # fmt: skip
    pd.testing.assert_frame_equal(got, expected)


def _workload(tmp_path: Path, **values: Any) -> RdkafkaReaderWorkload:
    config = load_config(run_id="r", client="librdkafka-process", **values)
    cluster = SimpleNamespace(
        client_bootstrap="kafka-1:19092", run_id="r", name_prefix="kchaos-r", client_network="kchaos-r-net"
    )
    return RdkafkaReaderWorkload(
        config, cast(KafkaCluster, cluster), HistoryWriter(RunDir(tmp_path), "r"), "kchaos/rdkafka-client:x"
    )


def _arguments(command: list[str]) -> dict[str, str]:
    return dict(arg.split("=", 1) for arg in command)


def test_a_reader_process_is_the_reader_mode_with_the_in_process_readers_settings(tmp_path: Path) -> None:
    workload = _workload(tmp_path, workload="txn", consumers=2)
    assert workload.names == ["consumer-0", "consumer-1"] and workload.main_class is None
    args = _arguments(workload._command("consumer-1", workload.config.reader_isolation(1)))
    expected = consumer_settings(
        "kafka-1:19092", "consumer-1", reader_group("r", "consumer-1"), "read_uncommitted"
    )
    assert {k: v for k, v in args.items() if not k.startswith("kchaos.")} == {
        k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in expected.items() if k != "logger"
    }
    assert args["kchaos.mode"] == "reader" and args["kchaos.topic"] == workload.config.topic
    assert args["kchaos.partitions"] == str(workload.config.partitions)
    assert (args["kchaos.from"], args["kchaos.hold"]) == ("", "false")


class ScriptedReader:
    """A reader's container: its lines are what the test (or its signal handling) says; its first `lose`
    signals are lost, as by a process still starting."""

    def __init__(self, name: str, command: list[str], lose: int = 0) -> None:
        self.name = name
        self.command = command
        self.said: queue.Queue[str | None] = queue.Queue()
        self.signals: list[str] = []
        self.lose = lose
        self.code = 0
        self.removed = False
        self.docker_state = "running"
        self.say("started", "2.16.1")
        args = _arguments(command)
        self.say("assign", "0,1", args["kchaos.from"])
        if args["kchaos.hold"] == "true":
            self.say(HOLD)

    def say(self, kind: str, *fields: str) -> None:
        self.said.put("\t".join((kind, str(time.monotonic_ns()), *fields)))

    def batches(self) -> Iterator[list[str]]:
        while (line := self.said.get()) is not None:
            yield [line]

    def state(self) -> str:
        return self.docker_state

    def signal(self, name: str) -> None:
        self.signals.append(name)
        if self.lose:
            self.lose -= 1
            return
        self.say(HOLD if name == "SIGUSR1" else RELEASE)

    def end(self, code: int) -> None:
        self.code = code
        self.said.put(None)

    def terminate(self) -> None:
        self.end(0)

    def kill(self) -> None:
        self.end(137)

    def close(self) -> None:
        self.said.put(None)

    def exit_code(self, timeout: float) -> int:
        return self.code

    def stderr(self) -> bytes:
        return b"its last words"

    def remove(self) -> None:
        self.removed = True


@pytest.fixture
def scripted(monkeypatch: pytest.MonkeyPatch) -> list[ScriptedReader]:
    """Every reader container started, in order; consumer-1's first signal is lost."""
    started: list[ScriptedReader] = []

    def start_client(
        cluster: object, image: str, name: str, command: list[str], main: str | None = None
    ) -> ScriptedReader:
        started.append(ScriptedReader(name, command, lose=1 if len(started) == 1 else 0))
        return started[-1]

    monkeypatch.setattr(consumer_processes, "start_client", start_client)
    return started


def test_hold_returns_once_every_reader_said_it_held_and_a_lost_signal_is_sent_again(
    tmp_path: Path, scripted: list[ScriptedReader]
) -> None:
    workload = _workload(tmp_path, consumers=2)
    workload.start()
    try:
        began = time.monotonic()
        workload.hold(timeout=10)
        assert time.monotonic() - began >= 0.9  # consumer-1's first SIGUSR1 was lost: sent again a second on
        assert [r.signals for r in scripted] == [["SIGUSR1"], ["SIGUSR1", "SIGUSR1"]]
        assert all(r.held.is_set() for r in workload.recorders.values())
        workload.release()
        deadline = time.monotonic() + 10
        while any(r.held.is_set() for r in workload.recorders.values()) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not any(r.held.is_set() for r in workload.recorders.values())
    finally:
        workload.stop()
    rows = pd.read_parquet(workload.history.finish())
    assert sorted(rows.loc[rows["f"] == HOLD, "process"]) == ["consumer-0", "consumer-1"]
    assert sorted(rows.loc[rows["f"] == RELEASE, "process"]) == ["consumer-0", "consumer-1"]
    assert set(rows.loc[rows["f"].isin([HOLD, RELEASE]), "type"]) == {INFO}
    assert all(r.removed for r in scripted)


def test_a_reader_that_died_is_restarted_from_the_positions_it_recorded_and_held_if_the_readers_are(
    tmp_path: Path, scripted: list[ScriptedReader]
) -> None:
    workload = _workload(tmp_path, consumers=1)
    workload.start()
    try:
        first = scripted[0]
        first.say("poll", "0", "4", "=producer-0-8", "=producer-0-8")
        first.say("poll", "1", "9", "=producer-0-19", "=producer-0-19")
        workload.hold(timeout=10)
        first.kill()  # SIGKILL by the nemesis
        deadline = time.monotonic() + 10
        while len(scripted) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(scripted) == 2, "the dead reader was not started again"
        again = _arguments(scripted[1].command)
        assert (again["kchaos.from"], again["kchaos.hold"]) == ("0=5,1=10", "true")
        assert first.removed and (workload.history.files.logs / "consumer-0.0.log").exists()
        workload.hold(timeout=10)  # the new process said it started held
    finally:
        workload.stop()
    rows = pd.read_parquet(workload.history.finish())
    restarts = rows[rows["f"] == CONSUMER_RESTART]
    assert len(restarts) == 1 and restarts["type"].iloc[0] == INFO
    assert "exit 137" in restarts["error"].iloc[0]
    assert json.loads(restarts["detail"].iloc[0]) == {"exit": 137, "from": {"0": 5, "1": 10}}
    assigns = rows[rows["f"] == "assign"]
    assert [json.loads(d)["from"] for d in assigns["detail"]] == [
        {"0": None, "1": None}, {"0": 5, "1": 10}
    ]  # fmt: skip
    assert list(rows.loc[rows["f"].isin([HOLD, CONSUMER_RESTART]), "f"]) == [HOLD, CONSUMER_RESTART, HOLD]


def test_a_reader_a_fault_froze_is_not_signalled_until_it_is_thawed(
    tmp_path: Path, scripted: list[ScriptedReader]
) -> None:
    """The engine thaws a frozen container to deliver a signal: holding the readers must not undo a
    `pause` fault, so hold waits for the thaw (and says so when it does not come)."""
    workload = _workload(tmp_path, consumers=1)
    workload.start()
    try:
        scripted[0].docker_state = "paused"
        with pytest.raises(WaitTimeout, match="every reader held"):
            workload.hold(timeout=1.5)
        assert scripted[0].signals == []
        scripted[0].docker_state = "running"  # thawed: the watcher signals it now
        workload.hold(timeout=10)
        assert scripted[0].signals == ["SIGUSR1"]
    finally:
        workload.stop()
