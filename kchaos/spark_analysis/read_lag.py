"""How far behind the writers the readers were, over the run (issue 49, after Jepsen's Kafka checker's
real-time lag and unseen plots): for the report, drawn against the faults.

- **Read lag**: each record a reader (a consumer, a group member, an eos processor or a read-write
  transaction's poll) was handed during the run, the time from its acknowledgement to the reader's first
  read of it; per reader and bin of read time, the longest. A reader cut off or frozen by a fault shows as a
  ramp: what it reads afterwards was acknowledged long before.
- **Unseen over time**: per bin, the acknowledged records no reader had yet been handed: acknowledged
  before the bin's end and first read, if ever, after it. Records still unseen at the end of the run are the
  `unseen` and `lost-write` anomalies' candidates; a plateau during a fault is the readers falling behind.

An acknowledged record is a plain send's `ok` or a committed transaction's `txn-send` `ok` (a record of a
transaction that aborted is never to be read at read_committed, so it is not waiting to be seen), of a
topic some reader read during the run (an eos run's output topic is read only at the end). The
final read after the run is no reader here: it reads everything at the end. Times are wall-clock seconds
since the run started, as every plot's; what reaches the driver is one row per bin (and per reader), so a
long run costs no more memory than a short one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from kchaos.checkers.passes.frames import is_nemesis
from kchaos.model.events import OK, POLL, SEND, TXN_COMMIT, TXN_POLL, TXN_SEND
from kchaos.spark_analysis.timeline import RunSpan, bin_seconds

#: Readers drawn one line each on the lag plot, the slowest first; the rest are left out (and said).
READERS_DRAWN = 8


@dataclass(frozen=True)
class ReadLag:
    """Per reader, the longest lag (seconds) of its first reads in each bin of `width` seconds from its
    first read to its last (`seconds`: where each bin starts; NaN: it read nothing new then); `left_out`:
    readers not drawn."""

    readers: dict[str, tuple[list[int], list[float]]]
    width: int
    left_out: int = 0


@dataclass(frozen=True)
class UnseenOverTime:
    """The acknowledged records no reader had been handed yet, at the end of each bin of `width` seconds."""

    seconds: list[int]
    unseen: list[int]
    width: int


def _acknowledged(history: DataFrame) -> DataFrame:
    """`value`, `acked` (wall time) of every acknowledged plain send and committed transaction's record."""
    ok = (F.col("type") == OK) & ~is_nemesis()
    committed = history.filter(ok & (F.col("f") == TXN_COMMIT)).select(F.col("key").alias("txn")).distinct()
    plain = history.filter(ok & (F.col("f") == SEND) & F.col("value").isNotNull())
    in_transactions = (
        history.filter(ok & (F.col("f") == TXN_SEND) & F.col("value").isNotNull())
        .join(committed, F.col("key") == F.col("txn"), "left_semi")
    )  # fmt: skip
    return (
        plain.select("value", "topic", "wall_time")
        .unionByName(in_transactions.select("value", "topic", "wall_time"))
        .groupBy("value", "topic")
        .agg(F.min("wall_time").alias("acked"))
    )


def _reads(history: DataFrame) -> DataFrame:
    return history.filter(
        F.col("f").isin(POLL, TXN_POLL) & (F.col("type") == OK) & ~is_nemesis() & F.col("value").isNotNull()
    )


def _first_reads(history: DataFrame) -> DataFrame:
    """`process`, `value`, `read` (wall time): each reader's first read of each record during the run."""
    return _reads(history).groupBy("process", "value").agg(F.min("wall_time").alias("read"))


def _bin(at: Column, span: RunSpan, width: int) -> Column:
    """The bin of a wall time: its seconds since the run started, over the bin width."""
    return F.floor((at - F.lit(span.start_wall)) / F.lit(width)).cast("long")


def read_lag(history: DataFrame, span: RunSpan) -> ReadLag | None:
    """The read lag series; None when no reader read during the run."""
    width = bin_seconds(span.length)
    joined = _first_reads(history).join(_acknowledged(history), "value")
    rows = (
        joined.groupBy("process", _bin(F.col("read"), span, width).alias("bin"))
        .agg(F.max(F.greatest(F.col("read") - F.col("acked"), F.lit(0.0))).alias("lag"))
        .collect()
    )
    if not rows:
        return None
    series: dict[str, dict[int, float]] = {}
    for row in rows:
        series.setdefault(str(row["process"]), {})[int(row["bin"])] = float(row["lag"])
    slowest = sorted(series, key=lambda process: -max(series[process].values()))
    drawn = {}
    for process in slowest[:READERS_DRAWN]:
        # Every bin from its first read to its last, NaN where it read nothing: the line breaks there rather
        # than holding its last lag through a fault that stopped it.
        bins = range(min(series[process]), max(series[process]) + 1)
        drawn[process] = ([n * width for n in bins], [series[process].get(n, math.nan) for n in bins])
    return ReadLag(drawn, width, max(0, len(series) - READERS_DRAWN))


def unseen_over_time(history: DataFrame, span: RunSpan) -> UnseenOverTime | None:
    """The unseen series; None when no reader read during the run (then every record is unseen until
    the final read, which says nothing about the run)."""
    first_read = _first_reads(history).groupBy("value").agg(F.min("read").alias("read"))
    if first_read.isEmpty():
        return None
    return _unseen(history, span, first_read)


def _unseen(history: DataFrame, span: RunSpan, first_read: DataFrame) -> UnseenOverTime:
    width = bin_seconds(span.length)
    # Only the topics someone read during the run: an eos run's output topic has no reader until the final
    # read, and its records would count as unseen throughout.
    read_topics = _reads(history).select("topic").distinct()
    records = _acknowledged(history).join(read_topics, "topic", "left_semi").join(first_read, "value", "left")
    # Read before its producer heard the acknowledgement (a reader may be handed a record first): seen as
    # soon as it counts as acknowledged. Never read: unseen to the end.
    seen = F.when(F.col("read").isNotNull(), _bin(F.greatest("read", "acked"), span, width))
    steps = (
        records.select(_bin(F.col("acked"), span, width).alias("bin"), F.lit(1).alias("step"))
        .unionByName(
            records.select(seen.alias("bin"), F.lit(-1).alias("step")).filter(F.col("bin").isNotNull())
        )
        .groupBy("bin")
        .agg(F.sum("step").alias("step"))
        .collect()
    )
    change = {int(row["bin"]): int(row["step"]) for row in steps}
    bins = range(int(span.length) // width + 1)
    seconds: list[int] = []
    unseen: list[int] = []
    total = 0
    for n in bins:
        total += change.get(n, 0)
        seconds.append(n * width)
        unseen.append(total)
    return UnseenOverTime(seconds, unseen, width)


@dataclass(frozen=True)
class Reading:
    """What the report draws of the readers: their lag and the records none had seen, each None when no
    reader read during the run."""

    lag: ReadLag | None
    unseen: UnseenOverTime | None


def reading(history: DataFrame, span: RunSpan) -> Reading:
    """Both series, in two Spark jobs (one when no reader read): every run's report draws them."""
    lag = read_lag(history, span)
    if lag is None:
        return Reading(None, None)
    first_read = _first_reads(history).groupBy("value").agg(F.min("read").alias("read"))
    return Reading(lag, _unseen(history, span, first_read))
