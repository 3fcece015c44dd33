"""The history's rows as written, and reading a staged history: only the torn last line of a crashed run is
skipped; any other bad line is an error naming the file and the line, never a silently dropped event."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from kchaos.model.events import EVENT_FIELDS, Event
from kchaos.model.history import FLUSH_INTERVAL_S, HistoryWriter
from kchaos.model.history_files import (
    HistoryCorrupt,
    history_path,
    read_ndjson,
    read_staging,
    stage_to_parquet,
)
from kchaos.model.history_schema import COLUMNS, SCHEMA, event_row
from kchaos.model.history_vet import vet_history
from kchaos.model.run_files import RunDir
from kchaos.model.waiting import wait_until


def _staged(tmp_path: Path, events: int = 3) -> Path:
    """A run directory whose history was recorded by a real writer and never finished (a crashed run,
    after the writer last handed its rows to the OS)."""
    writer = HistoryWriter(RunDir(tmp_path), "test-run")
    for n in range(events):
        writer.record("producer-0", "invoke", "send", topic="t", partition=0, key=str(n), value=f"v{n}")
    writer.flush()
    return RunDir(tmp_path).history_staging


def test_a_row_is_staged_in_the_history_format(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Byte for byte: the schema's columns in order as compact JSON, `detail` as JSON text, keys sorted."""
    monkeypatch.setattr("kchaos.model.history.time.monotonic_ns", lambda: 5)
    monkeypatch.setattr("kchaos.model.history.time.time", lambda: 1.5)
    writer = HistoryWriter(RunDir(tmp_path), "r")
    writer.record(
        "nemesis", "info", "kill", key="kill#1", value="start", detail={"nodes": [1], "kind": "crash"}
    )
    writer.flush()
    assert RunDir(tmp_path).history_staging.read_text(encoding="utf-8") == (
        '{"run_id":"r","index":0,"time_ns":5,"wall_time":1.5,"process":"nemesis","type":"info","f":"kill",'
        '"topic":null,"partition":null,"offset":null,"key":"kill#1","value":"start","error":null,'
        '"detail":"{\\"kind\\": \\"crash\\", \\"nodes\\": [1]}"}\n'
    )


