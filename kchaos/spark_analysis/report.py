"""The per-run HTML report: the verdict, why, and what the workload and cluster did while faults were active.

The report is one self-contained file (inline CSS, plots as base64 PNGs) so it can be attached to a bug
report or opened from a CI artifact without a server or network. This module assembles the page: the
verdict and anomalies from `results.json`, the story of each violating record first (what happened before
which rule forbade it, `kchaos.spark_analysis.report_stories`), the run's configuration, and the plots
of what Spark reduced the history to (`kchaos.spark_analysis.timeline`, drawn by
`kchaos.spark_analysis.report_plots`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, select_autoescape
from pyspark.sql import SparkSession

from kchaos.checkers.passes.frames import load_history
from kchaos.checkers.rules.anomaly_names import (
    ABORTED_READ,
    LOST_COMMITTED,
    PARTIAL_TRANSACTION,
    TRANSACTION_ANOMALY_NAMES,
    UNCOMMITTED_READ,
)
from kchaos.checkers.runtime.session import spark_session
from kchaos.model.run_files import RESULTS_NAME, RunDir, write_replacing
from kchaos.spark_analysis.group_section import group_section
from kchaos.spark_analysis.read_lag import Reading, reading
from kchaos.spark_analysis.report_plots import (
    latency_png,
    latency_title,
    leaders_png,
    read_lag_png,
    throughput_png,
    unread_png,
    unseen_png,
)
from kchaos.spark_analysis.report_stories import Stories, report_stories
from kchaos.spark_analysis.timeline import Timeline, timeline
from kchaos.spark_analysis.unread import unread_by_partition

TEMPLATES = Path(__file__).parent / "templates"


def _cell(value: Any) -> str:
    """Nested example fields (lists of offsets, structs) read best as compact JSON."""
    if value is None:
        return "—"
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True, separators=(", ", ": "))


def _columns(examples: Sequence[Mapping[str, Any]]) -> list[str]:
    columns: list[str] = []
    for example in examples:
        columns.extend(key for key in example if key not in columns)
    return columns


#: A sentence's end: a full stop, question or exclamation mark followed by a space and a capital (so
#: `min.insync.replicas=1`, `e.g. a` and a version number do not end one).
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")


def first_sentence(text: Any) -> str:
    """The first sentence of a rule's text: the anomaly table's one line, the full text behind a
    disclosure."""
    if not isinstance(text, str):
        return ""
    return _SENTENCE_END.split(text.strip(), maxsplit=1)[0]


def _relative(wall: Any, start: float | None) -> str:
    if wall is None:
        return "—"
    return f"{float(wall) - start:.1f} s" if start is not None else f"{float(wall):.3f}"


def _read_config(run_dir: Path) -> dict[str, Any]:
    path = RunDir(run_dir).config
    if not path.exists():
        return {}
    with path.open(encoding="utf-8") as fh:
        config: dict[str, Any] = json.load(fh)
    return config


def read_results(run_dir: Path) -> dict[str, Any]:
    """A run's results.json; FileNotFoundError names the fix when the run was never checked."""
    path = RunDir(run_dir).results
    if not path.exists():
        raise FileNotFoundError(
            f"{run_dir} has no {RESULTS_NAME}; check the run first: kchaos check {run_dir}"
        )
    with path.open(encoding="utf-8") as fh:
        results: dict[str, Any] = json.load(fh)
    return results


#: What each transaction anomaly is, in one line, for the Transactions section (docs/anomalies.md has the
#: full definitions).
TRANSACTION_MEANINGS = {
    ABORTED_READ: "a reader at read_committed returned a record of an aborted transaction",
    UNCOMMITTED_READ: "a reader at read_committed returned a record before its producer asked to commit",
    LOST_COMMITTED: "a committed transaction's acknowledged record that no reader ever returned",
    PARTIAL_TRANSACTION: "a committed transaction the final read holds some records of and lacks others",
}


def shown_anomalies(results: Mapping[str, Any]) -> dict[str, Any]:
    """The anomalies the page lists: all of them, but the transaction anomalies only for a run that wrote
    transactions (`results.json` still lists them for every run, not checked where there were none)."""
    transactional = bool(results.get("transactions"))
    return {
        name: finding
        for name, finding in results.get("anomalies", {}).items()
        if transactional or name not in TRANSACTION_ANOMALY_NAMES
    }


def render_report(
    results: Mapping[str, Any],
    config: Mapping[str, Any],
    drawn: Timeline | None,
    stories: Stories | None = None,
    reads: Reading | None = None,
) -> str:
    """The page, from a run's results, its configuration, what Spark drew of its history, the stories
    of its violating records (None: the run has no violation) and what its readers lagged (None: not
    drawn)."""
    env = Environment(loader=FileSystemLoader(TEMPLATES), autoescape=select_autoescape(["html"]))
    env.filters["cell"] = _cell
    env.filters["first_sentence"] = first_sentence
    faults = list(results.get("faults", []))
    start = drawn.span.start_wall if drawn is not None else None
    unread = unread_by_partition(results, config)
    plots: dict[str, str | None] = {
        "latency": None, "throughput": None, "leaders": None, "read_lag": None, "unseen": None
    }  # fmt: skip
    if drawn is not None:
        plots["latency"] = (
            latency_png(drawn.latencies, drawn.span, faults) if drawn.latencies.points else None
        )
        plots["throughput"] = throughput_png(drawn.throughput, drawn.span, faults)
        plots["leaders"] = leaders_png(drawn.leaders, drawn.span, faults) if drawn.leaders else None
        if reads is not None and reads.lag is not None:
            plots["read_lag"] = read_lag_png(reads.lag, drawn.span, faults)
        if reads is not None and reads.unseen is not None:
            plots["unseen"] = unseen_png(reads.unseen, drawn.span, faults)
    plots["unread"] = unread_png(unread) if unread is not None and unread.any else None
    anomalies = shown_anomalies(results)
    return env.get_template("report.html").render(
        results=results,
        stories=stories,
        anomalies=anomalies,
        transactions=results.get("transactions"),
        transaction_anomalies=[name for name in TRANSACTION_ANOMALY_NAMES if name in anomalies],
        transaction_meanings=TRANSACTION_MEANINGS,
        summary=results.get("summary", {}),
        group=group_section(results),
        faults=[
            {
                **fault,
                "start": _relative(fault.get("start_wall"), start),
                "stop": _relative(fault.get("stop_wall"), start),
            }
            for fault in faults
        ],
        config=config,
        columns={name: _columns(finding.get("examples", [])) for name, finding in anomalies.items()},
        drawn=drawn,
        plots=plots,
        latency_title=latency_title(drawn.latencies) if drawn is not None else None,
        unread=unread,
        leader_changes=len(drawn.leaders) if drawn is not None else 0,
        readers_left_out=reads.lag.left_out if reads is not None and reads.lag is not None else 0,
    )


def write_report(run_dir: Path, results: Mapping[str, Any], spark: SparkSession | None = None) -> Path:
    """Writes `run_dir/report.html` from a run's results and history."""
    history = load_history(spark or spark_session(), run_dir)
    config = _read_config(run_dir)
    drawn = timeline(history)
    reads = reading(history, drawn.span) if drawn is not None else None
    html = render_report(results, config, drawn, report_stories(run_dir, results, config), reads)
    target = RunDir(run_dir).report
    write_replacing(target, html)
    return target
