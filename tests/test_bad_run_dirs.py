"""A run directory the judge cannot judge is refused before Spark starts: exit 2 and one line naming the file,
the row or the field, and the fix. Before, such a directory hung `kchaos check` (a FIFO), spent Spark's
start-up to name the wrong cause (an empty history, `acks: 7`), judged a damaged history as if Kafka had
lost what the damage hid, or, with one stray time, built a timeline of a point per second since 1970 and
was killed by the kernel. Only the tests at the end start Spark."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from click.testing import Result

import kchaos.runner.run_dir_check
from kchaos.model.history_files import stage_to_parquet
from kchaos.model.run_files import RunDir
from kchaos.spark_analysis.timeline import THROUGHPUT_POINT_LIMIT, bin_seconds, binned
from tests.test_cli_errors import CONFIG, assert_harness_failure, invoke, run_dir_with_history
from tests.test_verifiable import T0, consumer_log, producer_log


def first_line(result: Result) -> str:
    return result.stderr.splitlines()[0] if result.stderr else ""


def refused(result: Result, first: str) -> None:
    """Exit 2, nothing on stdout, and the message's first line begins with `first`."""
    assert_harness_failure(result)
    assert first_line(result).startswith(first), result.stderr


def row(**fields: Any) -> str:
    good = {"run_id": "cli-test", "index": 0, "time_ns": 1, "wall_time": 1_700_000_000.0,
            "process": "producer-0", "type": "invoke", "f": "send", "topic": "kchaos", "partition": 0,
            "value": "v0"}  # fmt: skip
    good.update(fields)
    return json.dumps({name: value for name, value in good.items() if value is not ...}) + "\n"


# --- 1. a stray time: the throughput axis is bounded by its points, not the span ----------------------------


