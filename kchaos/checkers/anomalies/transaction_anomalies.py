"""The transaction anomalies, cut from the by-record pass of a transactional history
(`kchaos.checkers.passes.transaction_passes.by_record`): `aborted-read`, `uncommitted-read`, `lost-committed`,
`partial-transaction`.

Each is its occurrences (`kchaos.checkers.anomalies.definition.Occurrences`); the registry of every anomaly is
`kchaos.checkers.anomalies.registry.ANOMALIES`.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from kchaos.checkers.anomalies.definition import Occurrences
from kchaos.checkers.passes.history_passes import Passes, flag
from kchaos.checkers.rules.anomaly_names import (
    ABORTED_READ,
    LOST_COMMITTED,
    PARTIAL_TRANSACTION,
    UNCOMMITTED_READ,
)


def _records(passes: Passes, anomaly: str) -> DataFrame:
    return passes.transactions().filter(F.col(flag(anomaly)))


def aborted_reads(passes: Passes) -> list[Occurrences]:
    """`aborted-read`: a record of an aborted transaction that a reader at read_committed returned. The
    example names the transaction, where it was acknowledged, the first read at read_committed (reader,
    partition, offset, index) and the index of the row that ended the transaction."""
    frame = _records(passes, ABORTED_READ).select(
        F.col("value").alias("id"), "value", "txn", F.col("read_partition").alias("partition"),
        F.col("read_offset").alias("offset"), "read_process", "read_index", "ok_index",
        F.col("ended_index").alias("aborted_index"),
    )  # fmt: skip
    return [Occurrences(frame, ("read_index", "value"))]


def uncommitted_reads(passes: Passes) -> list[Occurrences]:
    """`uncommitted-read`: a record of a transaction not aborted that a reader at read_committed returned
    before its producer first asked to commit (by `time_ns`, when each happened: a client process's line
    can be recorded after a read it preceded, `kchaos.model.stamped_rows`; the example names the commit's
    row, `first_commit_index`, null: it never asked)."""
    frame = _records(passes, UNCOMMITTED_READ).select(
        F.col("value").alias("id"), "value", "txn", F.col("read_partition").alias("partition"),
        F.col("read_offset").alias("offset"), "read_process", "read_index", "ok_index",
        F.col("first_commit").alias("first_commit_index"),
    )  # fmt: skip
    return [Occurrences(frame, ("read_index", "value"))]


def lost_committed(passes: Passes) -> list[Occurrences]:
    """`lost-committed`: a record of a committed transaction, acknowledged in a partition the final read
    covered, that no reader ever returned. The example gives where it was acknowledged and the index of
    the commit's acknowledgement."""
    frame = _records(passes, LOST_COMMITTED).select(
        F.col("value").alias("id"), "value", "txn", "topic",
        F.col("acked_partition").alias("partition"), F.col("acked_offset").alias("offset"), "ok_index",
        F.col("ended_index").alias("commit_index"),
    )  # fmt: skip
    return [Occurrences(frame, ("ok_index", "value"))]


def partial_transactions(passes: Passes) -> list[Occurrences]:
    """`partial-transaction`: a committed transaction the final read returned some records of and lacks
    others it should hold. The example lists both halves: the records the final read holds (`present`)
    and those it lacks (`missing`, each `value@partition/offset` where it was acknowledged)."""
    rows = _records(passes, PARTIAL_TRANSACTION)
    missing = F.concat(F.col("value"), F.lit("@"), F.concat_ws("/", "acked_partition", "acked_offset"))
    frame = rows.groupBy("txn").agg(
        F.min("ended_index").alias("commit_index"),
        F.array_sort(F.collect_list(F.when(F.col("present"), F.col("value")))).alias("present"),
        F.array_sort(F.collect_list(F.when(F.col("missing"), missing))).alias("missing"),
    )
    frame = frame.select(F.col("txn").alias("id"), "txn", "commit_index", "present", "missing")
    return [Occurrences(frame, ("commit_index", "txn"))]
