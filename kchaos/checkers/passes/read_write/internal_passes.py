"""What one read-write transaction did inside itself (issue 49): its polls and its sends of each partition,
in the order it made them, against what the log holds.

A read-write transaction polls and sends in one transaction, as Jepsen's Kafka workload does and as a
consume-transform-produce loop does: its records read are `txn-poll` rows, or an eos processor's batch
(`kchaos.checkers.passes.read_write.transaction_reads`), and its records written `txn-send` rows keyed by the
transaction. Within one transaction:

- successive reads of a partition are adjacent in the log: a read more than one offset past the previous
  one skips a record the reader had to return (`int-poll-skip`; markers and the records of transactions
  that did not commit are not owed to a reader at read_committed, as for `poll-skip`), and a read at or
  before the previous one went back (`int-nonmonotonic-poll`);
- successive sends to a partition are appended in the order they were sent: one acknowledged at or
  below the previous one's offset is `int-nonmonotonic-send`; another producer's record between them is
  `int-send-skip` (Kafka's transactions are not contiguous in the log, which the rules say);
- a read never returns a record of the reading transaction itself, which is not committed while the
  transaction runs (`precommitted-read`).

The gaps are judged as the poll-order pass judges a reader's (`gaps_over_due`), by transaction instead of
by reader. Nothing here is planned for a history whose transactions read nothing.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from kchaos.checkers.passes.frames import TP, TPO, HistoryViews, count_where, flag, is_nemesis
from kchaos.checkers.passes.pass_flags import flagged
from kchaos.checkers.passes.transaction_passes import gaps_over_due, with_isolation
from kchaos.checkers.rules.anomaly_names import (
    INT_NONMONOTONIC_POLL,
    INT_NONMONOTONIC_SEND,
    INT_POLL_SKIP,
    INT_SEND_SKIP,
    PRECOMMITTED_READ,
)
from kchaos.model.events import INVOKE, OK, READ_UNCOMMITTED, TXN_SEND

#: The columns every internal occurrence carries: the transaction, its process, where, and both ends.
PAIR_COLUMNS = (
    "txn",
    "process",
    *TPO,
    "value",
    "index",
    "previous_offset",
    "previous_value",
    "previous_index",
)


def _polls(reads: DataFrame) -> DataFrame:
    """Of what each transaction read (`kchaos.checkers.passes.read_write.transaction_reads`): `txn`,
    `process`, where, `value` and `index`."""
    return reads.select("txn", "process", *TPO, "value", "index")


def _with_previous(rows: DataFrame, order_by: str) -> DataFrame:
    order = Window.partitionBy("txn", *TP).orderBy(order_by, "index")
    return rows.select(
        "*",
        *(F.lag(column).over(order).alias(f"previous_{column}") for column in ("offset", "value", "index")),
    )


def by_internal_poll_order(reads: DataFrame, due: DataFrame, levels: DataFrame) -> DataFrame:
    """Each transaction's reads (`reads`: what each read) of a partition in index order. Flags:
    `int_poll_skip`, a read more than one offset past the previous over a record the reader had to return
    (`gaps_over_due`, `due` and `levels` as it takes them); `int_nonmonotonic_poll`, a read at or before the
    previous one."""
    reads = _with_previous(_polls(reads), "index")
    gaps = reads.filter(F.col("offset") > F.col("previous_offset") + 1)
    over = gaps_over_due(gaps, due, levels).withColumn("over_due", F.lit(True))
    return flagged(
        reads.join(over, on="index", how="left"),
        {
            flag(INT_POLL_SKIP): F.coalesce(F.col("over_due"), F.lit(False)),
            flag(INT_NONMONOTONIC_POLL): F.col("offset") <= F.col("previous_offset"),
        },
        *PAIR_COLUMNS,
    )


def by_internal_send_order(views: HistoryViews, due: DataFrame, levels: DataFrame) -> DataFrame:
    """Each transaction's acknowledged sends to a partition in the order it invoked them (the `ok` row's
    own index standing in for a missing invoke). Flags: `int_nonmonotonic_send`, acknowledged at or below
    the previous send's offset; `int_send_skip`, another acknowledged record lies between the two (any,
    committed or not: it is in the log between them)."""
    rows = views.history.filter(
        (F.col("f") == TXN_SEND) & F.col("type").isin(INVOKE, OK) & ~is_nemesis() & F.col("key").isNotNull()
    )
    sends = (
        rows.groupBy(F.col("key").alias("txn"), "process", *TP, "value")
        .agg(
            F.min(F.when(F.col("type") == INVOKE, F.col("index"))).alias("invoke_index"),
            F.min(F.when(F.col("type") == OK, F.col("index"))).alias("index"),
            F.min(F.when(F.col("type") == OK, F.col("offset"))).alias("offset"),
            count_where(F.col("type") == OK).alias("acks"),
        )
        .filter((F.col("acks") > 0) & F.col("offset").isNotNull())
        .withColumn("invoke_index", F.coalesce("invoke_index", "index"))
    )
    sends = _with_previous(sends, "invoke_index")
    gaps = sends.filter(F.col("offset") > F.col("previous_offset") + 1)
    # Any record in the log between the two counts, whether or not its transaction committed.
    every = due.withColumn("committed", F.lit(True))
    over = gaps_over_due(gaps, every, levels).withColumn("over_due", F.lit(True))
    return flagged(
        sends.join(over, on="index", how="left"),
        {
            flag(INT_SEND_SKIP): F.coalesce(F.col("over_due"), F.lit(False)),
            flag(INT_NONMONOTONIC_SEND): F.col("offset") <= F.col("previous_offset"),
        },
        *PAIR_COLUMNS,
        breach=F.col("acks") > 1,
    )


def precommitted_reads(views: HistoryViews, reads: DataFrame, levels: DataFrame) -> DataFrame:
    """Every read (of `reads`: what each transaction read) at read_committed (`levels`, as `with_isolation`
    takes them; a reader naming no level reads read_committed, as kchaos's readers of transactions do) by a
    transaction of a record written in that same transaction (its `txn-send` of the value is keyed by the
    reading transaction): `txn`, `process`, where, `value`, `index` (the read's) and `send_index` (the
    record's acknowledgement, or its invoke)."""
    writes = (
        views.history.filter(
            (F.col("f") == TXN_SEND)
            & F.col("type").isin(INVOKE, OK)
            & ~is_nemesis()
            & F.col("value").isNotNull()
        )
        .groupBy("value")
        .agg(
            F.max(F.col("key")).alias("writer"),
            F.max(F.when(F.col("type") == OK, F.col("index"))).alias("ok_index"),
            F.min(F.col("index")).alias("invoke_index"),
        )
        .select("value", "writer", F.coalesce("ok_index", "invoke_index").alias("send_index"))
    )
    return (
        with_isolation(_polls(reads), levels)
        .filter(~F.col("isolation").eqNullSafe(READ_UNCOMMITTED))
        .drop("isolation")
        .join(writes, on="value", how="inner")
        .filter(F.col("writer") == F.col("txn"))
        .withColumn(flag(PRECOMMITTED_READ), F.lit(True))
        .drop("writer")
    )
