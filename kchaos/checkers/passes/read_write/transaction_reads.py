"""What each read-write transaction read (issue 49): the records its polls returned, one row each, from
either kind of history that has them.

- A `--txn-polls` transaction's polls are `txn-poll` rows keyed by the transaction
  (`kchaos.workloads.in_harness.read_write`).
- An eos processor's transaction reads before it begins: the processor polls a batch of the input topic
  (`poll` rows of its own, keyed by nothing), then begins the transaction that writes the batch's output
  and commits its input offsets (`kchaos.workloads.in_harness.eos`, and its Java and librdkafka processes
  alike). So a batch is the `poll` rows that the processor's `txn-begin` row directly follows, with no
  other row of the processor between (a crash, a rewind, a rebalance's `assign`: a batch a processor
  dropped is no transaction's). A consume-transform-produce transaction is then judged as a read-write one,
  as the issue asks.

Both feed the checks inside a transaction (`kchaos.checkers.passes.read_write.internal_passes`) and the
dependency edges (`kchaos.checkers.passes.read_write.dependency_edges`). An eos transaction's input records
were sent outside any transaction, so they make no `wr` or `rw` edge (those join transactions' reads to
transactions' writes); its output makes `ww` edges, and the orders of time apply to it as to any.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from kchaos.checkers.passes.frames import TPO, is_nemesis
from kchaos.model.events import COMMIT, OK, POLL, TXN_BEGIN, TXN_POLL

#: One row per record a transaction read.
READ_COLUMNS = ("txn", "process", *TPO, "value", "index", "time_ns")


def has_transaction_reads(history: DataFrame) -> bool:
    """Whether any transaction read: a `txn-poll` row, or an eos processor's transactional `commit` row
    (keyed by its transaction). One small job, which decides whether the read-write transaction anomalies
    apply to the history at all."""
    reads = (F.col("f") == TXN_POLL) | ((F.col("f") == COMMIT) & F.col("key").isNotNull())
    return not history.filter(reads & ~is_nemesis()).isEmpty()


def _polled(history: DataFrame) -> DataFrame:
    """The `txn-poll` rows, as `READ_COLUMNS`."""
    return history.filter(
        (F.col("f") == TXN_POLL) & (F.col("type") == OK) & ~is_nemesis() & F.col("key").isNotNull()
    ).select(F.col("key").alias("txn"), *READ_COLUMNS[1:])


def _batches(history: DataFrame) -> DataFrame:
    """The eos processors' batches, as `READ_COLUMNS`: each `poll` row of a process that also begins
    transactions, whose next row other than a poll is a `txn-begin`, keyed by that transaction. Only the
    processes that do both are ordered (a window per process): in a run without eos processors none do."""
    begins = history.filter((F.col("f") == TXN_BEGIN) & ~is_nemesis()).select("process").distinct()
    polls = history.filter((F.col("f") == POLL) & ~is_nemesis()).select("process").distinct()
    processors = begins.join(polls, on="process", how="inner")
    rows = history.join(F.broadcast(processors), on="process", how="inner").filter(~is_nemesis())
    step = F.when(F.col("f") != POLL, F.struct(F.col("f").alias("f"), F.col("key").alias("key")))
    # The next row that is not a poll, as the last one seen walking the process's rows backwards (a
    # running frame, one pass; see `dependency_edges`).
    backwards = (
        Window.partitionBy("process")
        .orderBy(F.col("index").desc())
        .rowsBetween(Window.unboundedPreceding, -1)
    )
    nxt = F.last(step, ignorenulls=True).over(backwards)
    return (
        rows.select("*", nxt.alias("next"))
        .filter(
            (F.col("f") == POLL) & (F.col("type") == OK) & F.col("offset").isNotNull()
            & (F.col("next.f") == TXN_BEGIN) & F.col("next.key").isNotNull()
        )
        .select(F.col("next.key").alias("txn"), *READ_COLUMNS[1:])
    )  # fmt: skip


def transaction_reads(history: DataFrame) -> DataFrame:
    """Every record a transaction read (`READ_COLUMNS`): its polls' and, in an eos run, its batch's."""
    return _polled(history).unionByName(_batches(history))
