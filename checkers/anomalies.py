"""The anomaly definitions (design.md §3), each a pure function from a history's views to a finding.

A history can be millions of rows, so nothing here collects it: counts are Spark aggregations, and only
the first `max_examples` offending rows (in a fixed order, so two checks of one history agree) reach the
driver. Examples are shaped for a person retracing the anomaly by hand: the acknowledged send, where it
should be, and what was read there instead.

Adding an anomaly means one function `(HistoryViews, int) -> AnomalyFinding` and one entry in `ANOMALIES`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import chain, zip_longest
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from checkers.frames import TPO, HistoryViews
from checkers.names import DUPLICATE, INCONSISTENT_OFFSET, LOST_WRITE, UNSEEN


@dataclass(frozen=True)
class AnomalyFinding:
    """How often one anomaly occurred in a history, with the first few occurrences spelled out."""

    name: str
    count: int
    examples: list[dict[str, Any]] = field(default_factory=list)


def _collect(frame: DataFrame) -> list[dict[str, Any]]:
    """Only ever called on frames already cut to `max_examples` rows."""
    return [row.asDict(recursive=True) for row in frame.collect()]


def _tpo_struct(prefix: str = "") -> Any:
    return F.struct(*(F.col(prefix + name).alias(name) for name in TPO))


def _values_at_offsets(reads: DataFrame) -> DataFrame:
    """The distinct values read at each topic-partition-offset, sorted so examples are stable."""
    return reads.groupBy(*TPO).agg(F.array_sort(F.collect_set("value")).alias("values"))


def _unread_acknowledged(views: HistoryViews) -> DataFrame:
    """Acknowledged sends whose value no read returned, next to the highest offset read in their partition.

    The split between `lost-write` and `unseen` is only about where such a send sits relative to that
    horizon, so both are cut from this one frame.
    """
    read_values = views.reads.select("value").distinct()
    horizon = views.reads.groupBy("topic", "partition").agg(F.max("offset").alias("highest_read_offset"))
    return views.acknowledged.join(read_values, on="value", how="left_anti").join(
        horizon, on=["topic", "partition"], how="left"
    )


def _send_example_columns() -> list[Any]:
    return [
        F.col("value"),
        F.col("topic"),
        F.col("partition"),
        F.col("offset"),
        F.col("index").alias("ok_index"),
        F.col("wall_time").alias("ok_wall_time"),
        F.col("process"),
        F.col("highest_read_offset"),
    ]


def lost_writes(views: HistoryViews, max_examples: int) -> AnomalyFinding:
    """`lost-write`: an acknowledged send at or below the highest offset read from its partition, never read.

    Reads got past its offset, so the value had every chance to be seen; that it never was means the
    log no longer holds it there (or anywhere). Each example shows what was read at the acknowledged
    offset instead and at the read horizon, which usually points at the truncation that replaced it.
    """
    lost = _unread_acknowledged(views).filter(F.col("offset") <= F.col("highest_read_offset"))
    count = lost.count()
    first = lost.orderBy("index").limit(max_examples)
    values_at = _values_at_offsets(views.reads)
    at_offset = values_at.withColumnRenamed("values", "read_at_offset")
    at_horizon = values_at.select(
        "topic",
        "partition",
        F.col("offset").alias("highest_read_offset"),
        F.col("values").alias("read_at_highest_offset"),
    )
    examples = (
        first.join(at_offset, on=list(TPO), how="left")
        .join(at_horizon, on=["topic", "partition", "highest_read_offset"], how="left")
        .orderBy("index")
        .select(
            *_send_example_columns(),
            F.coalesce(F.col("read_at_offset"), F.array().cast("array<string>")).alias("read_at_offset"),
            F.col("read_at_highest_offset"),
        )
    )
    return AnomalyFinding(LOST_WRITE, count, _collect(examples))


def unseen(views: HistoryViews, max_examples: int) -> AnomalyFinding:
    """`unseen`: an acknowledged send never read and above every offset read from its partition.

    Unlike a `lost-write`, nothing read got past it: either the final read stopped short, or the
    partition's tail (this send included) was truncated and nothing was written after it. A partition
    with no reads at all puts every acknowledged send to it here.
    """
    missing = _unread_acknowledged(views).filter(
        F.col("highest_read_offset").isNull() | (F.col("offset") > F.col("highest_read_offset"))
    )
    count = missing.count()
    examples = missing.orderBy("index").limit(max_examples).select(*_send_example_columns())
    return AnomalyFinding(UNSEEN, count, _collect(examples))


def duplicates(views: HistoryViews, max_examples: int) -> AnomalyFinding:
    """`duplicate`: one value read at more than one distinct topic-partition-offset.

    Re-reading one offset (a second consumer, a rebalance) is not a duplicate; the value must occupy two
    places in the log, as a producer retry that re-appends a record does. Counted once per value.
    """
    per_value = (
        views.reads.groupBy("value")
        .agg(
            F.array_sort(F.collect_set(_tpo_struct())).alias("read_at"),
            F.min("index").alias("first_read_index"),
        )
        .filter(F.size("read_at") > 1)
    )
    count = per_value.count()
    acked_at = views.acknowledged.select("value", _tpo_struct().alias("acked_at"))
    examples = (
        per_value.orderBy("first_read_index", "value")
        .limit(max_examples)
        .join(acked_at, on="value", how="left")
        .orderBy("first_read_index", "value")
        .select("value", "read_at", "acked_at", "first_read_index")
    )
    return AnomalyFinding(DUPLICATE, count, _collect(examples))


def _values_differ(views: HistoryViews, max_examples: int) -> tuple[int, list[dict[str, Any]]]:
    """Offsets at which reads returned different values: the log held two histories at one place."""
    per_offset = (
        views.reads.groupBy(*TPO)
        .agg(
            F.array_sort(F.collect_set("value")).alias("values"),
            F.min("index").alias("first_read_index"),
        )
        .filter(F.size("values") > 1)
    )
    count = per_offset.count()
    first = per_offset.orderBy(*TPO).limit(max_examples)
    readers = (
        views.reads.join(first.select(*TPO), on=list(TPO), how="left_semi")
        .groupBy(*TPO, "value")
        .agg(F.array_sort(F.collect_set("process")).alias("readers"))
        .groupBy(*TPO)
        .agg(F.array_sort(F.collect_list(F.struct("value", "readers"))).alias("reads"))
    )
    acked_here = (
        views.acknowledged.join(first.select(*TPO), on=list(TPO), how="left_semi")
        .groupBy(*TPO)
        .agg(F.array_sort(F.collect_set("value")).alias("acked_values"))
    )
    examples = (
        first.join(readers, on=list(TPO), how="left")
        .join(acked_here, on=list(TPO), how="left")
        .orderBy(*TPO)
        .select(
            F.lit("values-differ").alias("kind"),
            *TPO,
            "values",
            "reads",
            F.coalesce(F.col("acked_values"), F.array().cast("array<string>")).alias("acked_values"),
            "first_read_index",
        )
    )
    return count, _collect(examples)


def _offset_differs(views: HistoryViews, max_examples: int) -> tuple[int, list[dict[str, Any]]]:
    """Values read only at places other than where their send was acknowledged."""
    acked = views.acknowledged.select(
        "value",
        F.col("topic").alias("acked_topic"),
        F.col("partition").alias("acked_partition"),
        F.col("offset").alias("acked_offset"),
        F.col("index").alias("ok_index"),
    )
    # A send acknowledged without an offset cannot be said to have moved, so it counts as read in place.
    at_acked = F.coalesce(
        (F.col("topic") == F.col("acked_topic"))
        & (F.col("partition") == F.col("acked_partition"))
        & (F.col("offset") == F.col("acked_offset")),
        F.lit(True),
    )
    moved = (
        views.reads.join(acked, on="value", how="inner")
        .groupBy("value", "acked_topic", "acked_partition", "acked_offset", "ok_index")
        .agg(
            F.max(at_acked.cast("int")).alias("read_at_acked"),
            F.array_sort(F.collect_set(_tpo_struct())).alias("read_at"),
            F.min("index").alias("first_read_index"),
        )
        .filter(F.col("read_at_acked") == 0)
    )
    count = moved.count()
    examples = (
        moved.orderBy("first_read_index", "value")
        .limit(max_examples)
        .select(
            F.lit("offset-differs").alias("kind"),
            "value",
            _tpo_struct("acked_").alias("acked_at"),
            "read_at",
            "ok_index",
            "first_read_index",
        )
    )
    return count, _collect(examples)


def inconsistent_offsets(views: HistoryViews, max_examples: int) -> AnomalyFinding:
    """`inconsistent-offset`: reads disagree with each other or with the acknowledgement about an offset.

    Two cases, counted together (examples carry `kind` to tell them apart):
    - `values-differ`: one topic-partition-offset read with different values, across consumers or reads
      (counted once per offset);
    - `offset-differs`: a value read at an offset other than the one its send was acknowledged at, and
      never at the acknowledged one (counted once per value).

    Refinement of design.md §3: a value read at its acknowledged offset *and* elsewhere is a `duplicate`
    only. The copy at the acknowledged offset shows the acknowledgement was truthful; the extra copy is a
    re-append, which `duplicate` already counts, and counting it twice would charge a producer retry as a
    consistency failure.
    """
    differ_count, differ_examples = _values_differ(views, max_examples)
    moved_count, moved_examples = _offset_differs(views, max_examples)
    # Alternate the two kinds so a flood of one cannot hide the other from the examples.
    merged = [
        example
        for example in chain.from_iterable(zip_longest(differ_examples, moved_examples))
        if example is not None
    ]
    return AnomalyFinding(INCONSISTENT_OFFSET, differ_count + moved_count, merged[:max_examples])


AnomalyCheck = Callable[[HistoryViews, int], AnomalyFinding]

#: Every anomaly the checker reports, in report order. The key is the one name used everywhere.
ANOMALIES: dict[str, AnomalyCheck] = {
    LOST_WRITE: lost_writes,
    UNSEEN: unseen,
    DUPLICATE: duplicates,
    INCONSISTENT_OFFSET: inconsistent_offsets,
}


def find_anomalies(history: DataFrame, max_examples: int = 10) -> dict[str, AnomalyFinding]:
    """Runs every registered anomaly over one history."""
    views = HistoryViews.of(history).cache()
    try:
        return {name: check(views, max_examples) for name, check in ANOMALIES.items()}
    finally:
        views.unpersist()
