"""The per-run HTML report: the verdict, why, and what the workload saw while faults were active.

The report is one self-contained file (inline CSS, the plot as a base64 PNG) so it can be attached to a
bug report or opened from a CI artifact without a server or network. Spark only aggregates the history to
one row per second; that small series is all that reaches the driver.
"""

from __future__ import annotations

import base64
import io
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, select_autoescape
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.transforms import blended_transform_factory
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from checkers.frames import SEND, is_nemesis, load_history
from checkers.results import CONFIG_NAME
from checkers.spark import spark_session

REPORT_NAME = "report.html"
TEMPLATES = Path(__file__).parent / "templates"

#: Shading per fault kind; kinds not listed fall back to grey, so a new nemesis still shows up.
KIND_COLOURS = {"crash": "#d62728", "partition": "#1f77b4", "pause": "#9467bd", "clock": "#8c564b"}
DEFAULT_COLOUR = "#7f7f7f"


@dataclass(frozen=True)
class Throughput:
    """Send outcomes per second since the first event of the run (seconds with none are zero-filled)."""

    start_wall: float
    end_wall: float
    seconds: list[int]
    acknowledged: list[int]
    unacknowledged: list[int]


def throughput(history: DataFrame) -> Throughput | None:
    """Aggregates send completions by wall-clock second; None for an empty history."""
    bounds = history.agg(F.min("wall_time").alias("start"), F.max("wall_time").alias("end")).first()
    if bounds is None or bounds["start"] is None:
        return None
    start, end = float(bounds["start"]), float(bounds["end"])
    completions = history.filter(
        (F.col("f") == SEND) & ~is_nemesis() & F.col("type").isin("ok", "fail", "info")
    )
    per_second = (
        completions.groupBy(F.floor(F.col("wall_time") - F.lit(start)).cast("long").alias("second"))
        .agg(
            F.sum(F.when(F.col("type") == "ok", 1).otherwise(0)).alias("acknowledged"),
            F.sum(F.when(F.col("type") != "ok", 1).otherwise(0)).alias("unacknowledged"),
        )
        .orderBy("second")
        .collect()
    )
    by_second = {
        int(row["second"]): (int(row["acknowledged"]), int(row["unacknowledged"])) for row in per_second
    }
    seconds = list(range(math.floor(end - start) + 1))
    return Throughput(
        start_wall=start,
        end_wall=end,
        seconds=seconds,
        acknowledged=[by_second.get(second, (0, 0))[0] for second in seconds],
        unacknowledged=[by_second.get(second, (0, 0))[1] for second in seconds],
    )


def throughput_png(series: Throughput, faults: Sequence[Mapping[str, Any]]) -> str:
    """The throughput plot with each fault interval shaded and labelled, as a base64 PNG."""
    # The Agg canvas directly, not pyplot: no global figure state and no display needed in CI or threads.
    fig = Figure(figsize=(10, 3.6), dpi=100)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    ax.plot(
        series.seconds, series.acknowledged, drawstyle="steps-post", color="#2ca02c", label="acknowledged"
    )
    if any(series.unacknowledged):
        ax.plot(
            series.seconds,
            series.unacknowledged,
            drawstyle="steps-post",
            color="#ff7f0e",
            linewidth=0.8,
            label="failed or indeterminate",
        )
    run_end = series.end_wall - series.start_wall
    label_at = blended_transform_factory(ax.transData, ax.transAxes)
    for row, fault in enumerate(f for f in faults if f.get("start_wall") is not None):
        begin = float(fault["start_wall"]) - series.start_wall
        # A fault never stopped lasted until the run ended.
        finish = (
            float(fault["stop_wall"]) - series.start_wall if fault.get("stop_wall") is not None else run_end
        )
        colour = KIND_COLOURS.get(str(fault.get("kind")), DEFAULT_COLOUR)
        ax.axvspan(begin, max(finish, begin + 0.2), color=colour, alpha=0.15, linewidth=0)
        ax.text(
            begin,
            0.97 - 0.08 * (row % 4),
            str(fault.get("key") or fault.get("f")),
            transform=label_at,
            fontsize=7,
            color=colour,
            va="top",
        )
    ax.set_xlim(0, max(run_end, 1.0))
    ax.set_ylim(bottom=0)
    ax.set_xlabel("seconds since run start")
    ax.set_ylabel("sends per second")
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    return base64.b64encode(buffer.getvalue()).decode("ascii")


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


def _relative(wall: Any, start: float | None) -> str:
    if wall is None:
        return "—"
    return f"{float(wall) - start:.1f} s" if start is not None else f"{float(wall):.3f}"


def _read_config(run_dir: Path) -> dict[str, Any]:
    path = run_dir / CONFIG_NAME
    if not path.exists():
        return {}
    with path.open(encoding="utf-8") as fh:
        config: dict[str, Any] = json.load(fh)
    return config


def render_report(results: Mapping[str, Any], config: Mapping[str, Any], series: Throughput | None) -> str:
    env = Environment(loader=FileSystemLoader(TEMPLATES), autoescape=select_autoescape(["html"]))
    env.filters["cell"] = _cell
    faults = list(results.get("faults", []))
    start = series.start_wall if series is not None else None
    return env.get_template("report.html").render(
        results=results,
        anomalies=results.get("anomalies", {}),
        summary=results.get("summary", {}),
        faults=[
            {
                **fault,
                "start": _relative(fault.get("start_wall"), start),
                "stop": _relative(fault.get("stop_wall"), start),
            }
            for fault in faults
        ],
        config=config,
        columns={
            name: _columns(finding.get("examples", []))
            for name, finding in results.get("anomalies", {}).items()
        },
        plot=throughput_png(series, faults) if series is not None else None,
    )


def write_report(run_dir: Path, results: dict[str, Any], spark: SparkSession | None = None) -> Path:
    """Writes `run_dir/report.html` from a run's results and history."""
    history = load_history(spark or spark_session(), run_dir)
    html = render_report(results, _read_config(run_dir), throughput(history))
    target = run_dir / REPORT_NAME
    target.write_text(html, encoding="utf-8")
    return target
