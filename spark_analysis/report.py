"""The per-run HTML report: the verdict, why, and what the workload and cluster did while faults were active.

The report is one self-contained file (inline CSS, plots as base64 PNGs) so it can be attached to a bug
report or opened from a CI artifact without a server or network. Its plots are Jepsen's: every timeline has
the same x axis (seconds since the run's first event) with each fault's interval shaded and labelled, so a
latency spike, a throughput dip and a leader change can be read against the fault that caused them.

Spark reduces the history to what is drawn: sends per second, one point per send for the latency plot (a
deterministic sample past `LATENCY_POINT_LIMIT`), and the leader watcher's few change rows. Per-partition
loss counts come from `results.json`, so a report can be regenerated (`kchaos report`) without checking
again.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from jinja2 import Environment, FileSystemLoader, select_autoescape
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator
from matplotlib.transforms import blended_transform_factory
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from checkers.frames import count_where, load_history
from checkers.names import LOST_WRITE, UNSEEN
from checkers.spark import spark_session
from harness.events import LEADER, LEADER_WATCH_PROCESS, NO_LEADER
from harness.history import parse_detail
from harness.run_files import CONFIG_NAME, RESULTS_NAME
from spark_analysis.figures import png_base64
from spark_analysis.sends import OUTCOMES, is_send, send_pairs

REPORT_NAME = "report.html"
TEMPLATES = Path(__file__).parent / "templates"

#: Shading per fault kind; kinds not listed fall back to grey, so a new nemesis still shows up.
KIND_COLOURS = {"crash": "#d62728", "partition": "#1f77b4", "pause": "#9467bd", "clock": "#8c564b"}
DEFAULT_COLOUR = "#7f7f7f"

#: Send outcomes as Jepsen colours them: ok blue, fail pink, info (indeterminate) orange.
OUTCOME_COLOURS = {"ok": "#4a90d9", "fail": "#e6007e", "info": "#ff9f00"}

#: Above this many sends the latency plot shows a deterministic sample: more points only cost time to
#: collect and draw, and hide each other anyway.
LATENCY_POINT_LIMIT = 200_000
#: Latencies are drawn on a log scale; a zero (a converted history with one timestamp per send) sits here.
LATENCY_FLOOR_MS = 0.01

#: The kinds of latency point: a send invoked and completed; invoked, never completed (drawn as `info`,
#: its latency running to the end of the run); completed with no invoke recorded (latency unknown).
COMPLETED = "completed"
NEVER_COMPLETED = "never-completed"
NO_INVOKE = "no-invoke"

PLOT_WIDTH = 10.0


# --- what Spark reduces the history to ---------------------------------------------------------------------


@dataclass(frozen=True)
class RunSpan:
    """When the run started and ended in both clocks of the history, and how many sends it holds.

    Wall time places events on the plots (faults are recorded in it too); the monotonic clock measures
    latencies, and its end is how long a send that never completed waited. The send counts size the
    latency sample without an extra pass.
    """

    start_wall: float
    end_wall: float
    end_ns: int | None
    sends_invoked: int
    sends_acknowledged: int

    @property
    def length(self) -> float:
        return self.end_wall - self.start_wall


def run_span(history: DataFrame) -> RunSpan | None:
    """One aggregation pass; None for an empty history."""
    row = history.agg(
        F.min("wall_time").alias("start"),
        F.max("wall_time").alias("end"),
        F.max("time_ns").alias("end_ns"),
        count_where(is_send() & (F.col("type") == "invoke")).alias("invoked"),
        count_where(is_send() & (F.col("type") == "ok")).alias("acknowledged"),
    ).first()
    if row is None or row["start"] is None:
        return None
    return RunSpan(
        start_wall=float(row["start"]),
        end_wall=float(row["end"]),
        end_ns=int(row["end_ns"]) if row["end_ns"] is not None else None,
        sends_invoked=int(row["invoked"]),
        sends_acknowledged=int(row["acknowledged"]),
    )


@dataclass(frozen=True)
class Throughput:
    """Send outcomes per second since the first event of the run (seconds with none are zero-filled)."""

    seconds: list[int]
    acknowledged: list[int]
    unacknowledged: list[int]


def throughput(history: DataFrame, span: RunSpan) -> Throughput:
    """Aggregates send completions by wall-clock second."""
    completions = history.filter(is_send() & F.col("type").isin(*OUTCOMES))
    per_second = (
        completions.groupBy(F.floor(F.col("wall_time") - F.lit(span.start_wall)).cast("long").alias("second"))
        .agg(
            F.sum(F.when(F.col("type") == "ok", 1).otherwise(0)).alias("acknowledged"),
            F.sum(F.when(F.col("type") != "ok", 1).otherwise(0)).alias("unacknowledged"),
        )
        .collect()
    )
    by_second = {
        int(row["second"]): (int(row["acknowledged"]), int(row["unacknowledged"])) for row in per_second
    }
    seconds = list(range(math.floor(span.length) + 1))
    return Throughput(
        seconds=seconds,
        acknowledged=[by_second.get(second, (0, 0))[0] for second in seconds],
        unacknowledged=[by_second.get(second, (0, 0))[1] for second in seconds],
    )


class SendPoint(NamedTuple):
    """One send on the latency plot: when it was invoked (seconds since the run start; for a completion
    with no invoke, when it completed), its latency in ms (None when unknown), outcome and kind."""

    at: float
    latency_ms: float | None
    outcome: str
    kind: str


@dataclass(frozen=True)
class Latencies:
    """The sends drawn on the latency plot; `sampled` says the points are a sample of `sends` sends."""

    points: list[SendPoint]
    sends: int
    sampled: bool
    every_unacknowledged_kept: bool


def sample_fractions(acknowledged: int, other: int, limit: int) -> tuple[float, float]:
    """The fractions of acknowledged and of other (failed, indeterminate) sends to keep, `limit` in all.

    Sends that did not succeed are what a latency plot is read for, so they are kept whole if they fit in
    half the budget (or in whatever the acknowledged ones leave); the acknowledged ones fill the rest.
    """
    if acknowledged + other <= limit:
        return 1.0, 1.0
    other_budget = max(limit // 2, limit - acknowledged)
    other_fraction = min(1.0, other_budget / other) if other else 1.0
    ack_budget = limit - min(other, other_budget)
    ack_fraction = min(1.0, ack_budget / acknowledged) if acknowledged else 1.0
    return ack_fraction, other_fraction


#: Sample buckets of the hash that decides which sends a sampled plot keeps.
_HASH_BUCKETS = 1 << 20


def latencies(history: DataFrame, span: RunSpan, limit: int = LATENCY_POINT_LIMIT) -> Latencies:
    """Pairs each send's invoke with its first completion (by process and value) and keeps what is drawn.

    A send never completed is `info`, waiting until the run's end; a completion with no invoke is kept with
    an unknown latency. Past `limit` sends, a hash of (process, value) picks the sample, so regenerating
    the report draws the same points.
    """
    pairs = send_pairs(history)
    end_ns = F.lit(span.end_ns).cast("long")
    points = pairs.select(
        (F.coalesce("invoke_wall", "done.wall_time") - F.lit(span.start_wall)).alias("at"),
        ((F.coalesce("done.time_ns", end_ns) - F.col("invoke_ns")) / F.lit(1e6)).alias("latency_ms"),
        F.coalesce("done.type", F.lit("info")).alias("outcome"),
        F.when(F.col("invoke_ns").isNull(), F.lit(NO_INVOKE))
        .when(F.col("done").isNull(), F.lit(NEVER_COMPLETED))
        .otherwise(F.lit(COMPLETED))
        .alias("kind"),
        F.col("process"),
        F.col("value"),
    )
    acknowledged = span.sends_acknowledged
    other = max(0, span.sends_invoked - acknowledged)
    ack_fraction, other_fraction = sample_fractions(acknowledged, other, limit)
    sampled = ack_fraction < 1.0 or other_fraction < 1.0
    if sampled:
        bucket = F.pmod(F.xxhash64("process", "value"), F.lit(_HASH_BUCKETS)) / F.lit(_HASH_BUCKETS)
        keep = F.when(F.col("outcome") == "ok", bucket < ack_fraction).otherwise(bucket < other_fraction)
        points = points.filter(keep)
    rows = points.select("at", "latency_ms", "outcome", "kind").collect()
    return Latencies(
        points=[
            SendPoint(
                float(row["at"]),
                float(row["latency_ms"]) if row["latency_ms"] is not None else None,
                str(row["outcome"]),
                str(row["kind"]),
            )
            for row in rows
        ],
        sends=span.sends_invoked,
        sampled=sampled,
        every_unacknowledged_kept=other_fraction >= 1.0,
    )


@dataclass(frozen=True)
class LeaderChange:
    """One leader-watch row: from `at` (seconds since the run start) the partition was led by `leader`."""

    at: float
    topic: str | None
    partition: int
    leader: int
    isr: tuple[int, ...]


def _leader_of(key: Any, detail: Mapping[str, Any]) -> int:
    """The key holds the leader id; the detail repeats it, for a history whose key was dropped."""
    for candidate in (key, detail.get("leader")):
        try:
            return int(str(candidate))
        except (TypeError, ValueError):
            continue
    return NO_LEADER


def leader_changes(history: DataFrame, span: RunSpan) -> list[LeaderChange]:
    """The leader watcher's rows in recorded order: one per change, so a handful per run."""
    rows = (
        history.filter(
            (F.col("process") == LEADER_WATCH_PROCESS)
            & (F.col("f") == LEADER)
            & F.col("partition").isNotNull()
        )
        .select("index", "wall_time", "topic", "partition", "key", "detail")
        .orderBy("index")
        .collect()
    )
    changes = []
    for row in rows:
        detail = parse_detail(row["detail"])
        isr = detail.get("isr") or []
        changes.append(
            LeaderChange(
                at=float(row["wall_time"]) - span.start_wall,
                topic=row["topic"],
                partition=int(row["partition"]),
                leader=_leader_of(row["key"], detail),
                isr=tuple(int(b) for b in isr) if isinstance(isr, list) else (),
            )
        )
    return changes