def test_a_stray_time_gives_a_bounded_throughput_axis_at_once() -> None:
    span = 1_700_000_000.0 - 1.0  # one row at wall_time 1, the others now
    started = time.monotonic()
    series = binned({0: (1, 0), int(span) // bin_seconds(span): (5, 1)}, span)
    assert time.monotonic() - started < 1.0
    assert len(series.seconds) <= THROUGHPUT_POINT_LIMIT + 1
    assert series.seconds[-1] <= span < series.seconds[-1] + series.width
    assert sum(series.acknowledged) * series.width == 6  # a rate per second over each bin: nothing lost


def test_an_ordinary_run_keeps_one_point_per_second() -> None:
    assert bin_seconds(0.0) == bin_seconds(600.5) == bin_seconds(THROUGHPUT_POINT_LIMIT - 1) == 1
    series = binned({0: (3, 0), 2: (4, 1)}, 2.5)
    assert (series.seconds, series.acknowledged, series.unacknowledged) == ([0, 1, 2], [3, 0, 4], [0, 0, 1])


# --- 2. paths that are not the files they should be ---------------------------------------------------------


def test_a_fifo_history_is_refused_without_opening_it(tmp_path: Path) -> None:
    run_dir = run_dir_with_history(tmp_path)
    staging = RunDir(run_dir).history_staging
    staging.unlink()
    os.mkfifo(staging)
    done: list[Result] = []
    worker = threading.Thread(target=lambda: done.append(invoke(["check", str(run_dir)])), daemon=True)
    worker.start()
    worker.join(30)
    if worker.is_alive():
        with staging.open("w"):  # lets the hung reader go, so the test run can end
            pass
        pytest.fail("kchaos check opened the FIFO and hung")
    refused(done[0], f"kchaos: {staging} is a FIFO, not a file; a history is a regular file")


def test_a_history_file_that_is_a_directory(tmp_path: Path) -> None:
    run_dir = run_dir_with_history(tmp_path)
    staging = RunDir(run_dir).history_staging
    staging.unlink()
    staging.mkdir()
    refused(invoke(["check", str(run_dir)]), f"kchaos: {staging} is a directory, not a file")


def test_a_history_directory_that_is_a_file(tmp_path: Path) -> None:
    run_dir = run_dir_with_history(tmp_path)
    history = RunDir(run_dir).history
    for path in history.iterdir():
        path.unlink()
    history.rmdir()
    history.write_text("", encoding="utf-8")
    refused(invoke(["check", str(run_dir)]), f"kchaos: {history} is not a directory; a run keeps its history")


def test_a_garbage_parquet_history(tmp_path: Path) -> None:
    run_dir = run_dir_with_history(tmp_path)
    files = RunDir(run_dir)
    files.history_staging.unlink()
    files.history_parquet.write_bytes(b"PAR1 this is no parquet file")
    refused(invoke(["check", str(run_dir)]), f"kchaos: {files.history_parquet} is not a Parquet file (")


def test_a_config_json_that_is_a_fifo(tmp_path: Path) -> None:
    run_dir = run_dir_with_history(tmp_path)
    config = RunDir(run_dir).config
    config.unlink()
    os.mkfifo(config)
    refused(invoke(["check", str(run_dir)]), f"kchaos: {config} is a FIFO, not a file")


def test_an_unwritable_run_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Faked: the tests may run as root, whom no mode bit stops from writing."""
    run_dir = run_dir_with_history(tmp_path)
    monkeypatch.setattr(kchaos.runner.run_dir_check, "_writable", lambda path: path != run_dir)
    refused(invoke(["check", str(run_dir)]), f"kchaos: {run_dir} is not writable, and checking writes there")


def test_run_directories_that_are_files(tmp_path: Path) -> None:
    not_dir = tmp_path / "runs"
    not_dir.write_text("", encoding="utf-8")
    result = invoke(["check", str(not_dir)])
    assert result.exit_code == 2 and f"Directory '{not_dir}' is a file." in result.stderr, result.stderr
    refused(invoke(["report", str(not_dir)]), f"kchaos: {not_dir} is not a directory; name a run directory")
    log = tmp_path / "p.out"
    log.write_text("", encoding="utf-8")
    args = [
        "import-verifiable",
        "--producer-log",
        str(log),
        "--consumer-log",
        str(log),
        "--out",
        str(not_dir),
    ]
    result = invoke(args)
    assert result.exit_code == 2 and f"Directory '{not_dir}' is a file." in result.stderr, result.stderr


# --- 3. rows outside the schema: a damaged history, named by file and line ----------------------------------

DAMAGED = [
    ('{"a": 1}\n', "has fields no history row has (a; a row has run_id, index"),
    (row(type=..., f=...), "lacks type, f (every history row has index, time_ns"),
    (row(partition=-1), "partition -1 is negative"),
    (row(type="ok", offset=-5), "offset -5 is negative"),
    (row(f="frobnicate"), "operation (f) 'frobnicate' of process 'producer-0' is none that kchaos records"),
    (row(type="maybe"), "type 'maybe' is not one of invoke, ok, fail, info"),
]


@pytest.mark.parametrize(
    ("line", "problem"), DAMAGED, ids=["no-row", "missing", "partition", "offset", "f", "type"]
)
def test_a_row_outside_the_schema_names_the_file_and_line(tmp_path: Path, line: str, problem: str) -> None:
    lines = [row(index=0), row(index=1, value="v1"), line, row(index=3, value="v3")]
    run_dir = run_dir_with_history(tmp_path, lines)
    staging = RunDir(run_dir).history_staging
    result = invoke(["check", str(run_dir)])
    refused(result, f"kchaos: {staging} line 3: {problem}")
    assert "this history is damaged and cannot be checked" in result.stderr
    assert not RunDir(run_dir).history_parquet.exists()


def test_a_damaged_staging_file_never_rewrites_the_parquet_history(tmp_path: Path) -> None:
    run_dir = run_dir_with_history(tmp_path)
    files = RunDir(run_dir)
    stage_to_parquet(files)
    before = files.history_parquet.read_bytes()
    with files.history_staging.open("a", encoding="utf-8") as fh:
        fh.write(row(partition=-3))
    newer = files.history_parquet.stat().st_mtime + 10
    os.utime(files.history_staging, (newer, newer))
    refused(invoke(["check", str(run_dir)]), f"kchaos: {files.history_staging} line ")
    assert files.history_parquet.read_bytes() == before


def test_a_bad_row_in_a_parquet_history_is_named_by_its_row(tmp_path: Path) -> None:
    run_dir = run_dir_with_history(tmp_path, [row(index=0), row(index=1, value="v1")])
    files = RunDir(run_dir)
    table = pq.read_table(stage_to_parquet(files))
    files.history_staging.unlink()
    kinds = table.column("type").to_pylist()
    pq.write_table(table.set_column(table.schema.get_field_index("type"), "type", [[kinds[0], "done"]]),
                   files.history_parquet)  # fmt: skip
    refused(
        invoke(["check", str(run_dir)]), f"kchaos: {files.history_parquet} row 2: type 'done' is not one of"
    )


# --- 4. what the judge needs, refused up front --------------------------------------------------------------


def test_an_empty_history(tmp_path: Path) -> None:
    run_dir = run_dir_with_history(tmp_path, [])
    parquet = RunDir(run_dir).history_parquet
    refused(invoke(["check", str(run_dir)]), f"kchaos: {parquet} holds no rows: the run recorded nothing")


def test_a_history_of_only_a_torn_line_is_empty(tmp_path: Path) -> None:
    run_dir = run_dir_with_history(tmp_path, ['{"run_id": "cli-test", "ind'])
    refused(invoke(["check", str(run_dir)]), f"kchaos: {RunDir(run_dir).history_parquet} holds no rows")


@pytest.mark.parametrize(
    ("config", "first"),
    [
        ({}, "config.json lacks acks, replication_factor, unclean_leader_election, idempotence; the oracle"),
        (
            {**CONFIG, "acks": 7},
            "acks=7: the oracle has rules for acks=all (also written -1) and acks=1 only",
        ),
        (
            {**CONFIG, "replication_factor": "three"},
            "replication_factor='three' in config.json: give a whole",
        ),
    ],
    ids=["empty", "acks", "replication-factor"],
)
def test_a_config_the_oracle_cannot_judge_by(tmp_path: Path, config: dict[str, Any], first: str) -> None:
    run_dir = run_dir_with_history(tmp_path)
    RunDir(run_dir).config.write_text(json.dumps(config), encoding="utf-8")
    refused(invoke(["check", str(run_dir)]), f"kchaos: {RunDir(run_dir).config}: {first}")


# --- 5. kchaos report of a results.json that is none --------------------------------------------------------


@pytest.mark.parametrize(
    ("results", "problem"),
    [
        (
            {},
            "lacks run_id, verdict, anomalies, so it is not what kchaos check writes and no report can be "
            "drawn",
        ),
        (
            {"run_id": "r", "verdict": "ok", "anomalies": []},
            "is not what kchaos check writes (anomalies is a list)",
        ),
        ([], "holds a JSON list, not the object results.json is"),
        (
            {"run_id": "r", "verdict": "ok", "anomalies": {}, "lost": {"count": "x"}},
            "lost.count must be a whole number >= 0 (or null: not checked), got 'x'",
        ),
        (
            {"run_id": "r", "verdict": "ok", "anomalies": {"lost-write": {"count": -3}}},
            "anomalies.lost-write.count must be a whole number >= 0 (or null: not checked), got -3",
        ),
        (
            {"run_id": "r", "verdict": "ok", "anomalies": {"unseen": {"count": float("nan")}}},
            "anomalies.unseen.count must be a whole number >= 0 (or null: not checked), got nan",
        ),
        (
            {"run_id": "r", "verdict": "ok", "anomalies": {"unseen": {"count": 1.5}}, "lost": {"count": 0}},
            "anomalies.unseen.count must be a whole number >= 0 (or null: not checked), got 1.5",
        ),
    ],
    ids=["empty", "anomalies-list", "list", "lost-string", "negative", "nan", "fraction"],
)
def test_report_refuses_a_results_json_that_is_none(tmp_path: Path, results: Any, problem: str) -> None:
    run_dir = run_dir_with_history(tmp_path)
    files = RunDir(run_dir)
    files.results.write_text(json.dumps(results), encoding="utf-8")
    result = invoke(["report", str(run_dir)])
    refused(result, f"kchaos: {files.results}: {problem}; rewrite it: kchaos check {run_dir}")
    assert not files.report.exists()


# --- 1 again, through Spark: the whole judge of a history with a stray time ---------------------------------


def test_check_of_a_history_with_a_stray_wall_time_finishes_with_a_bounded_report(tmp_path: Path) -> None:
    run_dir = run_dir_with_history(tmp_path)
    with RunDir(run_dir).history_staging.open("a", encoding="utf-8") as fh:
        fh.write(row(index=1000, time_ns=2, wall_time=1.0, process="leader-watch", f="leader", type="info",
                     value=None, key="1"))  # fmt: skip
    started = time.monotonic()
    result = invoke(["check", str(run_dir)])
    assert result.exit_code == 0, result.output
    assert time.monotonic() - started < 120
    assert RunDir(run_dir).report.stat().st_size < 5_000_000


def test_import_verifiable_of_a_log_stamped_1_ms_finishes(tmp_path: Path) -> None:
    p = producer_log(tmp_path / "p.out", 1, [(100, 0, 0)], start=1 - T0)  # startup_complete at 1 ms
    c = consumer_log(tmp_path / "c.out", [(200, "1.0", 0, 0)])
    out = tmp_path / "run"
    started = time.monotonic()
    result = invoke(
        ["import-verifiable", "--producer-log", str(p), "--consumer-log", str(c), "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert time.monotonic() - started < 120
    assert RunDir(out).report.stat().st_size < 5_000_000
