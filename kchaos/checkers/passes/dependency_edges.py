"""The dependency graph between read-write transactions, on Spark (issue 49): the edges whose cycles the
cycle search classifies (`kchaos.checkers.anomalies.cycle_search`). The definitions are the pandas
reference's (`tests.reference.dependencies`), after Jepsen's Kafka checker:

- a node is a transaction whose commit was acknowledged;
- `ww`: per partition, each committed transaction's record follows the previous one's in offset order;
- `wr`: a transaction's last read of a partition returned another transaction's record;
- `rw`: that last read stopped before the next committed transaction's record in the partition.

Edges only: one row per (`source`, `target`, `kind`). A history's edges number about its records, and
only those inside a cycle matter; the search runs on what they leave. So `cycle_edges` keeps, in Spark,
only the edges that can lie on a cycle, and the driver collects those: a history of a million
transactions has some five million edges, which as Python objects on the driver take minutes and
gigabytes, while one whose transactions rarely overlap has only a handful that can close a cycle.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from kchaos.checkers.passes.frames import TP, is_nemesis
from kchaos.checkers.rules.anomaly_names import RW, WR, WW
from kchaos.model.events import OK, TXN_POLL, TXN_SEND

#: Each edge's columns: the two transactions, the kind, and each transaction's position (`_committed`).
EDGE_COLUMNS = ("source", "target", "kind", "source_position", "target_position")


def _committed(ends: DataFrame) -> DataFrame:
    """Each committed transaction (`txn`) with its `position`: the index of the row that ended it (its
    acknowledged commit), one number per transaction, in the order the transactions committed."""
    return ends.filter(F.col("committed")).select("txn", F.col("ended_index").alias("position"))


def _rows_of(history: DataFrame, f: str, committed: DataFrame) -> DataFrame:
    """The `ok` rows of `f` of committed transactions that name a place: `txn`, `position`, topic,
    partition, offset."""
    return (
        history.filter(
            (F.col("f") == f) & (F.col("type") == OK) & ~is_nemesis() & F.col("key").isNotNull()
            & F.col("offset").isNotNull()
        )
        .select(F.col("key").alias("txn"), *TP, "offset")
        .join(committed, on="txn", how="inner")
    )  # fmt: skip


def positioned_edges(history: DataFrame, ends: DataFrame) -> DataFrame:
    """Every `ww`, `wr` and `rw` edge between two different committed transactions (`ends`: how each
    transaction ended, `kchaos.checkers.passes.transaction_passes.outcomes`), with both transactions'
    positions (`EDGE_COLUMNS`)."""
    writes = _rows_of(history, TXN_SEND, _committed(ends))
    in_order = Window.partitionBy(*TP).orderBy("offset")
    ww = writes.select(
        F.lag("txn").over(in_order).alias("source"), F.col("txn").alias("target"), F.lit(WW).alias("kind"),
        F.lag("position").over(in_order).alias("source_position"), F.col("position").alias("target_position"),
    ).filter(F.col("source").isNotNull() & (F.col("source") != F.col("target")))  # fmt: skip
    last = (
        _rows_of(history, TXN_POLL, _committed(ends))
        .groupBy(F.col("txn").alias("reader"), F.col("position").alias("reader_position"), *TP)
        .agg(F.max("offset").alias("offset"))
    )
    wr = (
        last.join(writes.withColumnsRenamed({"txn": "writer", "position": "writer_position"}),
                  on=[*TP, "offset"], how="inner")
        .filter(F.col("writer") != F.col("reader"))
        .select(F.col("writer").alias("source"), F.col("reader").alias("target"), F.lit(WR).alias("kind"),
                F.col("writer_position").alias("source_position"),
                F.col("reader_position").alias("target_position"))
    )  # fmt: skip
    # The next write after each last read: reads and writes of a partition in offset order, a write before
    # a read at its own offset (the record read), and each read takes the first writer after it.
    none = F.lit(None).cast("struct<txn:string,position:bigint>")
    writer = F.struct("txn", "position").alias("writer")
    events = writes.select(*TP, "offset", F.lit(0).alias("after"), writer, none.alias("reader")).unionByName(
        last.select(*TP, "offset", F.lit(1).alias("after"), none.alias("writer"),
                    F.struct(F.col("reader").alias("txn"), F.col("reader_position").alias("position"))
                    .alias("reader"))
    )  # fmt: skip
    # The first writer after each row, as the last one seen walking the partition backwards: a running
    # frame, which Spark keeps in one pass, where a frame to the partition's end is recomputed for every
    # row (quadratic: a 100,000-transaction history's rw edges ran for over ten minutes).
    backwards = (
        Window.partitionBy(*TP)
        .orderBy(F.col("offset").desc(), F.col("after").desc())
        .rowsBetween(Window.unboundedPreceding, -1)
    )
    rw = (
        events.select("reader", F.last("writer", ignorenulls=True).over(backwards).alias("next"))
        .filter(F.col("reader").isNotNull() & F.col("next").isNotNull()
                & (F.col("next.txn") != F.col("reader.txn")))
        .select(F.col("reader.txn").alias("source"), F.col("next.txn").alias("target"),
                F.lit(RW).alias("kind"), F.col("reader.position").alias("source_position"),
                F.col("next.position").alias("target_position"))
    )  # fmt: skip
    return ww.unionByName(wr).unionByName(rw).distinct()


def dependency_edges(history: DataFrame, ends: DataFrame) -> DataFrame:
    """Every `ww`, `wr` and `rw` edge between two different committed transactions: `source`, `target`,
    `kind` (`positioned_edges` without the positions)."""
    return positioned_edges(history, ends).select("source", "target", "kind")


def cycle_edges(edges: DataFrame) -> DataFrame:
    """Of `edges` (`positioned_edges`), those that can lie on a cycle (`source`, `target`, `kind`): every
    edge of every cycle, so every strongly connected component of the graph whole, with every edge between
    its members, and few others.

    Why it holds: order the transactions by position. A cycle (indeed any closed walk) that climbs from
    its lowest member to its highest comes back down only along backward edges (to a lower position), and
    it crosses every level in between on the way down, so the spans [target, source] of its backward edges
    overlap into one unbroken run from its lowest member to its highest. So merge the spans of all
    backward edges into islands (overlapping or touching spans into one); every cycle lies inside one, and
    an edge whose ends are not inside the same island lies on none. The search then finds the same
    components, each with the same edges, as on the whole graph.

    Why it is small: transactions that commit one after another give edges that point forward, so the
    islands are the stretches where transactions overlapped: in a history of a million transactions that
    rarely overlap, a few hundred edges of five million. Where they overlap throughout, one island can hold
    most of the graph, and the search gets most of it, as it did before.

    Both steps order rows globally (a window without partitions, in one Spark task): the spans, then the
    edges with the islands' starts among them, each edge taking the island that starts last at or below
    its lower end. Each step reads `edges`, so a caller keeps them (`DataFrame.persist`) rather than have
    Spark compute them twice."""
    ends_of = ("source_position", "target_position")
    low, high = F.least(*ends_of), F.greatest(*ends_of)
    spans = edges.filter(F.col("target_position") < F.col("source_position")).select(
        F.col("target_position").alias("low"), F.col("source_position").alias("high")
    )
    by_low = Window.orderBy("low", "high")
    reach = F.max("high").over(by_low.rowsBetween(Window.unboundedPreceding, -1))
    starts = spans.withColumn("starts", F.coalesce(F.col("low") > reach, F.lit(True)).cast("int"))
    islands = (
        starts.withColumn("island", F.sum("starts").over(by_low.rowsBetween(Window.unboundedPreceding, 0)))
        .groupBy("island")
        .agg(F.min("low").alias("low"), F.max("high").alias("reach"))
    )
    marked = edges.select("source", "target", "kind", low.alias("low"), high.alias("high"),
                          F.lit(None).cast("bigint").alias("reach")).unionByName(
        islands.select(*(F.lit(None).cast("string").alias(c) for c in ("source", "target", "kind")), "low",
                       F.lit(None).cast("bigint").alias("high"), "reach")
    )  # fmt: skip
    # An island's start sorts before an edge at the same position, so the edge sees it.
    before = Window.orderBy("low", F.col("source").isNotNull()).rowsBetween(Window.unboundedPreceding, 0)
    return (
        marked.withColumn("reach", F.last("reach", ignorenulls=True).over(before))
        .filter(F.col("source").isNotNull() & (F.col("high") <= F.col("reach")))
        .select("source", "target", "kind")
    )