def leader_series(
    changes: Sequence[LeaderChange], run_end: float
) -> dict[str, tuple[list[float], list[int]]]:
    """Per partition (labelled `p<N>`, or `<topic>/p<N>` when there are several topics), the step points
    of its leader, extended to the end of the run so the last leader is drawn for as long as it held."""
    topics = {change.topic for change in changes}
    series: dict[str, tuple[list[float], list[int]]] = {}
    for change in sorted(changes, key=lambda c: (str(c.topic), c.partition)):
        label = f"p{change.partition}" if len(topics) == 1 else f"{change.topic}/p{change.partition}"
        times, leaders = series.setdefault(label, ([], []))
        times.append(change.at)
        leaders.append(change.leader)
    for times, leaders in series.values():
        times.append(max(run_end, times[-1]))
        leaders.append(leaders[-1])
    return series


@dataclass(frozen=True)
class Timeline:
    """Everything the report draws from the history; the rest comes from results.json."""

    span: RunSpan
    throughput: Throughput
    latencies: Latencies
    leaders: list[LeaderChange]


def timeline(history: DataFrame, latency_limit: int = LATENCY_POINT_LIMIT) -> Timeline | None:
    span = run_span(history)
    if span is None:
        return None
    return Timeline(
        span=span,
        throughput=throughput(history, span),
        latencies=latencies(history, span, latency_limit),
        leaders=leader_changes(history, span),
    )