@pytest.mark.parametrize(
    "event",
    [
        Event("producer-0", "invoke", "send", topic="t", partition=2, value="producer-0-17"),
        Event("producer-0", "ok", "send", topic="t", partition=0, offset=2**62, key="k", value="v"),
        Event("p", "info", "send", error='quote " and \\ and \n', value="\u00e9\u2603\U0001f600\x00\x1f"),
        Event("nemesis", "info", "kill", key="kill#1", value="", detail={"nodes": [1], "é": None, "b": True}),
        Event("consumer-0", "ok", "poll", partition=-1, offset=0, detail={}),
    ],
)  # fmt: skip
@pytest.mark.parametrize("wall_time", [0.0, 1.5, 1795517979.0041034, 1e-300])
def test_a_line_is_the_row_as_json_dumps_spells_it(
    event: Event, wall_time: float, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The writer's fast spelling and the row's one definition cannot drift apart."""
    monkeypatch.setattr("kchaos.model.history.time.monotonic_ns", lambda: 123456789)
    monkeypatch.setattr("kchaos.model.history.time.time", lambda: wall_time)
    writer = HistoryWriter(RunDir(tmp_path), "run-é")
    writer.write(event)
    writer.flush()
    row = event_row("run-é", 0, 123456789, wall_time, event)
    assert RunDir(tmp_path).history_staging.read_text(encoding="utf-8") == (
        json.dumps(row, separators=(",", ":")) + "\n"
    )


def test_what_cannot_be_spelled_fails_in_the_thread_that_records_it(tmp_path: Path) -> None:
    writer = HistoryWriter(RunDir(tmp_path), "r")
    with pytest.raises(TypeError):
        writer.record("nemesis", "info", "kill", detail={"nodes": {1, 2}})
    with pytest.raises(TypeError):
        writer.record("producer-0", "ok", "send", offset=1.5)  # type: ignore[arg-type]
    writer.record("producer-0", "invoke", "send", value="v0")
    assert pq.read_table(writer.finish())["index"].to_pylist() == [0]


def test_rows_reach_the_os_without_a_flush_within_the_interval(tmp_path: Path) -> None:
    """What a harness killed outright leaves: every row recorded longer ago than the flush interval."""
    writer = HistoryWriter(RunDir(tmp_path), "r")
    writer.record("producer-0", "invoke", "send", topic="t", partition=0, value="v0")
    staging = RunDir(tmp_path).history_staging
    wait_until(lambda: staging.read_text(encoding="utf-8").count("\n") == 1, 20 * FLUSH_INTERVAL_S, "a flush")
    writer.finish()


def test_threads_recording_at_once_leave_the_rows_in_index_order_with_clocks_in_step(tmp_path: Path) -> None:
    writer = HistoryWriter(RunDir(tmp_path), "r")

    def record(process: str) -> None:
        for n in range(2000):
            writer.record(process, "invoke", "send", topic="t", partition=0, value=f"{process}-{n}")

    threads = [threading.Thread(target=record, args=(f"producer-{i}",)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    table = pq.read_table(writer.finish())
    assert table["index"].to_pylist() == list(range(8000))
    clocks = table["time_ns"].to_pylist()
    assert clocks == sorted(clocks)
    assert len(set(table["value"].to_pylist())) == 8000


def test_the_columns_after_the_stamp_are_the_event_fields() -> None:
    assert COLUMNS[:4] == ("run_id", "index", "time_ns", "wall_time")
    assert COLUMNS[4:] == EVENT_FIELDS


def _lines(staging: Path) -> list[str]:
    return staging.read_text(encoding="utf-8").splitlines(keepends=True)


def test_every_line_of_an_intact_history_is_read(tmp_path: Path) -> None:
    staging = _staged(tmp_path)
    assert [row["value"] for row in read_ndjson(staging)] == ["v0", "v1", "v2"]


def test_a_torn_last_line_is_skipped(tmp_path: Path) -> None:
    staging = _staged(tmp_path)
    lines = _lines(staging)
    staging.write_text("".join(lines[:-1]) + lines[-1][:20], encoding="utf-8")  # died mid-write
    assert [row["value"] for row in read_ndjson(staging)] == ["v0", "v1"]
    assert pq.read_table(stage_to_parquet(RunDir(tmp_path))).num_rows == 2


def test_blank_lines_after_a_torn_line_still_leave_it_last(tmp_path: Path) -> None:
    staging = _staged(tmp_path)
    lines = _lines(staging)
    staging.write_text("".join(lines[:-1]) + lines[-1][:20] + "\n\n  \n", encoding="utf-8")
    assert [row["value"] for row in read_ndjson(staging)] == ["v0", "v1"]


def test_a_bad_line_followed_by_others_names_the_file_and_the_line(tmp_path: Path) -> None:
    staging = _staged(tmp_path, events=4)
    lines = _lines(staging)
    lines[1] = lines[1][:25] + "\n"
    staging.write_text("".join(lines), encoding="utf-8")
    with pytest.raises(HistoryCorrupt) as error:
        list(read_ndjson(staging))
    assert error.value.path == staging
    assert error.value.line == 2
    message = str(error.value)
    assert f"{staging} line 2: not valid JSON (" in message
    assert "and not the last line" in message
    assert "cannot be checked" in message
    assert isinstance(error.value, ValueError)


def test_a_bad_line_fails_the_conversion_and_leaves_no_parquet(tmp_path: Path) -> None:
    staging = _staged(tmp_path)
    lines = _lines(staging)
    lines[0] = "{not json\n"
    staging.write_text("".join(lines), encoding="utf-8")
    with pytest.raises(HistoryCorrupt, match="line 1"):
        history_path(tmp_path)
    assert not RunDir(tmp_path).history_parquet.exists()


@pytest.mark.parametrize("line", ["42", "[1, 2]", '"text"', "null"])
def test_a_json_value_that_is_not_a_row_is_an_error_even_last(tmp_path: Path, line: str) -> None:
    staging = _staged(tmp_path)
    with staging.open("a", encoding="utf-8") as fh:
        fh.write(line + "\n")
    with pytest.raises(HistoryCorrupt, match=r"line 4: a JSON \w+, not a row"):
        list(read_ndjson(staging))


def test_bytes_that_are_not_utf8_are_an_error(tmp_path: Path) -> None:
    staging = _staged(tmp_path)
    row = json.dumps({"run_id": "test-run", "index": 3}).encode()
    with staging.open("ab") as fh:
        fh.write(row.replace(b"test-run", b"test-\xffrun") + b"\n")
    with pytest.raises(HistoryCorrupt, match="line 4: not UTF-8"):
        list(read_ndjson(staging))


def test_a_zero_filled_tail_counts_as_torn(tmp_path: Path) -> None:
    """A machine that crashed can leave the end of the file as zero bytes."""
    staging = _staged(tmp_path)
    with staging.open("ab") as fh:
        fh.write(b"\x00" * 5)
    assert [row["value"] for row in read_ndjson(staging)] == ["v0", "v1", "v2"]


def _row_by_row(staging: Path) -> pa.Table:
    """The table as the rows `read_ndjson` yields make it: what Arrow's reader must agree with."""
    rows = list(read_ndjson(staging))
    return pa.Table.from_pydict({name: [row.get(name) for row in rows] for name in COLUMNS}, schema=SCHEMA)


def test_arrows_reader_makes_the_same_table_as_the_rows(tmp_path: Path) -> None:
    writer = HistoryWriter(RunDir(tmp_path), "test-run")
    writer.record("producer-0", "invoke", "send", topic="t", partition=2, key="k", value='v\u00e9\n"x"')
    writer.record("producer-0", "ok", "send", topic="t", partition=2, offset=2**40, key="k", value="v")
    writer.record(
        "producer-1", "info", "send", topic="t", partition=1, error="KafkaError{code=_MSG_TIMED_OUT}"
    )
    writer.record("nemesis", "info", "kill", key="kill#1", value="start", detail={"nodes": [1], "é": None})
    writer.flush()
    staging = RunDir(tmp_path).history_staging
    assert read_staging(staging).equals(_row_by_row(staging))
    with staging.open("a", encoding="utf-8") as fh:
        fh.write('{"run_id":"test-run","index":4,"ti')  # torn
    table = read_staging(staging)
    assert table.num_rows == 4 and table.equals(_row_by_row(staging))


def test_a_line_arrow_refuses_is_named_as_the_rows_would_name_it(tmp_path: Path) -> None:
    staging = _staged(tmp_path, events=3)
    lines = _lines(staging)
    staging.write_text(lines[0] + "{not json\n" + "".join(lines[1:]), encoding="utf-8")
    with pytest.raises(HistoryCorrupt, match="line 2: not valid JSON"):
        read_staging(staging)


@pytest.mark.parametrize(
    "last", [b"42\n", b'{"run_id": "test-\xffrun", "index": 3}\n', b"\x00" * 5, b"\n\n", b""]
)
def test_the_last_line_is_judged_as_the_rows_judge_it(tmp_path: Path, last: bytes) -> None:
    staging = _staged(tmp_path)
    with staging.open("ab") as fh:
        fh.write(last)
    try:
        expected = _row_by_row(staging)
    except HistoryCorrupt as exc:
        with pytest.raises(HistoryCorrupt, match=f"line {exc.line}"):
            read_staging(staging)
    else:
        assert read_staging(staging).equals(expected)


def test_an_empty_staging_file_is_an_empty_history(tmp_path: Path) -> None:
    staging = RunDir(tmp_path).history_staging
    staging.parent.mkdir(parents=True)
    staging.write_bytes(b"")
    assert read_staging(staging).num_rows == 0


@pytest.mark.parametrize(
    ("field", "value", "problem"),
    [
        ("offset", "7", 'offset "7" is not a whole number'),
        ("index", 1.5, "index 1.5 is not a whole number"),  # Arrow alone would make it 1
        ("index", True, "index true is not a whole number"),
        ("partition", [1], "partition [1] is not a whole number"),
        ("partition", 2**40, "partition 1099511627776 does not fit in a 32-bit whole number"),
        ("time_ns", 2**64, "time_ns 18446744073709551616 does not fit in a 64-bit whole number"),
        ("process", 3, "process 3 is not a string"),
        ("wall_time", "now", 'wall_time "now" is not a number'),
        ("time_ns", -5, "time_ns -5 is negative; a monotonic clock counts from 0"),
        ("wall_time", 1e300, "wall_time 1e+300 is no time a run can have"),
        ("wall_time", -1.0, "wall_time -1.0 is no time a run can have"),
    ],
)
def test_a_value_that_is_not_its_columns_is_refused_naming_the_line(
    tmp_path: Path, field: str, value: object, problem: str
) -> None:
    staging = _staged(tmp_path)
    lines = _lines(staging)
    row = json.loads(lines[1])
    row[field] = value
    lines[1] = json.dumps(row) + "\n"
    staging.write_text("".join(lines), encoding="utf-8")
    with pytest.raises(HistoryCorrupt) as error:
        history_path(tmp_path)
    assert f"{staging} line 2: {problem}" in str(error.value)
    assert not RunDir(tmp_path).history_parquet.exists()


def test_a_repeated_index_is_refused_in_staging_and_in_parquet(tmp_path: Path) -> None:
    """Rows spliced in from elsewhere (or copied) repeat an index: the order of events is not the run's."""
    staging = _staged(tmp_path, events=4)
    lines = _lines(staging)
    row = json.loads(lines[3])
    row["index"] = 1
    lines[3] = json.dumps(row) + "\n"
    staging.write_text("".join(lines), encoding="utf-8")
    with pytest.raises(HistoryCorrupt, match=r"line 4: index 1 repeats the index of the row 2 rows earlier"):
        history_path(tmp_path)

    table = pq.read_table(_written_parquet(tmp_path / "other"))
    indexes = table.column("index").to_pylist()
    indexes[2] = indexes[0]
    parquet = RunDir(tmp_path / "other").history_parquet
    pq.write_table(table.set_column(1, "index", pa.array(indexes, pa.int64())), parquet)
    with pytest.raises(HistoryCorrupt, match=r"row 3: index 0 repeats the index of the row 2 rows earlier"):
        vet_history(tmp_path / "other")


def _written_parquet(run_dir: Path) -> Path:
    writer = HistoryWriter(RunDir(run_dir), "test-run")
    for n in range(3):
        writer.record("producer-0", "invoke", "send", topic="t", partition=0, key=str(n), value=f"v{n}")
    return writer.finish()
