"""Comparing the runs of a matrix: per configuration, what it lost, how available it was, how fast.

The question a comparison answers is "what does this setting cost?", so each configuration (its
repetitions together) gets the numbers that answer it side by side: what it wrote and Kafka acknowledged
and what of that it lost (acknowledged records gone after healing), the runs' headline counts, and the loss
rate (the one over the other), each
anomaly's count and worst verdict, availability (the share of sends that were acknowledged rather than
failed or left indeterminate) and latency percentiles of acknowledged sends. Counts come from each run's
`results.json`; latencies from the histories, paired in Spark, so only a handful of percentiles per
configuration reach the driver.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, select_autoescape
from matplotlib.figure import Figure
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from kchaos.checkers.lost_count import run_acknowledged, run_lost
from kchaos.checkers.passes.frames import HISTORY_STRUCT
from kchaos.checkers.rules.anomaly_names import ANOMALY_NAMES
from kchaos.checkers.rules.verdict_names import UNCHECKED, Verdict, is_verdict, verdict_colour
from kchaos.checkers.rules.verdicts import worst_verdict
from kchaos.model.history_files import history_path
from kchaos.model.matrix import configuration_key, setting_text
from kchaos.model.run_files import RunDir, write_replacing
from kchaos.spark_analysis.figures import png_base64
from kchaos.spark_analysis.sends import acknowledged_latencies

COMPARISON_HTML = "comparison.html"
COMPARISON_JSON = "comparison.json"
TEMPLATES = Path(__file__).parent / "templates"

PERCENTILES = {"p50": 0.5, "p95": 0.95, "p99": 0.99}


@dataclass(frozen=True)
class ComparedRun:
    """One finished run of a comparison: which configuration it belongs to and where it lives."""

    run_id: str
    key: str
    settings: Mapping[str, Any]
    run_dir: Path


def worst(verdicts: Sequence[str]) -> Verdict:
    """A configuration's verdict: the worst of its runs' (a verdict the oracle does not know is ignored)."""
    return worst_verdict(v for v in verdicts if is_verdict(v))


def latency_percentiles(spark: SparkSession, runs: Sequence[ComparedRun]) -> dict[str, dict[str, float]]:
    """Per configuration key, latency percentiles (ms) of acknowledged sends across its runs."""
    if not runs:
        return {}
    history = spark.read.schema(HISTORY_STRUCT).parquet(*(str(history_path(run.run_dir)) for run in runs))
    keys = spark.createDataFrame([(run.run_id, run.key) for run in runs], "run_id string, key string")
    rows = (
        acknowledged_latencies(history)
        .join(F.broadcast(keys), on="run_id")
        .groupBy("key")
        .agg(
            *(
                F.percentile_approx("latency_ms", fraction, 10000).alias(name)
                for name, fraction in PERCENTILES.items()
            ),
            F.max("latency_ms").alias("max"),
        )
        .collect()
    )
    return {
        row["key"]: {
            name: round(float(row[name]), 1) for name in (*PERCENTILES, "max") if row[name] is not None
        }
        for row in rows
    }


def _load_results(run: ComparedRun) -> dict[str, Any]:
    with RunDir(run.run_dir).results.open(encoding="utf-8") as fh:
        results: dict[str, Any] = json.load(fh)
    return results


def compare(spark: SparkSession, runs: Sequence[ComparedRun]) -> list[dict[str, Any]]:
    """One row per configuration, in the order the configurations first appear in `runs`."""
    latencies = latency_percentiles(spark, runs)
    rows: dict[str, dict[str, Any]] = {}
    for run in runs:
        results = _load_results(run)
        summary = results.get("summary", {})
        row = rows.setdefault(
            run.key,
            {
                "key": run.key,
                "settings": dict(run.settings),
                "runs": [],
                "verdicts": [],
                "sends_invoked": 0,
                "sends_acknowledged": 0,
                "sends_failed": 0,
                "sends_indeterminate": 0,
                "acknowledged": 0,
                "lost": 0,
                "anomalies": {name: {"count": 0, "verdicts": [], "checked": False} for name in ANOMALY_NAMES},
            },
        )
        row["runs"].append({"run_id": run.run_id, "verdict": results.get("verdict"), "dir": run.run_dir.name})
        row["verdicts"].append(str(results.get("verdict")))
        for name in ("sends_invoked", "sends_acknowledged", "sends_failed", "sends_indeterminate"):
            row[name] += int(summary.get(name) or 0)
        headline = {"lost": run_lost(results)["count"], "acknowledged": run_acknowledged(results)}
        for name, count in headline.items():
            row[name] = None if count is None or row[name] is None else row[name] + count
        for name, finding in results.get("anomalies", {}).items():
            entry = row["anomalies"].setdefault(name, {"count": 0, "verdicts": [], "checked": False})
            if finding.get("checked", True) and finding.get("count") is not None:
                entry["count"] += int(finding["count"])
                entry["checked"] = True
            entry["verdicts"].append(str(finding.get("verdict")))
    compared = []
    for row in rows.values():
        written, acknowledged, invoked = row["acknowledged"], row["sends_acknowledged"], row["sends_invoked"]
        lost = row["lost"]
        anomalies = {
            name: {"count": entry["count"] if entry["checked"] else None, "verdict": worst(entry["verdicts"])}
            for name, entry in row.pop("anomalies").items()
        }
        compared.append(
            {
                **row,
                "verdict": worst(row.pop("verdicts")),
                "loss_rate": lost / written if written and lost is not None else None,
                "availability": acknowledged / invoked if invoked else None,
                "latency_ms": latencies.get(row["key"], {}),
                "anomalies": anomalies,
            }
        )
    return compared


def _label(row: Mapping[str, Any], varying: Sequence[str]) -> str:
    settings = row["settings"]
    return configuration_key({name: settings[name] for name in varying or settings})


def varying_axes(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """The axes whose value differs between configurations: the only ones worth a label."""
    names: list[str] = []
    for row in rows:
        names.extend(name for name in row["settings"] if name not in names)
    return [
        name for name in names if len({json.dumps(r["settings"].get(name), default=str) for r in rows}) > 1
    ]


def _bars(
    rows: Sequence[Mapping[str, Any]], labels: list[str], values: list[float], title: str, xlabel: str
) -> str:
    fig = Figure(figsize=(9, 0.5 + 0.45 * len(rows)), dpi=100)
    ax = fig.add_subplot()
    colours = [verdict_colour(str(row["verdict"])).hex for row in rows]
    ax.barh(range(len(rows)), values, color=colours)
    ax.set_yticks(range(len(rows)), labels, fontsize=8)
    ax.invert_yaxis()
    ax.set_title(title, fontsize=10)
    ax.set_xlabel(xlabel)
    for position, value in enumerate(values):
        ax.text(value, position, f" {value:.4g}", va="center", fontsize=7)
    return png_base64(fig)


def plots(rows: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """Loss rate, availability and latency per configuration, bars coloured by verdict."""
    if not rows:
        return {}
    varying = varying_axes(rows)
    labels = [_label(row, varying) for row in rows]
    out = {
        "loss_rate": _bars(
            rows, labels, [100.0 * (row["loss_rate"] or 0.0) for row in rows],
            "acknowledged records lost per acknowledged write (colour: verdict)", "loss rate (%)",
        ),
        "availability": _bars(
            rows, labels, [100.0 * (row["availability"] or 0.0) for row in rows],
            "sends acknowledged, the rest failed or stayed indeterminate (colour: verdict)",
            "availability (%)",
        ),
    }  # fmt: skip
    fig = Figure(figsize=(9, 0.5 + 0.45 * len(rows)), dpi=100)
    ax = fig.add_subplot()
    height = 0.8 / len(PERCENTILES)
    for shift, name in enumerate(PERCENTILES):
        ax.barh(
            [i + shift * height for i in range(len(rows))],
            [max(row["latency_ms"].get(name, 0.0), 0.01) for row in rows],
            height=height,
            label=name,
        )
    ax.set_yticks([i + height for i in range(len(rows))], labels, fontsize=8)
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.set_xlabel("latency of acknowledged sends (ms, log scale)")
    ax.legend(fontsize=8)
    out["latency"] = png_base64(fig)
    return out


def write_comparison(
    spark: SparkSession,
    directory: Path,
    runs: Sequence[ComparedRun],
    title: str,
    failed: Mapping[str, str] | None = None,
) -> Path:
    """Writes `comparison.json` and the self-contained `comparison.html` into `directory`."""
    rows = compare(spark, runs)
    varying = varying_axes(rows)
    document = {"title": title, "axes": varying, "configurations": rows, "failed_runs": dict(failed or {})}
    write_replacing(directory / COMPARISON_JSON, json.dumps(document, indent=2) + "\n")
    env = Environment(loader=FileSystemLoader(TEMPLATES), autoescape=select_autoescape(["html"]))
    html = env.get_template(COMPARISON_HTML).render(
        title=title,
        rows=rows,
        axes=varying or sorted({name for row in rows for name in row["settings"]}),
        anomalies=list(ANOMALY_NAMES),
        plots=plots(rows),
        failed=dict(failed or {}),
        verdict=worst([row["verdict"] for row in rows]) if rows else UNCHECKED,
        short=setting_text,
        run_count=len(runs),
    )
    target = directory / COMPARISON_HTML
    write_replacing(target, html)
    return target
