"""What Spark reduces a run's history to for its report: the run's span, sends per second, one point per
send for the latency plot, and the leader watcher's few change rows.

Only what is drawn is collected to the driver: sends per second, a deterministic sample of latency points
past `LATENCY_POINT_LIMIT`, and a handful of leader changes per run, so a long run's report costs no more
memory than a short one's.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from kchaos.checkers.passes.frames import count_where
from kchaos.model.events import INFO, INVOKE, LEADER, LEADER_WATCH_PROCESS, NO_LEADER, OK
from kchaos.model.history_schema import parse_detail
from kchaos.spark_analysis.sends import OUTCOMES, is_send, send_pairs

#: Above this many sends the latency plot shows a deterministic sample: more points only cost time to
#: collect and draw, and hide each other anyway.
LATENCY_POINT_LIMIT = 200_000

#: The kinds of latency point: a send invoked and completed; invoked, never completed (drawn as `info`,
#: its latency running to the end of the run); completed with no invoke recorded (latency unknown).
COMPLETED = "completed"
NEVER_COMPLETED = "never-completed"
NO_INVOKE = "no-invoke"


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
        count_where(is_send() & (F.col("type") == INVOKE)).alias("invoked"),
        count_where(is_send() & (F.col("type") == OK)).alias("acknowledged"),
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


#: The most points the throughput plot has, whatever the span: a run of an hour is drawn per 2 s. The
#: axis used to have one point per second of the span, so a history with one stray time (a `wall_time` of
#: 1, a Verifiable log line stamped 1 ms) built a list of 1.7e9 points and was killed at 23 GB.
THROUGHPUT_POINT_LIMIT = 2_000


def bin_seconds(length: float, limit: int = THROUGHPUT_POINT_LIMIT) -> int:
    """The width of a throughput bin: one second, or as many as keep a span of `length` within `limit`
    points."""
    if not math.isfinite(length) or length < 0:
        raise ValueError(f"a run's span is a finite number of seconds, not {length}")
    return max(1, math.ceil((math.floor(length) + 1) / limit))


@dataclass(frozen=True)
class Throughput:
    """Send outcomes per second since the first event of the run, averaged over bins of `width` seconds
    (one second unless the span needs more than `THROUGHPUT_POINT_LIMIT` of them); `seconds` holds where
    each bin starts, and bins with no sends are zero-filled."""

    seconds: list[int]
    acknowledged: list[float]
    unacknowledged: list[float]
    width: int = 1


def binned(
    counts: Mapping[int, tuple[int, int]], length: float, limit: int = THROUGHPUT_POINT_LIMIT
) -> Throughput:
    """The throughput series from send outcomes counted per bin (`counts`: bin number to acknowledged and
    other completions), for a span of `length` seconds; never more than `limit` + 1 points."""
    width = bin_seconds(length, limit)
    bins = range(math.floor(length) // width + 1)
    return Throughput(
        seconds=[n * width for n in bins],
        acknowledged=[counts.get(n, (0, 0))[0] / width for n in bins],
        unacknowledged=[counts.get(n, (0, 0))[1] / width for n in bins],
        width=width,
    )


def throughput(history: DataFrame, span: RunSpan) -> Throughput:
    """Aggregates send completions by wall-clock bin: Spark counts per bin, so what reaches the driver is
    bounded by the bins, not by the span or the rows."""
    width = bin_seconds(span.length)
    completions = history.filter(is_send() & F.col("type").isin(*OUTCOMES))
    offset = F.col("wall_time") - F.lit(span.start_wall)
    per_bin = (
        completions.groupBy(F.floor(F.floor(offset) / F.lit(width)).cast("long").alias("bin"))
        .agg(
            F.sum(F.when(F.col("type") == OK, 1).otherwise(0)).alias("acknowledged"),
            F.sum(F.when(F.col("type") != OK, 1).otherwise(0)).alias("unacknowledged"),
        )
        .collect()
    )
    counts = {int(row["bin"]): (int(row["acknowledged"]), int(row["unacknowledged"])) for row in per_bin}
    return binned(counts, span.length)


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
        F.coalesce("done.type", F.lit(INFO)).alias("outcome"),
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
        keep = F.when(F.col("outcome") == OK, bucket < ack_fraction).otherwise(bucket < other_fraction)
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
