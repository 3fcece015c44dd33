"""The report as a person sees it: opened offline in real headless Chromium, every table and plot there.

Not a `cluster` test: the run directory is built from a synthetic history (a crash with a leader change,
failed, indeterminate and unanswered sends, lost writes in two partitions), then checked and reported for
real. Chromium missing is a failure naming the fix, never a skip.
"""

from __future__ import annotations

from pathlib import Path

from pyspark.sql import SparkSession

from kchaos.checkers.results import check_run
from kchaos.checkers.rules.anomaly_names import ANOMALY_NAMES, TRANSACTION_ANOMALY_NAMES
from kchaos.spark_analysis.report import write_report
from tests.browser import open_page
from tests.test_report import eventful_history, make_run

PLOTS = ("latency", "throughput", "leaders", "unread")


def test_report_shows_its_tables_and_plots_in_chromium(tmp_path: Path, spark: SparkSession) -> None:
    run_dir = make_run(tmp_path, eventful_history(), timed=True, partitions=3)
    report = write_report(run_dir, check_run(run_dir), spark)
    page = open_page(report, screenshot=tmp_path / "report.png")

    assert page.blocked_requests == [], "the report must not fetch anything"
    assert page.errors == []
    assert page.title == "kchaos report-test: violation"

    anomalies = page.table("anomalies")
    assert anomalies.rows[0] == ["anomaly", "count", "expected", "verdict", "rule"]
    # A run without transactions leaves their anomalies off the page (results.json lists them unchecked).
    assert [row[0] for row in anomalies.rows[1:]] == [
        n for n in ANOMALY_NAMES if n not in TRANSACTION_ANOMALY_NAMES
    ]
    counts = {row[0]: row[1] for row in anomalies.rows[1:]}
    assert (counts["lost-write"], counts["unseen"], counts["poll-skip"]) == ("3", "1", "1")
    assert counts["replica-divergence"] == "not checked"

    for name, first_value in (("lost-write", "v2-3"), ("unseen", "w1-24"), ("poll-skip", None)):
        examples = page.table(f"examples-table-{name}")
        assert len(examples.rows) > 1, name
        assert "id" in examples.rows[0], name
        if first_value is not None:
            assert first_value in examples.rows[1], (name, examples.rows[1])

    assert page.table("unread-by-partition").rows == [
        ["partition", "lost-write", "unseen"],
        ["0", "2", "0"],
        ["1", "0", "1"],
        ["2", "1", "0"],
    ]
    assert [row[0] for row in page.table("faults").rows[1:]] == ["kill-leader#1", "isolate-leader#1"]

    for plot in PLOTS:
        image = page.image(f"plot-{plot}")
        assert image.scheme == "data", plot
        assert image.decoded, f"the browser could not decode the {plot} plot"
        assert image.natural_width >= 600, plot


def test_the_helper_sees_undecodable_images_and_network_requests(tmp_path: Path) -> None:
    """The checks above mean something only if a broken image or a fetched stylesheet would be caught."""
    page_file = tmp_path / "broken.html"
    page_file.write_text(
        '<!doctype html><html><head><title>broken</title><link rel="stylesheet" '
        'href="http://127.0.0.1:9/style.css"></head><body>'
        '<img id="cut" src="data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAA">'
        '<table id="t"><tr><th>a</th></tr><tr><td>1</td></tr></table></body></html>',
        encoding="utf-8",
    )
    page = open_page(page_file)
    assert not page.image("cut").decoded
    assert page.blocked_requests == ["http://127.0.0.1:9/style.css"]
    assert page.table("t").rows == [["a"], ["1"]]