# --- per-partition losses, from results.json ---------------------------------------------------------------


@dataclass(frozen=True)
class UnreadByPartition:
    """`lost-write` and `unseen` counts per partition (every partition of the topic, losses or not)."""

    partitions: list[str]
    lost: list[int]
    unseen: list[int]

    @property
    def any(self) -> bool:
        return any(self.lost) or any(self.unseen)


def _partition_order(key: str) -> tuple[int, int | str]:
    return (0, int(key)) if key.lstrip("-").isdigit() else (1, key)


def unread_by_partition(results: Mapping[str, Any], config: Mapping[str, Any]) -> UnreadByPartition | None:
    """None when results.json predates the per-partition counts (re-checking the run adds them)."""
    anomalies = results.get("anomalies", {})
    lost = anomalies.get(LOST_WRITE, {}).get("by_partition")
    unseen = anomalies.get(UNSEEN, {}).get("by_partition")
    if lost is None or unseen is None:
        return None
    declared = config.get("partitions")
    keys = {str(p) for p in range(declared)} if isinstance(declared, int) else set()
    keys |= set(lost) | set(unseen)
    partitions = sorted(keys, key=_partition_order)
    return UnreadByPartition(
        partitions=partitions,
        lost=[int(lost.get(p, 0)) for p in partitions],
        unseen=[int(unseen.get(p, 0)) for p in partitions],
    )


# --- plots --------------------------------------------------------------------------------------------------


