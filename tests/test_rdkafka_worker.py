"""The librdkafka worker process without a cluster: the lines it prints are the Java worker's protocol, each
stamped with its monotonic clock, and the shared recorder turns them into the rows the in-process
producer writes; its arguments are the in-process producer's settings; `--client librdkafka-process` is a
process a fault can target and is refused for the workloads it does not drive yet."""

from __future__ import annotations

import io
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pandas as pd
import pytest

from kchaos.compose.rdkafka.worker import (
    UNPACED_BATCH,
    Lines,
    Schedule,
    delivery_line,
    line,
    split_arguments,
)
from kchaos.harness.client_container import LINE_ENDS
from kchaos.model.config import ConfigError, load_config
from kchaos.model.events import FAIL, INFO, INVOKE, MESSAGE_TIMED_OUT, OK, SEND
from kchaos.model.history import HistoryWriter
from kchaos.model.run_files import RunDir
from kchaos.workloads.in_harness.producer import producer_settings
from kchaos.workloads.outcome import named_send_outcome
from kchaos.workloads.processes.rdkafka.producer import rdkafka_arguments
from kchaos.workloads.processes.worker_recorder import SendRecorder, WorkerRecorder


class _Error:
    """What a librdkafka delivery report's error answers (KafkaError's name() and str())."""

    def __init__(self, name: str, text: str) -> None:
        self._name, self._text = name, text

    def name(self) -> str:
        return self._name

    def str(self) -> str:
        return self._text


def _message(value: str, partition: int, offset: int) -> Any:
    return SimpleNamespace(value=lambda: value.encode(), partition=lambda: partition, offset=lambda: offset)


def test_a_line_is_its_kind_the_workers_monotonic_clock_and_its_fields() -> None:
    before = time.monotonic_ns()
    said = line("ok", "producer-0-7", "1", "42")
    after = time.monotonic_ns()
    kind, stamp, *fields = said.split("\t")
    assert kind == "ok" and fields == ["producer-0-7", "1", "42"]
    assert before <= int(stamp) <= after


def test_a_tab_newline_or_record_separator_in_an_error_message_cannot_break_the_line() -> None:
    said = line("error", "p-0", "0", "_MSG_TIMED_OUT", "Local:\tMessage\ntimed\x1eout\r")
    assert "\x1e" not in said
    assert "\n" not in said and said.split("\t")[2:] == [
        "p-0",
        "0",
        "_MSG_TIMED_OUT",
        "Local: Message timed out",
    ]


def test_a_flush_ends_each_line_with_a_record_separator_and_the_write_with_one_newline() -> None:
    """One newline per write, not per line: the engine's log stream pays per newline."""
    out = io.BytesIO()
    lines = Lines(out)  # type: ignore[arg-type]
    lines.add("invoke", "p-0", "0")
    lines.add("invoke", "p-1", "1")
    lines.flush()
    written = out.getvalue()
    assert written.count(b"\n") == 1 and written.endswith(b"\n") and written.count(b"\x1e") == 1
    assert [said.split(b"\t")[2] for said in LINE_ENDS.split(written) if said] == [b"p-0", b"p-1"]


def test_its_arguments_are_split_into_its_own_and_the_clients() -> None:
    worker, settings = split_arguments(["kchaos.process=producer-0", "acks=all", "client.id=a=b"])
    assert worker == {"kchaos.process": "producer-0"}
    assert settings == {"acks": "all", "client.id": "a=b"}
    with pytest.raises(ValueError, match="not name=value"):
        split_arguments(["acks"])


def test_the_schedule_makes_due_what_time_has_made_due_and_unpaced_a_batch() -> None:
    assert Schedule(0).due() == UNPACED_BATCH and Schedule(0).wait_s() == 0.0
    paced = Schedule(1_000_000)  # 1,000/s
    paced.next_at -= 5_000_000  # 5 ms behind
    assert 5 <= paced.due() <= 7
    assert paced.due() == 0 and paced.wait_s() > 0
    stalled = Schedule(1_000_000)
    stalled.next_at -= 10**9  # a second behind: carries on from now rather than bursting a thousand sends
    assert stalled.due() == 1


def _worker_session() -> list[str]:
    """What a worker prints for four sends: two acknowledged or failed by delivery reports, one refused."""
    out = io.BytesIO()
    lines = Lines(io.BufferedWriter(out))  # type: ignore[arg-type]
    outstanding = [3]
    delivered = delivery_line(lines, outstanding)
    lines.add("started", "2.16.0")
    lines.add_invoked([(f"producer-0-{n}", n % 3) for n in range(4)])
    lines.flush()
    delivered(None, _message("producer-0-0", 0, 17))
    delivered(_Error("_MSG_TIMED_OUT", "Local: Message timed out"), _message("producer-0-1", 1, -1001))
    delivered(_Error("_UNKNOWN_PARTITION", "Local: Unknown partition"), _message("producer-0-2", 2, -1001))
    lines.add("refused", "producer-0-3", "0", "_QUEUE_FULL", "the client's queue stayed full")
    lines.add("stopped", "4", str(outstanding[0]))
    lines.flush()
    assert outstanding == [0]
    return out.getvalue().decode().splitlines()


