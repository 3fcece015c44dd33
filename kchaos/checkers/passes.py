"""The four passes over a history: each moves the rows once and marks every anomaly it can see.

Anomalies fall into four groupings of the same rows: everything about one value (`lost-write`, `unseen`,
`duplicate`, the `offset-differs` half of `inconsistent-offset`, `truncated-read`); everything at one
topic-partition-offset (`values-differ`, `replica-divergence`); one producer's sends to a partition in
the order it invoked them (`nonmonotonic-send`); one reader's records of a partition in order
(`poll-skip`, `nonmonotonic-poll`). Shuffling tens of millions of rows is what checking costs, so each
grouping is one explicit repartitioning, and every anomaly of the grouping becomes a boolean column of it,
named after the anomaly (`flag`). Replica records, three times the history's, are the exception: only
those of blocks the replica screen (`kchaos.checkers.replica_screen`) cannot settle without moving them join
the by-offset grouping.

Two habits keep the passes fast on two cores:
- groups of the by-value and by-offset passes are aggregated in two levels, first per place (value or
  offset plus what varies inside), then per group, with numeric aggregates only: hash aggregation after an
  explicit repartitioning needs no partial aggregation and no sort, and counting the first level's rows
  counts distinct places or values exactly;
- windows only where order matters (the two order passes), over groups that are large.

Each pass keeps only the rows with a flag set, and is cached: small in any run worth reading, so each
anomaly is then a cheap filter of it. A history breaking the contract that values are unique per send
fails the check (`raise_error`) instead of being guessed at.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import reduce

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from kchaos.checkers.frames import ACK, ASSIGN, FINAL_READ, INVOKE, POLL, TP, TPO, HistoryViews, count_where
from kchaos.checkers.frames import flag as flag
from kchaos.checkers.names import (
    DUPLICATE,
    LOST_WRITE,
    NONMONOTONIC_POLL,
    NONMONOTONIC_SEND,
    OFFSET_DIFFERS,
    POLL_SKIP,
    REPLICA_DIVERGENCE,
    TRUNCATED_READ,
    UNSEEN,
    VALUES_DIFFER,
)
from kchaos.checkers.replica_screen import (
    broker_bit,
    replica_blocks,
    replica_ranges,
    unsettled_blocks,
    unsettled_records,
)
from kchaos.checkers.transactions import by_record, due_records, gaps_over_due, outcomes, reader_levels

VALUE_HASH = "value_hash"
REPLICA = "replica"


def _any(flags: Iterable[Column]) -> Column:
    return reduce(lambda a, b: a | b, flags)


def _flag(condition: Column) -> Column:
    """1 where `condition` holds, 0 otherwise (null included): what `max` turns into "any row does"."""
    return F.coalesce(condition, F.lit(False)).cast("int")


def _unique_per_send(breach: Column) -> Column:
    """Fails the check at the first value acknowledged twice, naming it: the unique-value contract of the
    history is what lets one value stand for one send."""
    message = F.concat(
        F.lit("history contract broken: value "),
        F.coalesce(F.col("value"), F.lit("<null>")),
        F.lit(" has several ok sends; a value must be unique per send"),
    )
    return F.when(breach, F.raise_error(message)).otherwise(F.lit(False))


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
        F.min_by("partition", "covered_poll_here").alias("covered_poll_partition"),
        F.min_by("offset", "covered_poll_here").alias("covered_poll_offset"),
        F.min("ok_index_here").alias("ok_index"),
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
    return _flagged(
        values,
        flags,
        "value",
        "ok_index",
        "acked_partition",
        "acked_offset",
        "highest_read_offset",
        "first_read_index",
        "covered_poll_index",
        "covered_poll_partition",
        "covered_poll_offset",
        breach=F.col("acks") > 1,
    )


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
    return _flagged(
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
    return _flagged(
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
    reader had to return (`kchaos.checkers.transactions.gaps_over_due`); commit and abort markers, and the
    records of transactions that did not commit, leave gaps a reader at read_committed rightly makes."""
    gaps = poll_order.filter(F.col(flag(POLL_SKIP)))
    over = gaps_over_due(gaps, due, levels).withColumn("over_due", F.lit(True))
    skip = F.col(flag(POLL_SKIP)) & F.coalesce(F.col("over_due"), F.lit(False))
    return (
        poll_order.join(over, on="index", how="left")
        .withColumn(flag(POLL_SKIP), skip)
        .drop("over_due")
        .filter(F.col(flag(POLL_SKIP)) | F.col(flag(NONMONOTONIC_POLL)))
    )


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
        return _flagged(offsets, differ, *columns)
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
    return _flagged(
        candidates, {**differ, flag(REPLICA_DIVERGENCE): divergent}, *columns, "ranges", "covering"
    )