def _figure(height: float) -> tuple[Figure, Axes]:
    # The Agg canvas directly, not pyplot: no global figure state and no display needed in CI or threads.
    fig = Figure(figsize=(PLOT_WIDTH, height), dpi=100)
    return fig, fig.add_subplot()


def _legend_beside(ax: Axes, **options: Any) -> None:
    """The legend right of the plot: inside it would cover the fault labels or the points themselves."""
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, borderaxespad=0, **options)


def shade_faults(ax: Axes, faults: Sequence[Mapping[str, Any]], span: RunSpan) -> None:
    """Shades each fault's interval and labels it with its instance key, on any plot whose x axis is
    seconds since the run start: every timeline of the report is read against the same faults."""
    label_at = blended_transform_factory(ax.transData, ax.transAxes)
    for row, fault in enumerate(f for f in faults if f.get("start_wall") is not None):
        begin = float(fault["start_wall"]) - span.start_wall
        # A fault never stopped lasted until the run ended.
        stop = fault.get("stop_wall")
        finish = float(stop) - span.start_wall if stop is not None else span.length
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
    ax.set_xlim(0, max(span.length, 1.0))
    ax.set_xlabel("seconds since run start")


def throughput_png(series: Throughput, span: RunSpan, faults: Sequence[Mapping[str, Any]]) -> str:
    """Acknowledged (and failed or indeterminate) sends per second, faults shaded; a base64 PNG."""
    fig, ax = _figure(3.6)
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
    shade_faults(ax, faults, span)
    ax.set_ylim(bottom=0)
    ax.set_ylabel("sends per second")
    ax.legend(loc="lower right", fontsize=8)
    return png_base64(fig)


def latency_title(series: Latencies) -> str:
    """Says whether every send is drawn, and if not, how the sample was chosen (two lines when sampled)."""
    shown = len(series.points)
    if not series.sampled:
        return f"Latency of every send ({shown:,})"
    kept = "; every failed or indeterminate send kept" if series.every_unacknowledged_kept else ""
    return (
        f"Latency of a deterministic sample: {shown:,} of {series.sends:,} sends shown\n"
        f"(chosen by a hash of process and value{kept})"
    )


def latency_png(series: Latencies, span: RunSpan, faults: Sequence[Mapping[str, Any]]) -> str:
    """Each send's latency at its invoke time, coloured by outcome, on a log scale; faults shaded."""
    fig, ax = _figure(4.2)
    timed = [p for p in series.points if p.latency_ms is not None]
    for outcome in OUTCOMES:
        for kind, marker, note in ((COMPLETED, "o", ""), (NEVER_COMPLETED, "^", ", never completed")):
            chosen = [p for p in timed if p.outcome == outcome and p.kind == kind]
            if not chosen:
                continue
            ax.scatter(
                [p.at for p in chosen],
                [max(p.latency_ms or 0.0, LATENCY_FLOOR_MS) for p in chosen],
                s=6 if kind == COMPLETED else 14,
                marker=marker,
                color=OUTCOME_COLOURS[outcome],
                alpha=0.6,
                linewidths=0,
                rasterized=True,
                label=f"{outcome}{note} ({len(chosen):,})",
            )
    orphans = [p for p in series.points if p.latency_ms is None]
    if orphans:
        # Latency unknown: a tick on the bottom edge at the completion time, in its outcome's colour.
        at_bottom = blended_transform_factory(ax.transData, ax.transAxes)
        ax.scatter(
            [p.at for p in orphans],
            [0.02] * len(orphans),
            transform=at_bottom,
            marker="|",
            s=40,
            color=[OUTCOME_COLOURS.get(p.outcome, DEFAULT_COLOUR) for p in orphans],
            label=f"completed, no invoke recorded ({len(orphans):,})",
        )
    ax.set_yscale("log")
    if timed:
        # Headroom above the slowest send, so the fault labels along the top do not hide it.
        slowest = max(max(p.latency_ms or 0.0, LATENCY_FLOOR_MS) for p in timed)
        ax.set_ylim(top=slowest * 6)
    shade_faults(ax, faults, span)
    ax.set_ylabel("latency (ms, log scale)")
    ax.set_title(latency_title(series), fontsize=9)
    if series.points:
        _legend_beside(ax, markerscale=2)
    return png_base64(fig)


