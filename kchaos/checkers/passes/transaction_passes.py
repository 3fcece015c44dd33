"""The transaction anomalies in Spark, and what transactions change about the others.

The definitions are the pandas reference's (`tests.reference.transactions`, `Transactions` and the four
functions after it), whose docstrings say why each is what it is; this module computes the same ids without
collecting the history:

- how each transaction ended (`outcomes`): one row per transaction id, from its `txn-*` rows;
- each reader's isolation level (`reader_levels`, `with_isolation`): the level named by the latest row of
  its process that starts reading, carried to every read;
- one row per transactional record (`by_record`), grouped by value like the by-value pass and joined to
  its transaction's outcome, with a flag per anomaly (`aborted-read`, `uncommitted-read`,
  `lost-committed`, and `partial-transaction` on every record of a transaction it holds for) and one for
  a record the final read may rightly lack (`HIDDEN`, which `truncated-read` leaves out);
- which poll gaps skip a record the reader had to return (`gaps_over_due`): in a transactional topic,
  commit and abort markers take offsets no reader is handed, and readers at read_committed skip the
  records of transactions that did not commit.

Nothing here is planned for a history without transactions (`HistoryViews.transactional`): such a run
pays for none of it.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from kchaos.checkers.passes.frames import (
    ACK,
    ASSIGN,
    FINAL_READ,
    INVOKE,
    POLL,
    TP,
    TPO,
    HistoryViews,
    count_where,
    flag,
    has_transactions,
    is_nemesis,
    is_transactional_record,
)
from kchaos.checkers.passes.transaction_protocols import transaction_protocols
from kchaos.checkers.rules.anomaly_names import (
    ABORTED_READ,
    LOST_COMMITTED,
    PARTIAL_TRANSACTION,
    UNCOMMITTED_READ,
)
from kchaos.checkers.rules.transaction_summary import TransactionSummary
from kchaos.model.events import (
    FAIL,
    INFO,
    ISOLATION,
    OK,
    READ_COMMITTED,
    READ_UNCOMMITTED,
    TXN_ABORT,
    TXN_COMMIT,
    TXN_SEND,
)

#: The flag of a record the final read may rightly lack: its transaction did not commit, and the final
#: read of its partition was not at read_uncommitted. Set only where it matters, on records polled during
#: the run and absent from the final read.
HIDDEN = "hidden_from_final_read"

_ENDS = (TXN_COMMIT, TXN_ABORT)


def _isolation_of(detail: Column) -> Column:
    return F.get_json_object(detail, f"$.{ISOLATION}")


def outcomes(history: DataFrame) -> DataFrame:
    """Per transaction (`txn`): `committed` (a commit acknowledged), `aborted` (no commit may have taken
    effect, and an abort was acknowledged or a commit definitely failed), `first_commit` (the index of its
    first `txn-commit` row of any type) and `first_commit_ns` (the earliest `time_ns` of one: when its
    producer first asked to commit) and `ended_index` (of its first acknowledged commit or abort, or
    failed commit: where a reader can see how it ended)."""
    rows = history.filter(F.col("f").isin(TXN_SEND, *_ENDS) & ~is_nemesis() & F.col("key").isNotNull())

    def n(f: str, *types: str) -> Column:
        return count_where((F.col("f") == f) & F.col("type").isin(*types))

    commit = F.col("f") == TXN_COMMIT
    decisive = (F.col("f").isin(*_ENDS) & (F.col("type") == OK)) | (commit & (F.col("type") == FAIL))
    per_txn = rows.groupBy(F.col("key").alias("txn")).agg(
        (n(TXN_COMMIT, OK) > 0).alias("committed"),
        ((n(TXN_COMMIT, OK, INFO) > 0) | (n(TXN_COMMIT, INVOKE) > n(TXN_COMMIT, FAIL))).alias("may_commit"),
        ((n(TXN_ABORT, OK) > 0) | (n(TXN_COMMIT, FAIL) > 0)).alias("ended_uncommitted"),
        F.min(F.when(commit, F.col("index"))).alias("first_commit"),
        F.min(F.when(commit, F.col("time_ns"))).alias("first_commit_ns"),
        F.min(F.when(decisive, F.col("index"))).alias("ended_index"),
    )
    return per_txn.select(
        "txn",
        "committed",
        (~F.col("may_commit") & F.col("ended_uncommitted")).alias("aborted"),
        "first_commit",
        "first_commit_ns",
        "ended_index",
    )


def reader_levels(history: DataFrame) -> DataFrame:
    """Per process that starts reading (a consumer's `assign`, the final reader's `final-read` invoke), its
    start rows in index order, each with the isolation level it names (null: none). A few rows per reader,
    so it is broadcast to every read."""
    starts = ((F.col("f") == ASSIGN) & (F.col("type") == OK)) | (
        (F.col("f") == FINAL_READ) & (F.col("type") == INVOKE)
    )
    return (
        history.filter(starts & ~is_nemesis())
        .groupBy("process")
        .agg(
            F.array_sort(
                F.collect_list(F.struct("index", _isolation_of(F.col("detail")).alias("isolation")))
            ).alias("starts")
        )
    )


def with_isolation(reads: DataFrame, levels: DataFrame) -> DataFrame:
    """`reads` with `isolation`: the level of the latest start row of the read's process before it (null
    when that row names none, or the process has none)."""
    before = F.filter(
        F.coalesce("starts", F.array().cast("array<struct<index:bigint,isolation:string>>")),
        lambda start: start["index"] < F.col("index"),
    )
    last = F.aggregate(before, F.lit(None).cast("string"), lambda _, start: start["isolation"])
    return (
        reads.join(F.broadcast(levels), on="process", how="left").withColumn("isolation", last).drop("starts")
    )


def final_read_levels(history: DataFrame) -> DataFrame:
    """Per topic-partition the final read covered, whether it read it at read_uncommitted."""
    invokes = history.filter((F.col("f") == FINAL_READ) & (F.col("type") == INVOKE) & ~is_nemesis())
    return invokes.groupBy(*TP).agg(
        F.max(F.coalesce(_isolation_of(F.col("detail")) == READ_UNCOMMITTED, F.lit(False))).alias(
            "final_read_uncommitted"
        )
    )


def _breach(message: Column) -> Column:
    return F.raise_error(F.concat(F.lit("history contract broken: "), message))


def _checked_txn() -> Column:
    """The value's transaction; the check fails at a `txn-send` row naming none, or a value written in two
    transactions: one value must stand for one record of one transaction, or every verdict on it is a
    guess."""
    value = F.coalesce(F.col("value"), F.lit("<null>"))
    keyless = F.concat(F.lit(f"a {TXN_SEND} row of value "), value, F.lit(" names no transaction (key)"))
    several = F.concat(
        F.lit("value "), value, F.lit(" was written in several transactions; a value must be unique per send")
    )
    return (
        F.when(F.col("keyless") > 0, _breach(keyless))
        .when(F.col("txns") > 1, _breach(several))
        .otherwise(F.col("txn"))
    )


def by_record(views: HistoryViews, ends: DataFrame, levels: DataFrame, partitions: DataFrame) -> DataFrame:
    """One row per transactional record (value) that takes part in a transaction anomaly, or that the final
    read may rightly lack though it was polled (`HIDDEN`).

    First per value: its transaction, where its send was acknowledged, how often it was read, its first
    read by a reader at read_committed, whether the final read holds it. Then its transaction's outcome
    (`ends`), whether the final read covered its partition (`partitions`, the per-partition summary),
    and per transaction whether the final read holds some of its records and lacks others, which marks
    `partial-transaction` on all of them. A `txn-send` row naming no transaction, or a value written in
    two, fails the check, as in the reference.
    """
    records = views.history.filter(is_transactional_record()).select(
        F.lit(TXN_SEND).alias("kind"),
        "process",
        *TPO,
        "value",
        "index",
        "time_ns",
        "key",
        "type",
        F.lit(None).cast("string").alias("isolation"),
    )
    reads = with_isolation(views.reads.select("kind", "process", *TPO, "value", "index", "time_ns"), levels)
    reads = reads.select(
        "kind", "process", *TPO, "value", "index", "time_ns", F.lit(None).cast("string").alias("key"),
        F.lit(OK).alias("type"), "isolation",
    )  # fmt: skip
    record = F.col("kind") == TXN_SEND
    acked = record & (F.col("type") == OK)
    read = ~record
    rc_read = read & (F.col("isolation") == READ_COMMITTED)
    first_rc = F.min_by(F.struct("process", *TPO), F.when(rc_read, F.col("index")))
    values = (
        records.unionByName(reads)
        .filter(F.col("value").isNotNull())
        .groupBy("value")
        .agg(
            F.max(F.when(record, F.col("key"))).alias("txn"),
            F.count_distinct(F.when(record, F.col("key"))).alias("txns"),
            count_where(record & F.col("key").isNull()).alias("keyless"),
            F.max(F.when(record, F.col("topic"))).alias("topic"),
            F.max(F.when(record, F.col("partition"))).alias("partition"),
            F.max(F.when(acked, F.col("topic"))).alias("acked_topic"),
            F.max(F.when(acked, F.col("partition"))).alias("acked_partition"),
            F.max(F.when(acked, F.col("offset"))).alias("acked_offset"),
            F.min(F.when(acked, F.col("index"))).alias("ok_index"),
            count_where(read).alias("reads"),
            F.max((read & (F.col("kind") == FINAL_READ)).cast("int")).alias("in_final_read"),
            F.max((read & (F.col("kind") == POLL)).cast("int")).alias("polled"),
            F.min(F.when(rc_read, F.col("index"))).alias("read_index"),
            F.min(F.when(rc_read, F.col("time_ns"))).alias("read_ns"),
            first_rc.alias("first_rc"),
        )
        .filter(F.col("txn").isNotNull() | (F.col("keyless") > 0))
        .withColumn("txn", _checked_txn())
    )
    covered = partitions.select(
        F.col("topic").alias("acked_topic"),
        F.col("partition").alias("acked_partition"),
        F.col("final_read_covered").alias("covered"),
    )
    final_levels = final_read_levels(views.history)
    joined = (
        values.join(F.broadcast(covered), on=["acked_topic", "acked_partition"], how="left")
        .join(F.broadcast(final_levels), on=list(TP), how="left")
        .join(ends, on="txn", how="left")
    )
    committed = F.coalesce(F.col("committed"), F.lit(False))
    in_final = F.col("in_final_read") == 1
    due_in_final = committed & F.col("ok_index").isNotNull() & F.coalesce(F.col("covered"), F.lit(False))
    read_rc = F.col("read_index").isNotNull()
    per_record = joined.select(
        "*",
        (F.coalesce(F.col("aborted"), F.lit(False)) & read_rc).alias(flag(ABORTED_READ)),
        (
            ~F.coalesce(F.col("aborted"), F.lit(False))
            & read_rc
            & (F.col("first_commit_ns").isNull() | (F.col("read_ns") < F.col("first_commit_ns")))
        ).alias(flag(UNCOMMITTED_READ)),
        (due_in_final & (F.col("reads") == 0)).alias(flag(LOST_COMMITTED)),
        (due_in_final & ~in_final).alias("missing"),
        (committed & in_final).alias("present"),
        (
            ~committed
            & ~F.coalesce(F.col("final_read_uncommitted"), F.lit(False))
            & (F.col("polled") == 1)
            & ~in_final
        ).alias(HIDDEN),
    )
    txn = Window.partitionBy("txn")
    partial = (
        F.max(F.col("missing").cast("int")).over(txn) + F.max(F.col("present").cast("int")).over(txn) == 2
    )
    flagged = per_record.withColumn(flag(PARTIAL_TRANSACTION), partial)
    keep = [
        flag(ABORTED_READ),
        flag(UNCOMMITTED_READ),
        flag(LOST_COMMITTED),
        flag(PARTIAL_TRANSACTION),
        HIDDEN,
    ]
    return flagged.filter(F.greatest(*(F.col(name).cast("int") for name in keep)) == 1).select(
        "value", "txn", *TP, "acked_partition", "acked_offset", "ok_index", "reads", "in_final_read",
        "read_index", F.col("first_rc.process").alias("read_process"),
        F.col("first_rc.partition").alias("read_partition"), F.col("first_rc.offset").alias("read_offset"),
        "committed", "aborted", "first_commit", "ended_index", "missing", "present", *keep,
    )  # fmt: skip


def committed_records(history: DataFrame, ends: DataFrame) -> DataFrame:
    """The `value` of every record of a committed transaction whose send was acknowledged: what a run
    wrote in transactions and Kafka owes its readers, so what the headline counts as acknowledged, and a
    record whose truncated read is of an acknowledged record (the by-value pass sees plain sends' acks
    only)."""
    committed = ends.filter(F.col("committed")).select("txn")
    acked = history.filter(is_transactional_record() & (F.col("type") == OK) & F.col("value").isNotNull())
    return (
        acked.select("value", F.col("key").alias("txn")).join(committed, on="txn", how="left_semi")
    ).select("value")


def due_records(views: HistoryViews, ends: DataFrame) -> DataFrame:
    """Every acknowledged record by place (`topic`, `partition`, `offset`), with `committed`: false only
    for a record of a transaction that did not commit, which a reader at read_committed skips. A reader
    may skip any offset not listed: a marker or a record whose send was never acknowledged may be there."""
    plain = views.rows(ACK).select(*TPO, F.lit(True).alias("committed"))
    written = (
        views.history.filter(is_transactional_record() & (F.col("type") == OK))
        .select(*TPO, F.col("key").alias("txn"))
        .join(ends.select("txn", "committed"), on="txn", how="left")
        .select(*TPO, F.coalesce(F.col("committed"), F.lit(False)).alias("committed"))
    )
    return plain.unionByName(written).filter(F.col("offset").isNotNull())


def gaps_over_due(gaps: DataFrame, due: DataFrame, levels: DataFrame) -> DataFrame:
    """The `index` of each gap (a read more than one offset past the reader's previous one; columns
    `process`, `topic`, `partition`, `index`, `previous_offset`, `offset`) over which lies a record the
    reader had to return: any acknowledged record for a reader at read_uncommitted, else an acknowledged
    `send` or a committed transaction's record.

    Counted, not joined: per partition, the due records and each gap's two ends sorted by offset, a running
    count of due records says how many lie below each end, and a gap holds one when its two counts differ.
    Each end sorts before a due record at its own offset, so the count is of those strictly below it."""
    ends = with_isolation(gaps.select("process", *TP, "index", "previous_offset", "offset"), levels).select(
        *TP, "index", (F.col("isolation") == READ_UNCOMMITTED).alias("uncommitted"),
        F.explode(F.array(
            F.struct(F.lit(0).alias("end"), (F.col("previous_offset") + 1).alias("at")),
            F.struct(F.lit(1).alias("end"), F.col("offset").alias("at")),
        )).alias("probe"),
    ).select(
        *TP, "index", "uncommitted", F.col("probe.end").alias("end"), F.col("probe.at").alias("at"),
        F.lit(0).alias("due"), F.lit(0).alias("due_committed"),
    )  # fmt: skip
    records = due.select(
        *TP,
        F.lit(None).cast("bigint").alias("index"),
        F.lit(None).cast("boolean").alias("uncommitted"),
        F.lit(None).cast("int").alias("end"),
        F.col("offset").alias("at"),
        F.lit(1).alias("due"),
        F.col("committed").cast("int").alias("due_committed"),
    )
    order = (
        Window.partitionBy(*TP)
        .orderBy("at", F.col("index").isNull())
        .rowsBetween(Window.unboundedPreceding, Window.currentRow)
    )
    counted = (
        ends.unionByName(records)
        .select(
            "*", F.sum("due").over(order).alias("below"), F.sum("due_committed").over(order).alias("below_c")
        )
        .filter(F.col("index").isNotNull())
    )

    def inside(column: str) -> Column:
        return F.max(F.when(F.col("end") == 1, F.col(column))) - F.max(
            F.when(F.col("end") == 0, F.col(column))
        )

    per_gap = counted.groupBy("index").agg(
        F.max(F.coalesce(F.col("uncommitted"), F.lit(False))).alias("uncommitted"),
        inside("below").alias("due"),
        inside("below_c").alias("due_committed"),
    )
    over = F.when(F.col("uncommitted"), F.col("due") > 0).otherwise(F.col("due_committed") > 0)
    return per_gap.filter(over).select("index")


def transaction_summary(history: DataFrame) -> TransactionSummary | None:
    """How the history's transactions ended, and how many records readers of an unrecorded isolation level
    returned; None when no record was written in a transaction. A history without transactions costs one
    small job (`has_transactions`: a tenth of a second on a million sends, where counting outcomes costs
    most of a second); one with them, two more."""
    if not has_transactions(history):
        return None
    ends = outcomes(history)
    records = history.filter(is_transactional_record() & F.col("value").isNotNull())
    row = (
        ends.agg(
            F.count("*").alias("transactions"),
            count_where(F.col("committed")).alias("committed"),
            count_where(F.col("aborted")).alias("aborted"),
        )
        .crossJoin(records.agg(F.count_distinct("value").alias("records")))
        .crossJoin(committed_records(history, ends).agg(F.count_distinct("value").alias("committed_records")))
        .first()
    )
    assert row is not None  # an aggregate without grouping has one row
    reads = history.filter(
        F.col("f").isin(POLL, FINAL_READ) & (F.col("type") == OK) & ~is_nemesis() & F.col("value").isNotNull()
    ).select("process", "index")
    unknown = with_isolation(reads, reader_levels(history)).filter(F.col("isolation").isNull()).count()
    return TransactionSummary(
        protocols=transaction_protocols(history),
        transactions=int(row["transactions"]),
        committed=int(row["committed"]),
        aborted=int(row["aborted"]),
        records=int(row["records"]),
        committed_records=int(row["committed_records"]),
        reads_of_unknown_isolation=int(unknown),
    )