def _all_not_null(columns: Iterable[str]) -> Column:
    return reduce(lambda a, b: a & b, (F.col(name).isNotNull() for name in columns))


def _flagged(
    rows: DataFrame, flags: dict[str, Column], *columns: str, breach: Column | None = None
) -> DataFrame:
    """The rows with at least one flag set, the flags as non-null booleans.

    Rows where `breach` holds are kept too, with a column that fails the check when the pass is computed
    (the breach can then not be filtered away before it is seen).
    """
    named = [F.coalesce(flag, F.lit(False)).alias(name) for name, flag in flags.items()]
    keep = _any(F.col(name) for name in flags)
    if breach is not None:
        named.append(F.coalesce(breach, F.lit(False)).alias("breach"))
        keep = keep | F.col("breach")
    flagged = rows.select(*columns, *named).filter(keep)
    if breach is None:
        return flagged
    # Kept as a column: a cached pass computes every column, so the breach cannot be optimised away.
    return flagged.withColumn("breach", _unique_per_send(F.col("breach")))


@dataclass
class Passes:
    """The passes of one check, by pass name, each run and cached on first use, released by `unpersist`.

    The passes are all the anomalies share: each anomaly is then its own filter of the passes it needs, so
    the first anomaly to need a pass pays for it and the rest find it cached.
    """

    views: HistoryViews
    _cached: dict[str, DataFrame] = field(default_factory=dict)

    @property
    def replicas_checked(self) -> bool:
        return self.views.replicas is not None

    @property
    def transactional(self) -> bool:
        return self.views.transactional

    def _get(self, name: str, build: Callable[[HistoryViews], DataFrame]) -> DataFrame:
        if name not in self._cached:
            self._cached[name] = build(self.views).cache()
        return self._cached[name]

    def cached(self, name: str, build: Callable[[HistoryViews], DataFrame]) -> DataFrame:
        """A pass defined outside this module (the consumer-group passes, `kchaos.checkers.groups`), cached
        and released with the others under `name`."""
        return self._get(name, build)

    def partitions(self) -> DataFrame:
        """Per topic-partition summary (`HistoryViews.partitions`): tiny, used by a pass and by examples."""
        return self._get("partitions", lambda views: views.partitions)

    def value(self) -> DataFrame:
        self.partitions()  # cached first, so the pass below reads it from memory
        return self._get("value", by_value)

    def send_order(self) -> DataFrame:
        return self._get("send_order", by_send_order)

    def poll_order(self) -> DataFrame:
        if not self.transactional:
            return self._get("poll_order", by_poll_order)
        due = due_records(self.views, self.outcomes())
        levels = self.levels()
        return self._get("poll_order", lambda views: over_due_records(by_poll_order(views), due, levels))

    def outcomes(self) -> DataFrame:
        """How each transaction ended (`kchaos.checkers.transactions.outcomes`): one row per transaction."""
        return self._get("outcomes", lambda views: outcomes(views.history))

    def levels(self) -> DataFrame:
        """Each reader's start rows and the isolation levels they name: a few rows per reader."""
        return self._get("levels", lambda views: reader_levels(views.history))

    def transactions(self) -> DataFrame:
        """The by-record pass of the transaction anomalies (`kchaos.checkers.transactions.by_record`); only
        for a transactional history."""
        self.partitions()
        return self._get(
            "transactions",
            lambda views: by_record(views, self.outcomes(), self.levels(), self.partitions()),
        )

    def replica_blocks(self) -> DataFrame | None:
        """The replicas' per-block summary (`kchaos.checkers.replica_screen`), None without replica dumps:
        small, and read twice (for the ranges and for the blocks to compare), so cached once."""
        replicas = self.views.replicas
        if replicas is None:
            return None
        return self._get("replica_blocks", lambda views: replica_blocks(replicas))

    def offset(self) -> DataFrame:
        return self._get("offset", lambda views: by_offset(views, self.replica_blocks()))

    def unpersist(self) -> None:
        for frame in self._cached.values():
            frame.unpersist()
        self._cached.clear()
