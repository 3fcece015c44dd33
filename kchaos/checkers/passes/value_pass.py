"""The by-value pass: everything about one value (`lost-write`, `unseen`, `duplicate`, the `offset-differs`
half of `inconsistent-offset`, `truncated-read`), one explicit repartitioning by value.

Aggregated in two levels, first per place (value, topic, partition, offset), then per value, with numeric
aggregates only (see `kchaos.checkers.passes.history_passes` for why).
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import reduce

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from kchaos.checkers.passes.frames import ACK, FINAL_READ, POLL, TP, TPO, HistoryViews, count_where, flag
from kchaos.checkers.passes.pass_flags import flagged
from kchaos.checkers.rules.anomaly_names import DUPLICATE, LOST_WRITE, OFFSET_DIFFERS, TRUNCATED_READ, UNSEEN

VALUE_HASH = "value_hash"


def _flag(condition: Column) -> Column:
    """1 where `condition` holds, 0 otherwise (null included): what `max` turns into "any row does"."""
    return F.coalesce(condition, F.lit(False)).cast("int")


def _all_not_null(columns: Iterable[str]) -> Column:
    return reduce(lambda a, b: a & b, (F.col(name).isNotNull() for name in columns))


def by_value(views: HistoryViews) -> DataFrame:
    """One row per value (acknowledged or read), marked with what happened to it.

    First per place (value, topic, partition, offset): was it acknowledged there, how often read there.
    Then per value. Flags: `lost_write` / `unseen` (acknowledged, never read; the acknowledged offset at or
    below / above its partition's read horizon), `duplicate` (read at two or more places), `offset_differs`
    (read, but never at its acknowledged place), `truncated_read` (polled in a partition the final read
    covered, absent from the final read). Carries the acknowledged place and the first covered poll's
    place, so examples can look up what was read there.
    """
    rows = (
        views.rows(ACK, POLL, FINAL_READ)
        .join(F.broadcast(views.partitions), on=list(TP), how="left")
        .withColumn(VALUE_HASH, F.xxhash64("value"))
        .repartition(VALUE_HASH)
    )
    ack = F.col("kind") == ACK
    read = ~ack
    covered_poll = (F.col("kind") == POLL) & F.col("final_read_covered")
    places = rows.groupBy(VALUE_HASH, "value", *TPO).agg(
        count_where(ack).alias("acks_here"),
        count_where(read).alias("reads_here"),
        F.min(F.when(read, F.col("index"))).alias("first_read_here"),
        F.max(_flag(F.col("kind") == FINAL_READ)).alias("final_read_here"),
        F.min(F.when(covered_poll, F.col("index"))).alias("covered_poll_here"),
        F.min(F.when(ack, F.col("index"))).alias("ok_index_here"),
        F.max("highest_read_offset").alias("horizon"),
    )
    acked = F.col("acks_here") > 0
    placed = _all_not_null(TPO)
    values = places.groupBy(VALUE_HASH, "value").agg(
        F.sum("acks_here").alias("acks"),
        F.sum("reads_here").alias("reads"),
        count_where(F.col("reads_here") > 0).alias("places_read"),
        F.min("first_read_here").alias("first_read_index"),
        F.max("final_read_here").alias("in_final_read"),
        F.min("covered_poll_here").alias("covered_poll_index"),
        F.min_by("topic", "covered_poll_here").alias("covered_poll_topic"),
        F.min_by("partition", "covered_poll_here").alias("covered_poll_partition"),
        F.min_by("offset", "covered_poll_here").alias("covered_poll_offset"),
        F.min("ok_index_here").alias("ok_index"),
        F.max(F.when(acked, F.col("topic"))).alias("acked_topic"),
        F.max(F.when(acked, F.col("partition"))).alias("acked_partition"),
        F.max(F.when(acked, F.col("offset"))).alias("acked_offset"),
        F.max(F.when(acked, F.col("horizon"))).alias("highest_read_offset"),
        F.max(_flag(acked & (F.col("offset") <= F.col("horizon")))).alias("below_horizon"),
        F.max(_flag(acked & (F.col("horizon").isNull() | (F.col("offset") > F.col("horizon"))))).alias(
            "above_horizon"
        ),
        # An acknowledgement without a place cannot be said to have moved (it counts as read in place).
        F.max(_flag(acked & placed & (F.col("reads_here") == 0))).alias("unread_at_acked_place"),
    )
    never_read = F.col("reads") == 0
    flags = {
        flag(LOST_WRITE): never_read & (F.col("below_horizon") == 1),
        flag(UNSEEN): never_read & (F.col("above_horizon") == 1),
        flag(DUPLICATE): F.col("places_read") > 1,
        flag(OFFSET_DIFFERS): (F.col("reads") > 0) & (F.col("unread_at_acked_place") == 1),
        flag(TRUNCATED_READ): F.col("covered_poll_index").isNotNull() & (F.col("in_final_read") == 0),
    }
    return flagged(
        values,
        flags,
        "value",
        "ok_index",
        "acked_topic",
        "acked_partition",
        "acked_offset",
        "highest_read_offset",
        "first_read_index",
        "covered_poll_index",
        "covered_poll_topic",
        "covered_poll_partition",
        "covered_poll_offset",
        breach=F.col("acks") > 1,
    )
