"""The report tells a violation's story first: on the recorded KIP-101 run (tests/run_dirs/kip101-0.10.2.2,
see tests/test_explain.py for what happened in it) `kchaos report` puts producer-0-44's story, acknowledged
at kchaos-2 offset 28 by leader 3 and cut off by broker 1's truncation, right after the verdict and the run
table, before the anomaly table; that table gives each anomaly one line (its rule id and the rule's first
sentence) with the full rule behind a disclosure. A run without a violation has no story section."""

from __future__ import annotations

import html
import json
import re
import shutil
from pathlib import Path
from typing import Any

from click.testing import CliRunner
from pyspark.sql import SparkSession

from kchaos.checkers.results import check_run
from kchaos.runner.cli import main
from kchaos.spark_analysis.report import first_sentence, read_results, render_report, write_report
from kchaos.spark_analysis.report_stories import REPORT_STORIES, report_stories, story_limit
from tests.test_divergence_story import DIVERGENCE
from tests.test_explain import KIP101, LOST
from tests.test_report import lossy_history, make_run


def copy_kip101(tmp_path: Path) -> Path:
    run_dir = tmp_path / "kip101"
    shutil.copytree(KIP101, run_dir)
    (run_dir / "report.html").unlink(missing_ok=True)
    return run_dir


def rendered(run_dir: Path) -> tuple[dict[str, Any], str]:
    """The run's results and its report as drawn without Spark (no plots), stories included."""
    results = read_results(run_dir)
    config = json.loads((run_dir / "config.json").read_text(encoding="utf-8"))
    return results, render_report(results, config, None, report_stories(run_dir, results, config))


def element(page: str, tag: str, element_id: str) -> str:
    """The inner HTML of the `tag` element with id `element_id` (no element of the same tag nested in it)."""
    match = re.search(rf'<{tag}\b[^>]*\bid="{re.escape(element_id)}"[^>]*>(.*?)</{tag}>', page, re.DOTALL)
    assert match is not None, f"no <{tag} id={element_id!r}> in the page"
    return match.group(1)


def test_kchaos_report_tells_the_lost_records_story_before_the_anomaly_table(
    tmp_path: Path, spark: SparkSession
) -> None:
    run_dir = copy_kip101(tmp_path)
    result = CliRunner().invoke(main, ["report", str(run_dir)])
    assert result.exit_code == 0, result.output
    page = (run_dir / "report.html").read_text(encoding="utf-8")

    places = [
        page.index(mark) for mark in ('id="verdict"', '<table id="run">', 'id="stories"', 'id="anomalies"')
    ]
    assert places == sorted(places), "verdict, run table, stories, anomaly table, in that order"
    assert page.index('id="stories"') < page.index('id="plot-throughput"')

    story = html.unescape(element(page, "pre", f"story-{LOST}")).splitlines()
    assert story[0] == f"{LOST} (lost-write)"
    assert "acknowledged at kchaos-2 offset 28 (history row 176)" in story[2]
    assert story[3].startswith("  by leader 3 (ISR [1, 2, 3])"), story[3]
    told = "\n".join(story)
    for step in (
        "broker 2 elected leader, leader epoch 1",
        "broker 1 truncates its log to offset 28, cutting off offset 28",
        "broker 1 elected leader, leader epoch 2",
        "broker 1: offset 28 holds producer-1-44 (no epoch), not this record",
    ):
        assert step in told, step
    assert 'id="stories-more"' not in page, "the run has one violating record, and it is told"


def test_the_anomaly_row_shows_the_rule_id_and_first_sentence_with_the_full_rule_behind_a_disclosure(
    tmp_path: Path,
) -> None:
    run_dir = copy_kip101(tmp_path)
    results, page = rendered(run_dir)
    rule = results["anomalies"]["lost-write"]["rule"]
    summary = first_sentence(rule)
    assert summary.endswith("truncating it.") and len(summary) < len(rule)

    row = element(page, "tr", "anomaly-lost-write")
    disclosure = re.search(r"<details\b[^>]*>(.*?)</details>", row, re.DOTALL)
    assert disclosure is not None, row
    shown = row.replace(disclosure.group(0), "")
    assert '<code class="rule-id">committed-not-lost</code>' in shown
    assert html.escape(summary) in shown
    assert html.escape(rule) not in shown, "the full rule is behind the disclosure, not in the row"
    assert html.escape(rule) in disclosure.group(1)
    assert html.escape(results["anomalies"]["lost-write"]["source"]) in disclosure.group(1)
    assert "<summary>" in disclosure.group(1)


