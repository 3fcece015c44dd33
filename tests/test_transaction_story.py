"""`kchaos explain` tells a transaction anomaly's story: the transaction's own rows, the reads of its records
with the isolation level each reader read at, what readers returned at its offsets instead, and what each
reader read next past its records (the offsets it skipped where no send was acknowledged are where the
control markers lie). Synthetic histories with planted anomalies (tests/transaction_histories.py): the story
is tested, not Kafka. In `txn-aborted-read`, consumer-0 (read_committed) returned `x1` of `t1`, whose abort
was acknowledged; consumer-1 (read_uncommitted) returned its other record `x2`, as it may. In `txn-lost`,
`t1` committed and the final read returned `a1` but not `a2`."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession

from kchaos.checkers.results import check_run
from kchaos.checkers.stories.transaction_story import Transaction, ending
from kchaos.spark_analysis.report import render_report
from kchaos.spark_analysis.report_stories import report_stories
from tests.test_explain import section, told
from tests.test_report import make_run
from tests.transaction_histories import txn_aborted_read_scenario, txn_lost_scenario


def aborted_read_run(tmp_path: Path) -> Path:
    """The aborted-read history as a run directory, with results naming `x1` as `kchaos check` does."""
    run_dir = make_run(tmp_path, txn_aborted_read_scenario().history, acks="all", partitions=2)
    example = {"id": "x1", "value": "x1", "txn": "t1", "partition": 0, "offset": 0,
               "read_process": "consumer-0", "read_index": 11, "ok_index": 6,
               "aborted_index": 10}  # fmt: skip
    results: dict[str, Any] = {
        "verdict": "violation",
        "anomalies": {"aborted-read": {"verdict": "violation", "count": 3, "examples": [example]}},
    }
    (run_dir / "results.json").write_text(json.dumps(results), encoding="utf-8")
    return run_dir


def test_an_aborted_read_is_told_as_the_transactions_rows_and_what_readers_saw(tmp_path: Path) -> None:
    lines = told(str(aborted_read_run(tmp_path)))
    assert lines[0] == "t1 (aborted-read: x1)"
    rows = [line.split("s  ", 1)[1] for line in section(lines, "the transaction's rows")[:-1]]
    assert rows == [
        "begun by producer-0 (transactional.id kchaos-0) (history row 4)",
        "x1 sent to kchaos-0 (history row 5)",
        "x1 acknowledged at kchaos-0 offset 0 (history row 6)",
        "x2 sent to kchaos-1 (history row 7)",
        "x2 acknowledged at kchaos-1 offset 0 (history row 8)",
        "abort asked (history row 9)",
        "abort ok (history row 10)",
    ]
    assert section(lines, "the transaction's rows")[-1] == "  it ended aborted (the abort was acknowledged)"
    reads = section(lines, "what readers returned of its records (2 reads)")
    assert [line.split("s  ", 1)[1] for line in reads[:2]] == [
        "** consumer-0 read x1 at kchaos-0 offset 0 (history row 11), at read_committed (history row 0)",
        "consumer-1 read x2 at kchaos-1 offset 0 (history row 12), at read_uncommitted (history row 1)",
    ]
    assert "  the final read did not return x1, x2" in lines


def test_the_markers_are_where_readers_skipped_offsets_no_send_was_acknowledged_at(tmp_path: Path) -> None:
    markers = section(told(str(aborted_read_run(tmp_path))), "where its control markers lie")
    assert markers[0] == "  kchaos-0: its last record at offset 0; the history records no control record, so:"
    assert "    consumer-0 read nothing past offset 0 (within 16 offsets)" in markers
    marker = "where no send was acknowledged: a control marker's place"
    assert f"    final-reader read offset 2 next, skipping 1, {marker}" in markers
    assert not any(line.startswith("    consumer-2") for line in markers), "consumer-2 read nothing up to it"


def test_a_transaction_is_told_on_request_with_the_anomaly_that_names_it(tmp_path: Path) -> None:
    run_dir = aborted_read_run(tmp_path)
    assert told(str(run_dir), "--record", "t1")[0] == "t1 (aborted-read: violation)"
    lines = told(str(run_dir), "--record", "t5")
    assert lines[0] == "t5"
    reads = section(lines, "what readers returned of its records (2 reads)")
    assert reads[0].endswith("at an unknown isolation level (history row 2 names none)"), reads
    assert reads[1].endswith("at read_committed (history row 33)"), reads


def test_the_report_tells_the_transactions_story(tmp_path: Path) -> None:
    run_dir = aborted_read_run(tmp_path)
    results = json.loads((run_dir / "results.json").read_text(encoding="utf-8"))
    stories = report_stories(run_dir, results, {})
    assert stories is not None and [story_id for story_id, _ in stories.told] == ["t1"]
    assert stories.told[0][1][0] == "t1 (aborted-read: x1)"
    assert '<pre class="story" id="story-t1">t1 (aborted-read: x1)' in render_report(
        results, {}, None, stories
    )


def test_how_a_transaction_ended_as_its_producer_was_told() -> None:
    def rows(*answers: tuple[str, str]) -> list[dict[str, str]]:
        return [{"f": f, "type": kind} for f, kind in answers]

    assert ending(rows(("txn-commit", "invoke"), ("txn-commit", "ok"))).startswith("committed")
    assert ending(rows(("txn-commit", "info"), ("txn-abort", "ok"))).startswith("aborted")
    assert ending(rows(("txn-commit", "fail"), ("txn-abort", "info"))).startswith("not committed")
    assert ending(rows(("txn-commit", "invoke"))).startswith("undecided")


def test_a_lost_committed_record_checked_by_spark_is_told_as_its_transaction(
    tmp_path: Path, spark: SparkSession
) -> None:
    """The examples `kchaos check` writes name the transactions: t1 and t2 lost committed records, t3 is
    partial; each is told once, t1 as the lost-committed record a2 it lacks, after the records' stories
    (the planted history's poll-skips and truncated read)."""
    run_dir = make_run(tmp_path, txn_lost_scenario().history, acks="all", partitions=3)
    assert check_run(run_dir)["verdict"] == "violation"
    lines = told(str(run_dir), "--max-examples", "10")  # the planted history has poll-skips too, told first
    titles = [line for line in lines if re.match(r"t\d ", line)]
    assert titles == ["t1 (lost-committed: a2)", "t2 (lost-committed: b1)", "t3 (partial-transaction)"]
    assert lines[-1] != "" and "violations explained" not in lines[-1], "all six are told"
    t1 = lines[: lines.index("t2 (lost-committed: b1)")]
    assert "  it ended committed (the commit was acknowledged)" in t1
    assert "  the final read did not return a2" in t1
    assert section(t1, "where its control markers lie")[-1] == (
        "    final-reader read nothing past offset 0 (within 16 offsets)"
    ), "the final read of kchaos-1 started at 0 and returned nothing there"
    assert Transaction("t1", "lost-committed", "a2").id == "t1"