def test_the_workers_own_invoke_and_ok_lines_are_spelled_as_every_line_is() -> None:
    out = io.BytesIO()
    lines = Lines(io.BufferedWriter(out))  # type: ignore[arg-type]
    lines.add_invoked([("producer-0-7", 1), ("producer-0-8", 2)])
    lines.add_acknowledged("producer-0-7", 1, 42)
    lines.add_acknowledged("producer-0-8", 2, None)
    lines.flush()
    printed = [said.split("\t") for said in out.getvalue().decode().splitlines()]
    expected = [
        line("invoke", "producer-0-7", "1"),
        line("invoke", "producer-0-8", "2"),
        line("ok", "producer-0-7", "1", "42"),
        line("ok", "producer-0-8", "2", ""),
    ]
    assert [[kind, *fields] for kind, _, *fields in printed] == [
        [kind, *fields] for kind, _, *fields in (said.split("\t") for said in expected)
    ]
    assert printed[0][1] == printed[1][1]  # printed together: one reading of the clock
    assert int(printed[0][1]) <= int(printed[2][1]) <= int(printed[3][1])


def test_the_workers_lines_become_the_rows_the_in_process_producer_writes(tmp_path: Path) -> None:
    history = HistoryWriter(RunDir(tmp_path), "rdkafka")
    recorder = SendRecorder("producer-0", "t", history, judge=named_send_outcome)
    printed = _worker_session()
    recorder.take_all(printed)
    assert recorder.version == "2.16.0" and recorder.started.is_set() and not recorder.pending
    rows = pd.read_parquet(history.finish())
    rows = rows[rows["f"] == SEND].reset_index(drop=True)
    assert list(rows["type"]) == [INVOKE] * 4 + [OK, INFO, FAIL, FAIL]
    acked = rows.iloc[4]
    assert (acked["partition"], acked["offset"], acked["value"]) == (0, 17, "producer-0-0")
    # librdkafka's words, as the in-process producer records them (`error_text`): the oracle's timeout rule
    # reads the same prefix.
    assert rows.iloc[5]["error"] == f"{MESSAGE_TIMED_OUT}: Local: Message timed out"
    # As `outcome_of` judges it in the harness: a partition unknown to the client never left it.
    assert rows.iloc[6]["error"] == "_UNKNOWN_PARTITION: Local: Unknown partition"
    assert rows.iloc[7]["error"] == "_QUEUE_FULL: the client's queue stayed full"
    # Each row stamped when the worker printed its line, not when the line reached the harness.
    stamps = [int(said.split("\t")[1]) for said in printed if said.startswith(("invoke", "ok", "error"))]
    assert sorted(rows["time_ns"]) == sorted([*stamps, int(printed[-2].split("\t")[1])])


def test_the_workers_settings_are_the_in_process_producers() -> None:
    config = load_config(client="librdkafka-process", acks="all")
    settings = producer_settings(config, "kafka-1:19092", "producer-0")
    arguments = dict(arg.split("=", 1) for arg in rdkafka_arguments(settings))
    assert "logger" not in arguments
    assert arguments["enable.idempotence"] == "true" and arguments["acks"] == "all"
    assert arguments["message.timeout.ms"] == str(config.message_timeout_ms)
    assert arguments["bootstrap.servers"] == "kafka-1:19092" and arguments["client.id"] == "producer-0"
    assert set(arguments) == set(settings) - {"logger"}


def test_a_librdkafka_process_is_a_fault_target_and_a_thread_is_not() -> None:
    assert load_config(client="librdkafka-process", nemesis=["pause:target=producer-1"]).client == (
        "librdkafka-process"
    )
    with pytest.raises(ConfigError, match="threads of the harness"):
        load_config(client="librdkafka", nemesis=["pause:target=producer-1"])


@pytest.mark.parametrize("workload", ["sends", "txn", "group", "eos"])
def test_librdkafka_processes_drive_every_workload(workload: str) -> None:
    assert load_config(client="librdkafka-process", workload=workload).client == "librdkafka-process"


def test_a_send_acknowledged_without_an_offset_is_an_ok_row_without_one(tmp_path: Path) -> None:
    """librdkafka acknowledges some retried sends with no offset (None); the in-process producer records
    them `ok` without one, and so must the process's recorder, or the acknowledgement would be lost."""
    out = io.BytesIO()
    lines = Lines(io.BufferedWriter(out))  # type: ignore[arg-type]
    outstanding = [1]
    lines.add("invoke", "producer-0-0", "1")
    unnumbered = SimpleNamespace(value=lambda: b"producer-0-0", partition=lambda: 1, offset=lambda: None)
    delivery_line(lines, outstanding)(None, unnumbered)
    lines.flush()
    history = HistoryWriter(RunDir(tmp_path), "rdkafka")
    recorder = WorkerRecorder("producer-0", "t", history, judge=named_send_outcome)
    for said in out.getvalue().decode().splitlines():
        recorder.take(said)
    rows = pd.read_parquet(history.finish())
    acked = rows[(rows["f"] == SEND) & (rows["type"] == OK)]
    assert list(acked["value"]) == ["producer-0-0"] and acked["offset"].isna().all()
    assert not recorder.pending