def unread_png(counts: UnreadByPartition) -> str:
    """`lost-write` and `unseen` per partition, side by side, each bar labelled with its count."""
    fig, ax = _figure(3.2)
    width = 0.4
    xs = list(range(len(counts.partitions)))
    for shift, values, colour, name in (
        (-1, counts.lost, "#d62728", LOST_WRITE),
        (1, counts.unseen, "#7f7f7f", UNSEEN),
    ):
        bars = ax.bar([x + shift * width / 2 for x in xs], values, width, color=colour, label=name)
        ax.bar_label(bars, labels=[str(v) if v else "" for v in values], fontsize=8)
    ax.set_xticks(xs, counts.partitions)
    ax.set_xlabel("partition (where Kafka acknowledged the write)")
    ax.set_ylabel("acknowledged writes")
    ax.set_ylim(0, max([*counts.lost, *counts.unseen, 1]) * 1.15)
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.legend(loc="upper right", fontsize=8)
    return png_base64(fig)


def leaders_png(changes: Sequence[LeaderChange], span: RunSpan, faults: Sequence[Mapping[str, Any]]) -> str:
    """The leader of each partition over time, one step line per partition; faults shaded.

    Lines that share a leader would hide each other, so each partition is nudged a little off the broker's
    line; -1 (no leader) is drawn as `none`.
    """
    series = leader_series(changes, span.length)
    fig, ax = _figure(max(2.8, 1.2 + 0.45 * len({c.leader for c in changes})))
    count = len(series)
    for n, (label, (times, leaders)) in enumerate(series.items()):
        nudge = (n - (count - 1) / 2) * min(0.08, 0.5 / max(count, 1))
        ax.step(times, [leader + nudge for leader in leaders], where="post", linewidth=1.4, label=label)
    brokers = sorted({c.leader for c in changes})
    ax.set_yticks(brokers, ["none" if b == NO_LEADER else str(b) for b in brokers])
    ax.set_ylim(min(brokers) - 0.6, max(brokers) + 0.6)
    shade_faults(ax, faults, span)
    ax.set_ylabel("leader (broker id)")
    _legend_beside(ax, ncols=1 + (count - 1) // 12)
    return png_base64(fig)


# --- the page -----------------------------------------------------------------------------------------------


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


def read_results(run_dir: Path) -> dict[str, Any]:
    """A run's results.json; FileNotFoundError names the fix when the run was never checked."""
    path = run_dir / RESULTS_NAME
    if not path.exists():
        raise FileNotFoundError(
            f"{run_dir} has no {RESULTS_NAME}; check the run first: kchaos check {run_dir}"
        )
    with path.open(encoding="utf-8") as fh:
        results: dict[str, Any] = json.load(fh)
    return results


def render_report(results: Mapping[str, Any], config: Mapping[str, Any], drawn: Timeline | None) -> str:
    env = Environment(loader=FileSystemLoader(TEMPLATES), autoescape=select_autoescape(["html"]))
    env.filters["cell"] = _cell
    faults = list(results.get("faults", []))
    start = drawn.span.start_wall if drawn is not None else None
    unread = unread_by_partition(results, config)
    plots: dict[str, str | None] = {"latency": None, "throughput": None, "leaders": None}
    if drawn is not None:
        plots["latency"] = (
            latency_png(drawn.latencies, drawn.span, faults) if drawn.latencies.points else None
        )
        plots["throughput"] = throughput_png(drawn.throughput, drawn.span, faults)
        plots["leaders"] = leaders_png(drawn.leaders, drawn.span, faults) if drawn.leaders else None
    plots["unread"] = unread_png(unread) if unread is not None and unread.any else None
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
        drawn=drawn,
        plots=plots,
        latency_title=latency_title(drawn.latencies) if drawn is not None else None,
        unread=unread,
        leader_changes=len(drawn.leaders) if drawn is not None else 0,
    )


def write_report(run_dir: Path, results: Mapping[str, Any], spark: SparkSession | None = None) -> Path:
    """Writes `run_dir/report.html` from a run's results and history."""
    history = load_history(spark or spark_session(), run_dir)
    html = render_report(results, _read_config(run_dir), timeline(history))
    target = run_dir / REPORT_NAME
    target.write_text(html, encoding="utf-8")
    return target


def regenerate_report(run_dir: Path, spark: SparkSession | None = None) -> Path:
    """Rewrites a checked run's report from its results.json and history, without checking again."""
    return write_report(run_dir, read_results(run_dir), spark)
