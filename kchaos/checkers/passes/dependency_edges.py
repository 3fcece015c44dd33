"""The dependency graph between read-write transactions, on Spark (issue 49): the edges whose cycles the
cycle search classifies (`kchaos.checkers.anomalies.cycle_search`). The definitions are the pandas
reference's (`tests.reference.dependencies`), after Jepsen's Kafka checker:

- a node is a transaction whose commit was acknowledged;
- `ww`: per partition, each committed transaction's record follows the previous one's in offset order;
- `wr`: a transaction's last read of a partition returned another transaction's record;
- `rw`: that last read stopped before the next committed transaction's record in the partition.

Edges only: one row per (`source`, `target`, `kind`). A history's edges number about its records, and
only those inside a cycle matter; the search runs on what they leave.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from kchaos.checkers.passes.frames import TP, is_nemesis
from kchaos.checkers.rules.anomaly_names import RW, WR, WW
from kchaos.model.events import OK, TXN_POLL, TXN_SEND


def _rows_of(history: DataFrame, f: str, committed: DataFrame) -> DataFrame:
    """The `ok` rows of `f` of committed transactions that name a place: `txn`, topic, partition, offset."""
    return (
        history.filter(
            (F.col("f") == f) & (F.col("type") == OK) & ~is_nemesis() & F.col("key").isNotNull()
            & F.col("offset").isNotNull()
        )
        .select(F.col("key").alias("txn"), *TP, "offset")
        .join(committed, on="txn", how="left_semi")
    )  # fmt: skip


def dependency_edges(history: DataFrame, ends: DataFrame) -> DataFrame:
    """Every `ww`, `wr` and `rw` edge between two different committed transactions (`ends`: how each
    transaction ended, `kchaos.checkers.passes.transaction_passes.outcomes`)."""
    committed = ends.filter(F.col("committed")).select("txn")
    writes = _rows_of(history, TXN_SEND, committed)
    in_order = Window.partitionBy(*TP).orderBy("offset")
    ww = (
        writes.select(F.lag("txn").over(in_order).alias("source"), F.col("txn").alias("target"))
        .filter(F.col("source").isNotNull() & (F.col("source") != F.col("target")))
        .withColumn("kind", F.lit(WW))
    )
    last = (
        _rows_of(history, TXN_POLL, committed)
        .groupBy(F.col("txn").alias("reader"), *TP)
        .agg(F.max("offset").alias("offset"))
    )
    wr = (
        last.join(writes.withColumnRenamed("txn", "writer"), on=[*TP, "offset"], how="inner")
        .filter(F.col("writer") != F.col("reader"))
        .select(F.col("writer").alias("source"), F.col("reader").alias("target"), F.lit(WR).alias("kind"))
    )
    # The next write after each last read: reads and writes of a partition in offset order, a write before
    # a read at its own offset (the record read), and each read takes the first writer after it.
    events = writes.select(*TP, "offset", F.lit(0).alias("after"), F.col("txn").alias("writer"),
                           F.lit(None).cast("string").alias("reader")).unionByName(
        last.select(*TP, "offset", F.lit(1).alias("after"), F.lit(None).cast("string").alias("writer"),
                    "reader")
    )  # fmt: skip
    following = Window.partitionBy(*TP).orderBy("offset", "after").rowsBetween(1, Window.unboundedFollowing)
    rw = (
        events.select("reader", F.first("writer", ignorenulls=True).over(following).alias("next_writer"))
        .filter(
            F.col("reader").isNotNull()
            & F.col("next_writer").isNotNull()
            & (F.col("next_writer") != F.col("reader"))
        )
        .select(
            F.col("reader").alias("source"), F.col("next_writer").alias("target"), F.lit(RW).alias("kind")
        )
    )
    return ww.unionByName(wr).unionByName(rw).distinct()
