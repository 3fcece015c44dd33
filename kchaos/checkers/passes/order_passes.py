"""The two order passes: one producer's sends to a partition in the order it invoked them
(`nonmonotonic-send`), one reader's records of a partition in order (`poll-skip`, `nonmonotonic-poll`).

The only passes with windows, since only here does order matter; `with_segment` also places the reads of
the consumer-group passes (`kchaos.checkers.passes.group_passes`) in their (re)assignment.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from kchaos.checkers.passes.frames import ACK, ASSIGN, INVOKE, TP, TPO, HistoryViews, count_where, flag
from kchaos.checkers.passes.pass_flags import flagged
from kchaos.checkers.passes.transaction_passes import gaps_over_due
from kchaos.checkers.rules.anomaly_names import NONMONOTONIC_POLL, NONMONOTONIC_SEND, POLL_SKIP


def by_send_order(views: HistoryViews) -> DataFrame:
    """Each producer's acknowledged sends to a partition, in the order it invoked them.

    An `ok` row is paired with the `invoke` row of the same process, topic, partition and value (the two
    rows of one send always agree on these); without one, its own index stands in. Acknowledgements without
    an offset say nothing about order and are left out. Flag: `nonmonotonic_send`, an acknowledged offset
    at or below the previous send's.
    """
    producer = ("process", *TP)
    sends = (
        views.rows(INVOKE, ACK)
        .repartition(*producer)
        .groupBy(*producer, "value")
        .agg(
            F.min(F.when(F.col("kind") == INVOKE, F.col("index"))).alias("invoke_index"),
            count_where(F.col("kind") == ACK).alias("acks"),
            F.min(F.when(F.col("kind") == ACK, F.col("index"))).alias("ok_index"),
            F.min(F.when(F.col("kind") == ACK, F.col("offset"))).alias("offset"),
            F.min(F.when(F.col("kind") == ACK, F.col("wall_time"))).alias("ok_wall_time"),
        )
        .filter((F.col("acks") > 0) & F.col("offset").isNotNull())
        .withColumn("invoke_index", F.coalesce("invoke_index", "ok_index"))
    )
    order = Window.partitionBy(*producer).orderBy("invoke_index", "ok_index")
    sends = sends.select(
        "*",
        *(
            F.lag(column).over(order).alias(f"previous_{column}")
            for column in ("value", "offset", "invoke_index", "ok_index")
        ),
    )
    return flagged(
        sends,
        {flag(NONMONOTONIC_SEND): F.col("offset") <= F.col("previous_offset")},
        *producer,
        "value",
        "offset",
        "invoke_index",
        "ok_index",
        "ok_wall_time",
        "previous_value",
        "previous_offset",
        "previous_invoke_index",
        "previous_ok_index",
        breach=F.col("acks") > 1,
    )


def with_segment(rows: DataFrame, views: HistoryViews) -> DataFrame:
    """`rows` with `segment`: how many `assign` rows the row's process wrote before it (by index), which
    places a read in the process's (re)assignment it was made under."""
    assigns = (
        views.rows(ASSIGN).groupBy("process").agg(F.array_sort(F.collect_list("index")).alias("assigns"))
    )
    return (
        rows.join(F.broadcast(assigns), on="process", how="left")
        .withColumn(
            "segment",
            F.size(
                F.filter(
                    F.coalesce("assigns", F.array().cast("array<bigint>")), lambda at: at < F.col("index")
                )
            ),
        )
        .drop("assigns")
    )


def by_poll_order(views: HistoryViews) -> DataFrame:
    """Each reader's records of a partition in index order, restarted at each of its (re)assignments.

    `segment` is how many `assign` rows the process wrote before the read: a reassignment resets what the
    checker may expect of the order, for all the process's partitions. Flags: a read more than one past the
    previous (`poll_skip`), or not past it at all (`nonmonotonic_poll`).
    """
    reads = with_segment(views.reads, views)
    order = Window.partitionBy("process", *TP, "segment").orderBy("index")
    reads = reads.select(
        "*",
        *(F.lag(column).over(order).alias(f"previous_{column}") for column in ("offset", "value", "index")),
    )
    previous = F.col("previous_offset")
    return flagged(
        reads,
        {
            flag(POLL_SKIP): F.col("offset") > previous + 1,
            flag(NONMONOTONIC_POLL): F.col("offset") <= previous,
        },
        "process",
        *TPO,
        "value",
        "index",
        "kind",
        "segment",
        "previous_offset",
        "previous_value",
        "previous_index",
    )


def over_due_records(poll_order: DataFrame, due: DataFrame, levels: DataFrame) -> DataFrame:
    """The by-poll-order pass of a transactional history: a gap is a `poll_skip` only over a record the
    reader had to return (`kchaos.checkers.passes.transaction_passes.gaps_over_due`); commit and abort
    markers, and the records of transactions that did not commit, leave gaps a reader at read_committed
    rightly makes."""
    gaps = poll_order.filter(F.col(flag(POLL_SKIP)))
    over = gaps_over_due(gaps, due, levels).withColumn("over_due", F.lit(True))
    skip = F.col(flag(POLL_SKIP)) & F.coalesce(F.col("over_due"), F.lit(False))
    return (
        poll_order.join(over, on="index", how="left")
        .withColumn(flag(POLL_SKIP), skip)
        .drop("over_due")
        .filter(F.col(flag(POLL_SKIP)) | F.col(flag(NONMONOTONIC_POLL)))
    )
