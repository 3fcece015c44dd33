"""The per-run report's plots, each a base64 PNG: throughput, latency, leaders, the readers' lag and
unseen records, and per-partition losses.

They are Jepsen's: every timeline has the same x axis (seconds since the run's first event) with each
fault's interval shaded and labelled, so a latency spike, a throughput dip and a leader change can be read
against the fault that caused them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator
from matplotlib.transforms import blended_transform_factory

from kchaos.checkers.rules.anomaly_names import LOST_WRITE, UNSEEN
from kchaos.model.events import FAIL, INFO, NO_LEADER, OK
from kchaos.model.fault_table import KINDS
from kchaos.spark_analysis.figures import png_base64
from kchaos.spark_analysis.read_lag import ReadLag, UnseenOverTime
from kchaos.spark_analysis.sends import OUTCOMES
from kchaos.spark_analysis.timeline import (
    COMPLETED,
    NEVER_COMPLETED,
    Latencies,
    LeaderChange,
    RunSpan,
    Throughput,
)
from kchaos.spark_analysis.unread import UnreadByPartition

#: Shading per fault kind, the fault table's; a kind the table lacks (a history written elsewhere) and an
#: unknown outcome are grey, which no kind has, so they still show up and are not mistaken for one.
KIND_COLOURS = {kind.name: kind.colour for kind in KINDS.values()}
DEFAULT_COLOUR = "#7f7f7f"

#: Send outcomes as Jepsen colours them: ok blue, fail pink, info (indeterminate) orange.
OUTCOME_COLOURS = {OK: "#4a90d9", FAIL: "#e6007e", INFO: "#ff9f00"}

#: Latencies are drawn on a log scale; a zero (a converted history with one timestamp per send) sits here.
LATENCY_FLOOR_MS = 0.01

PLOT_WIDTH = 10.0


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
    ax.set_ylabel(
        "sends per second" if series.width == 1 else f"sends per second (mean per {series.width} s)"
    )
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


def read_lag_png(lag: ReadLag, span: RunSpan, faults: Sequence[Mapping[str, Any]]) -> str:
    """Each reader's longest lag per bin (acknowledgement to its first read), one line each; faults shaded."""
    fig, ax = _figure(3.4)
    for process, (seconds, lags) in lag.readers.items():
        ax.plot(seconds, lags, drawstyle="steps-post", linewidth=1.2, label=process)
    shade_faults(ax, faults, span)
    ax.set_ylim(bottom=0)
    ax.set_ylabel(
        "seconds from ack to read" if lag.width == 1 else f"seconds from ack to read (max per {lag.width} s)"
    )
    _legend_beside(ax, ncols=1)
    return png_base64(fig)


def unseen_png(series: UnseenOverTime, span: RunSpan, faults: Sequence[Mapping[str, Any]]) -> str:
    """The acknowledged records no reader had been handed yet, over the run; faults shaded."""
    fig, ax = _figure(3.0)
    ax.plot(series.seconds, series.unseen, drawstyle="steps-post", color="#7f7f7f", label=UNSEEN)
    shade_faults(ax, faults, span)
    ax.set_ylim(bottom=0)
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylabel("acknowledged, not yet read")
    return png_base64(fig)
