"""The by-offset pass: everything at one topic-partition-offset (`values-differ`, `replica-divergence`).

Replica records, three times the history's, join it only for the blocks the replica screen
(`kchaos.checkers.passes.replica_screen`) cannot settle without moving them.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from kchaos.checkers.passes.frames import TP, TPO, HistoryViews, count_where, flag
from kchaos.checkers.passes.pass_flags import flagged
from kchaos.checkers.passes.replica_screen import (
    broker_bit,
    replica_ranges,
    unsettled_blocks,
    unsettled_records,
)
from kchaos.checkers.rules.anomaly_names import REPLICA_DIVERGENCE, VALUES_DIFFER

REPLICA = "replica"


def by_offset(views: HistoryViews, blocks: DataFrame | None) -> DataFrame:
    """One row per topic-partition-offset that reads or replicas disagree about.

    First per (offset, value), then per offset, so counting first-level rows counts distinct values
    exactly (a transaction marker's null value is a value too). Flags: `values_differ` (read with two or
    more values) and `replica_divergence` (inside the ranges of two or more replicas, which hold different
    values there, or one of which holds no record there). An offset no replica holds is not compared: every
    replica agrees it is empty.

    `blocks` is the replicas' per-block summary (`Passes.replica_blocks`, None without replica dumps): only
    the records of blocks it cannot settle are compared here, the rest are known to agree.
    """
    rows = views.reads.select("kind", *TPO, "value", "index", F.lit(None).cast("int").alias("broker"))
    ranges: DataFrame | None = None
    if views.replicas is not None:
        if blocks is None:
            raise ValueError("by_offset: replica dumps need their block summary (Passes.replica_blocks)")
        ranges = replica_ranges(blocks)
        compared = unsettled_records(views.replicas, unsettled_blocks(blocks, ranges))
        rows = rows.unionByName(
            compared.select(
                F.lit(REPLICA).alias("kind"),
                *TPO,
                "value",
                F.lit(None).cast("bigint").alias("index"),
                "broker",
            )
        )
    replica = F.col("kind") == REPLICA
    values = (
        rows.repartition(*TPO)
        .groupBy(*TPO, "value")
        .agg(
            count_where(~replica).alias("reads"),
            F.min(F.when(~replica, F.col("index"))).alias("first_read"),
            count_where(replica).alias("records"),
            F.bit_or(F.when(replica, broker_bit())).alias("brokers"),
        )
    )
    offsets = values.groupBy(*TPO).agg(
        count_where(F.col("reads") > 0).alias("read_values"),
        F.min("first_read").alias("first_read_index"),
        count_where(F.col("records") > 0).alias("replica_values"),
        F.bit_count(F.coalesce(F.bit_or("brokers"), F.lit(0).cast("bigint"))).alias("holders"),
    )
    differ = {flag(VALUES_DIFFER): F.col("read_values") > 1}
    columns = [*TPO, "read_values", "first_read_index", "replica_values", "holders"]
    if ranges is None:
        return flagged(offsets, differ, *columns)
    replicas_differ = F.col("replica_values") > 1
    # Cheap test first: an offset no compared replica holds cannot diverge, and one every replica of the
    # partition holds with one value is consistent whatever the ranges; only the rest are held against
    # the ranges covering them.
    suspect = (F.col("replica_values") > 0) & (replicas_differ | (F.col("holders") < F.col("replica_count")))
    candidates = (
        offsets.join(F.broadcast(ranges.select(*TP, "replica_count")), on=list(TP), how="left")
        .filter(differ[flag(VALUES_DIFFER)] | suspect)
        .join(F.broadcast(ranges.drop("replica_count")), on=list(TP), how="left")
    )
    covering = F.filter(
        "ranges", lambda r: (r["log_start"] <= F.col("offset")) & (F.col("offset") < r["log_end"])
    )
    candidates = candidates.withColumn("covering", F.array_sort(F.transform(covering, lambda r: r["broker"])))
    divergent = (
        (F.col("replica_values") > 0)
        & (F.size("covering") >= 2)
        & (replicas_differ | (F.col("holders") < F.size("covering")))
    )
    return flagged(
        candidates, {**differ, flag(REPLICA_DIVERGENCE): divergent}, *columns, "ranges", "covering"
    )
