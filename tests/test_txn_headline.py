"""A transactional run's headline, through the real check: what it wrote (the records of transactions whose
commit was acknowledged) and what of that is gone after healing, on a synthetic `txn` history whose
ground truth is planted, then in results.json, on the terminal and in the comparison's row.

A `txn` run's headline read `acknowledged writes: 0, lost: not known` and its comparison row's lost was
blank; its lost count was tested only on a hand-written results.json.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from kchaos.checkers.rules.anomaly_names import LOST_COMMITTED, TRUNCATED_READ
from kchaos.model.events import TXN_ABORT, TXN_COMMIT
from kchaos.runner.outcome import check_and_report
from kchaos.runner.outcome_echo import echo_outcome
from kchaos.spark_analysis.comparison import COMPARISON_JSON, ComparedRun, write_comparison
from tests.histories import RC, HistoryBuilder
from tests.test_report import make_run

#: Committed transactions' records: value -> (partition, offset). Markers take the offset after each
#: transaction's last record in every partition it wrote to.
COMMITTED = {
    "t1": {"a1": (0, 0), "a2": (1, 0)},
    "t2": {"b1": (0, 2)},
    "t3": {"c1": (0, 4), "c2": (1, 2)},
    "t4": {"d1": (0, 6), "d2": (1, 4)},
}
#: Aborted transactions' records: acknowledged sends, never committed, so never a committed record lost.
ABORTED = {"t5": {"e1": (0, 8)}, "t6": {"f1": (1, 6)}}
#: A transaction whose commit got no answer: not known to be committed, so neither counted nor lost.
UNDECIDED = {"t7": {"g1": (0, 10)}}
#: What consumers read during the run (all at read_committed), and what the final read returned.
POLLED = ["a1", "b1", "c1"]
FINAL = ["a1", "c1", "c2"]

#: The ground truth: committed records gone from the final read that no one read (`lost-committed`), and
#: those read during the run and gone since (acknowledged `truncated-read`).
LOST_UNREAD = {"a2", "d1", "d2"}
LOST_AFTER_READ = {"b1"}
ACKNOWLEDGED = sum(len(records) for records in COMMITTED.values())


def planted_history() -> HistoryBuilder:
    every = {**COMMITTED, **ABORTED, **UNDECIDED}
    where = {value: place for records in every.values() for value, place in records.items()}
    h = HistoryBuilder()
    h.assign("consumer-0", [0, 1], isolation=RC)
    for txn, records in every.items():
        h.transaction(txn, [(value, partition, offset) for value, (partition, offset) in records.items()])
        if txn in COMMITTED:
            h.txn_end(TXN_COMMIT, txn)
        elif txn in ABORTED:
            h.txn_end(TXN_ABORT, txn)
        else:
            h.txn_end(TXN_COMMIT, txn, outcome=None)
    for value in POLLED:
        h.read(value, where[value][1], partition=where[value][0])
    for partition in (0, 1):
        h.final_read_start(partition=partition, isolation=RC)
    for value in sorted(FINAL, key=lambda v: where[v]):
        h.final_read(value, where[value][1], partition=where[value][0])
    return h


def test_a_txn_runs_headline_counts_its_committed_records_and_those_lost(
    tmp_path: Path, spark: SparkSession, capsys: pytest.CaptureFixture[str]
) -> None:
    assert ACKNOWLEDGED == 7 and len(LOST_UNREAD | LOST_AFTER_READ) == 4  # the planted numbers, spelled out
    run_dir = make_run(tmp_path, planted_history(), acks="all", partitions=2, workload="txn")
    outcome = check_and_report(run_dir, None)
    results = json.loads((run_dir / "results.json").read_text(encoding="utf-8"))
    anomalies = results["anomalies"]
    assert anomalies[LOST_COMMITTED]["count"] == len(LOST_UNREAD)
    assert anomalies[TRUNCATED_READ]["by_kind"] == {"acknowledged": len(LOST_AFTER_READ)}
    assert results["lost"]["count"] == len(LOST_UNREAD | LOST_AFTER_READ)
    assert results["transactions"]["committed_records"] == ACKNOWLEDGED

    echo_outcome(outcome)
    headline = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("acknowledged"))
    assert headline == (
        f"acknowledged writes: {ACKNOWLEDGED}, lost: 4 (read, then truncated: 1, committed, then lost: 3)"
    )
    assert outcome.counts_text().startswith(f"{ACKNOWLEDGED} acknowledged, 4 lost")  # a hunt's row

    compared = tmp_path / "compared"
    compared.mkdir()
    page = write_comparison(
        spark, compared, [ComparedRun("report-test", "txn", {"workload": "txn"}, run_dir)], "t"
    )
    [row] = json.loads((compared / COMPARISON_JSON).read_text(encoding="utf-8"))["configurations"]
    assert (row["acknowledged"], row["lost"], row["loss_rate"]) == (ACKNOWLEDGED, 4, 4 / ACKNOWLEDGED)
    cells = configuration_cells(page.read_text(encoding="utf-8"))
    assert (cells["acknowledged"], cells["lost"]) == (str(ACKNOWLEDGED), "4")


def configuration_cells(html: str) -> dict[str, str]:
    """The comparison page's counts of its one configuration, by column (acknowledged, failed, ..., lost)."""
    table = html.split('<table id="configurations">', 1)[1].split("</table>", 1)[0]
    headers = re.findall(r"<th>([^<]*)</th>", table)
    names = headers[headers.index("runs") + 1 :]  # the settings and the runs are no numbers
    cells = re.findall(r'<td class="num">([^<]*)</td>', table)
    return dict(zip(names, cells, strict=False))
