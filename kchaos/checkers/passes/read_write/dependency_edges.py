"""The dependency graph between read-write transactions, on Spark (issue 49): the edges whose cycles the
cycle search classifies (`kchaos.checkers.anomalies.cycle_search`). The definitions are the pandas
reference's (`tests.reference.dependencies`), after Jepsen's Kafka checker:

- a node is a transaction whose commit was acknowledged;
- `ww`: per partition, each committed transaction's record follows the previous one's in offset order;
- `wr`: a transaction's last read of a partition returned another transaction's record (its reads: its
  polls, or an eos processor's batch, `kchaos.checkers.passes.read_write.transaction_reads`);
- `rw`: that last read stopped before the next committed transaction's record in the partition.

Edges only: one row per (`source`, `target`, `kind`). A history's edges number about its records, and
only those inside a cycle matter; the search runs on what they leave. So `cycle_edges` keeps, in Spark,
only the edges that can lie on a cycle, and the driver collects those: the million transactions of
bench/cycles.py have 3.6 million edges, of which 100 can close a cycle.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from kchaos.checkers.passes.frames import TP, is_nemesis
from kchaos.checkers.passes.read_write.transaction_reads import transaction_reads
from kchaos.checkers.rules.anomaly_names import RW, WR, WW
from kchaos.model.events import OK, TXN_BEGIN, TXN_COMMIT, TXN_POLL, TXN_SEND

#: Each edge's columns: the two transactions, the kind, and each transaction's position (`_positions`).
EDGE_COLUMNS = ("source", "target", "kind", "source_position", "target_position")


def transaction_spans(history: DataFrame, ends: DataFrame) -> DataFrame:
    """Each committed transaction (`ends`: how each ended, `kchaos.checkers.passes.transaction_passes.
    outcomes`) with the producer `process` that began it, `began_ns` (its first row's stamp) and
    `committed_ns` (its acknowledged commit's): the spans the orders of time are read from
    (`kchaos.checkers.anomalies.time_edges`)."""
    mine = F.col("f").isin(TXN_BEGIN, TXN_SEND, TXN_POLL, TXN_COMMIT)
    committed = (F.col("f") == TXN_COMMIT) & (F.col("type") == OK)
    spans = (
        history.filter(mine & ~is_nemesis() & F.col("key").isNotNull())
        .groupBy(F.col("key").alias("txn"))
        .agg(
            F.min(F.when(F.col("f") == TXN_BEGIN, F.col("process"))).alias("process"),
            F.min("time_ns").alias("began_ns"),
            F.max(F.when(committed, F.col("time_ns"))).alias("committed_ns"),
        )
    )
    return spans.join(ends.filter(F.col("committed")).select("txn"), on="txn", how="inner")


def _positions(spans: DataFrame) -> DataFrame:
    """Each committed transaction (`txn`) with its `position`: when its commit was acknowledged, so the
    orders of time, which point from an acknowledged commit to a later beginning, point forward in it too
    (`cycle_edges` relies on that)."""
    return spans.select("txn", F.col("committed_ns").alias("position"))


def _writes(history: DataFrame, committed: DataFrame) -> DataFrame:
    """The acknowledged records committed transactions wrote (`committed`: `txn`, `position`): `txn`,
    `position`, topic, partition, offset."""
    return (
        history.filter(
            (F.col("f") == TXN_SEND) & (F.col("type") == OK) & ~is_nemesis() & F.col("key").isNotNull()
            & F.col("offset").isNotNull()
        )
        .select(F.col("key").alias("txn"), *TP, "offset")
        .join(committed, on="txn", how="inner")
    )  # fmt: skip


def _reads(reads: DataFrame, committed: DataFrame) -> DataFrame:
    """Of what each transaction read (`reads`, `kchaos.checkers.passes.read_write.transaction_reads`), the
    records committed transactions read, in the shape of `_writes`."""
    return (
        reads.filter(F.col("offset").isNotNull())
        .select("txn", *TP, "offset")
        .join(committed, on="txn", how="inner")
    )


def positioned_edges(history: DataFrame, reads: DataFrame, spans: DataFrame) -> DataFrame:
    """Every `ww`, `wr` and `rw` edge between two different committed transactions (`reads`: what each
    transaction read, `transaction_reads`; `spans`: each committed one's, `transaction_spans`), with both
    transactions' positions (`EDGE_COLUMNS`)."""
    writes = _writes(history, _positions(spans))
    in_order = Window.partitionBy(*TP).orderBy("offset")
    ww = writes.select(
        F.lag("txn").over(in_order).alias("source"), F.col("txn").alias("target"), F.lit(WW).alias("kind"),
        F.lag("position").over(in_order).alias("source_position"), F.col("position").alias("target_position"),
    ).filter(F.col("source").isNotNull() & (F.col("source") != F.col("target")))  # fmt: skip
    last = (
        _reads(reads, _positions(spans))
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
    `kind` (`positioned_edges` without the positions; `ends`: how each transaction ended)."""
    spans = transaction_spans(history, ends)
    return positioned_edges(history, transaction_reads(history), spans).select("source", "target", "kind")


def cycle_edges(edges: DataFrame) -> DataFrame:
    """Of `edges` (`positioned_edges`), those that can lie on a cycle (`source`, `target`, `kind`): every
    edge of every cycle, so every strongly connected component of the graph whole, with every edge between
    its members, and few others.

    Why it holds: order the transactions by position. A cycle (indeed any closed walk) that climbs from its
    lowest member to its highest comes back down only along backward edges (to a position no higher), and it
    crosses every level in between on the way down, so the spans [target, source] of its backward edges
    overlap into one unbroken run from its lowest member to its highest. So merge the spans of all backward
    edges into islands (overlapping or touching spans into one); every cycle lies inside one, and an edge
    whose ends are not inside the same island lies on none. The search then finds the same components, each
    with the same edges, as on the whole graph. The orders of time the variants add
    (`kchaos.checkers.anomalies.time_edges`) all point forward, so a cycle through them still comes back
    down along dependencies and lies inside an island too.

    Why it is small: transactions that commit one after another give edges that point forward, so the
    islands are the stretches where transactions overlapped: 100 edges of 3.6 million in the million
    transactions of bench/cycles.py, which follow one another but for the cycles planted in them. Where they
    overlap throughout, one island can hold most of the graph, and the search gets most of it, as it did
    before.

    Both steps order rows globally (a window without partitions, in one Spark task): the spans, then the
    edges with the islands' starts among them, each edge taking the island that starts last at or below
    its lower end. Each step reads `edges`, so a caller keeps them (`DataFrame.persist`) rather than have
    Spark compute them twice."""
    ends_of = ("source_position", "target_position")
    low, high = F.least(*ends_of), F.greatest(*ends_of)
    # An edge between two transactions acknowledged at one instant counts as backward, a span of one point.
    spans = edges.filter(F.col("target_position") <= F.col("source_position")).select(
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