def test_a_story_part_the_run_lacks_is_said_as_the_story_says_it(tmp_path: Path) -> None:
    run_dir = copy_kip101(tmp_path)
    shutil.rmtree(run_dir / "logs")
    shutil.rmtree(run_dir / "replicas")
    story = html.unescape(element(rendered(run_dir)[1], "pre", f"story-{LOST}"))
    assert "acknowledged at kchaos-2 offset 28" in story
    assert "  unknown: no replicas/" in story
    assert "  unknown: no logs/kafka-N.log" in story


def test_stories_beyond_the_first_are_left_to_kchaos_explain(tmp_path: Path, spark: SparkSession) -> None:
    """acks=all loses two acknowledged writes (a lost-write and an unseen, both violations); a run asked
    for one example tells one story and names the command that tells the other."""
    run_dir = make_run(
        tmp_path, lossy_history(), acks="all", min_insync_replicas=2, idempotence=True, max_examples=1
    )
    results = check_run(run_dir)
    assert results["verdict"] == "violation"
    page = write_report(run_dir, results, spark).read_text(encoding="utf-8")
    assert len(re.findall(r'<pre class="story"', page)) == 1
    assert 'id="story-v0-7"' in page
    more = html.unescape(re.sub(r"<[^>]+>", "", element(page, "p", "stories-more")))
    assert more == f"1 more: kchaos explain {run_dir} --max-examples 2", more

    permitted = make_run(tmp_path / "permitted", lossy_history())
    results = check_run(permitted)
    assert results["verdict"] == "permitted"
    page = write_report(permitted, results, spark).read_text(encoding="utf-8")
    assert 'id="stories"' not in page and "<pre" not in page, "no violation, no story"


def test_the_report_tells_at_most_five_stories_and_no_more_than_the_run_asked_for() -> None:
    assert story_limit({}) == REPORT_STORIES == 5
    assert story_limit({"max_examples": 2}) == 2
    assert story_limit({"max_examples": 50}) == 5


def test_an_ok_run_has_no_story_section(tmp_path: Path) -> None:
    run_dir = copy_kip101(tmp_path)
    results = json.loads((run_dir / "results.json").read_text(encoding="utf-8"))
    for finding in results["anomalies"].values():
        if finding.get("verdict") == "violation":
            finding.update(verdict="ok", count=0, examples=[])
    results["verdict"] = "ok"
    assert report_stories(run_dir, results, {}) is None
    assert 'id="stories"' not in render_report(results, {}, None, None)


def test_the_report_tells_a_replica_divergence_as_its_sides_and_leaders(tmp_path: Path) -> None:
    """The recorded kip-101-divergence run (tests/test_divergence_story.py): the story section tells where
    the replicas of kchaos-0 differ, each side and who led it, before the anomaly table."""
    run_dir = tmp_path / "divergence"
    shutil.copytree(DIVERGENCE, run_dir)
    page = rendered(run_dir)[1]
    assert page.index('id="stories"') < page.index('id="anomalies"')
    story = html.unescape(element(page, "pre", "story-kchaos/0/371"))
    assert story.startswith("kchaos/0/371 (replica-divergence)\n")
    for step in (
        "where the replicas of kchaos-0 differ at the end (1,153 offsets):",
        "by leader 1 (ISR [1]), as broker 1's log says at +23.24s",
        "by leader 3 (ISR [2, 3]), as the leader watcher saw it since +44.07s",
        "broker 1 truncates its log to offset 1524, cutting off offsets 1524-1743, keeping its records at "
        "offsets 371-1523",
    ):
        assert step in story, step
    assert 'id="stories-more"' not in page and 'id="stories-untold"' not in page
