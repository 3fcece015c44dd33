"""The anomaly definitions (design.md §3): each is its occurrences, a DataFrame with one `id` per occurrence.

A history can be millions of rows, so nothing here collects it. The passes (`kchaos.checkers.passes`) mark the
rows that take part in an anomaly, in a flag column named after it; each anomaly's occurrences are cut
from those marked rows, with an `id` column (the identity the contract fixes, shared with the pandas
reference in `tests.reference.anomalies`), the columns that place it, a stable order, and how its examples are
completed from the history (`kchaos.checkers.examples`). Counting and showing them is
`kchaos.checkers.findings`.

Adding an anomaly means a flag in a pass, one `Anomaly` in `ANOMALIES`, a rule in the oracle, and the
same definition in the pandas reference.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import reduce

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from kchaos.checkers.examples import (
    ACKNOWLEDGEMENT,
    PLACES_READ,
    POLL_THEN_GONE,
    READ_INSTEAD,
    READS_AT_OFFSET,
    REPLICAS_AT_OFFSET,
    Explainer,
)
from kchaos.checkers.frames import TPO
from kchaos.checkers.names import (
    ABORTED_READ,
    DUPLICATE,
    INCONSISTENT_OFFSET,
    LOST_COMMITTED,
    LOST_WRITE,
    NONMONOTONIC_POLL,
    NONMONOTONIC_SEND,
    OFFSET_DIFFERS,
    PARTIAL_TRANSACTION,
    POLL_SKIP,
    REPLICA_DIVERGENCE,
    TRUNCATED_READ,
    UNCOMMITTED_READ,
    UNSEEN,
    VALUES_DIFFER,
)
from kchaos.checkers.passes import Passes, flag
from kchaos.checkers.transactions import HIDDEN


@dataclass(frozen=True)
class Occurrences:
    """One kind of occurrence of an anomaly: rows with an `id` and the columns that place it, in order."""

    frame: DataFrame
    order: tuple[str, ...]
    explainer: Explainer | None = None


@dataclass(frozen=True)
class Anomaly:
    """One anomaly: its name and how its occurrences are cut from the passes.

    Most anomalies have one kind of occurrence; `inconsistent-offset` has two, whose examples alternate so
    a flood of one cannot hide the other. `by_partition`, where set, breaks the count down by partition:
    examples are capped, whether losses gather where the faults struck is the first thing a reader asks,
    and after a power loss each partition is judged by what the loss did to its own replicas. Every
    anomaly a truncation can cause has one; `duplicate` and `replica-divergence` are judged alike in
    every partition. It is a frame of (`partition`, `count`), not the counts, so that a check collects
    every anomaly's in one Spark job (`kchaos.checkers.findings`).
    """

    name: str
    occurrences: Callable[[Passes], list[Occurrences]]
    needs_replicas: bool = False
    by_partition: Callable[[Passes], DataFrame] | None = None
    needs_transactions: bool = False
    #: Where set, a frame of (`kind`, `count`): the anomaly's occurrences by kind, each counted once, for an
    #: anomaly whose kinds mean different things (`group-duplicate`: redelivered after a rebalance or not).
    #: Computed with its examples, so only when it occurred.
    by_kind: Callable[[Passes], DataFrame] | None = None

    def is_checked(self, passes: Passes) -> bool:
        """False when the history lacks what the anomaly is judged from (replica dumps, transactions)."""
        return (passes.replicas_checked or not self.needs_replicas) and (
            passes.transactional or not self.needs_transactions
        )

    def ids(self, passes: Passes) -> DataFrame:
        """The `id` of every occurrence, of every kind, as one frame (an id may repeat)."""
        frames = [part.frame.select("id") for part in self.occurrences(passes)]
        return reduce(DataFrame.unionByName, frames)


# --- lost-write, unseen ----------------------------------------------------------------------------------

#: The `by_partition` key of a write acknowledged without a partition (a foreign history may hold one).
UNKNOWN_PARTITION = "unknown"


def _unread_acks(passes: Passes, anomaly: str) -> DataFrame:
    return (
        passes.value()
        .filter(F.col(flag(anomaly)))
        .select(
            F.col("value").alias("id"),
            "value",
            F.col("acked_partition").alias("partition"),
            F.col("acked_offset").alias("offset"),
            "ok_index",
            "highest_read_offset",
        )
    )


def partition_key(partition: int | None) -> str:
    """The `by_partition` key of a partition: the partition as a string, or `UNKNOWN_PARTITION`."""
    return str(partition) if partition is not None else UNKNOWN_PARTITION


def _per_acked_partition(anomaly: str) -> Callable[[Passes], DataFrame]:
    """An anomaly's count per acknowledged partition (`partition`, `count`).

    One small aggregation of the cached by-value pass, which holds one row per flagged value, so the counts
    add up to the anomaly's count.
    """

    def counted(passes: Passes) -> DataFrame:
        return (
            passes.value()
            .filter(F.col(flag(anomaly)))
            .groupBy(F.col("acked_partition").alias("partition"))
            .count()
        )

    return counted


def per_occurrence_partition(
    occurrences: Callable[[Passes], list[Occurrences]],
) -> Callable[[Passes], DataFrame]:
    """An anomaly's distinct occurrences per partition (`partition`, `count`), from its occurrence frames'
    `partition` column."""

    def counted(passes: Passes) -> DataFrame:
        frames = [part.frame.select("id", "partition") for part in occurrences(passes)]
        return (
            reduce(DataFrame.unionByName, frames)
            .groupBy("partition")
            .agg(F.count_distinct("id").alias("count"))
        )

    return counted


def lost_writes(passes: Passes) -> list[Occurrences]:
    """`lost-write`: an acknowledged send at or below the highest offset read from its partition, never read.

    Reads got past its offset, so the value had every chance to be seen; that it never was means the log
    no longer holds it there (or anywhere). Each example shows what was read at the acknowledged offset
    instead and at the read horizon, which usually points at the truncation that replaced it.
    """
    return [Occurrences(_unread_acks(passes, LOST_WRITE), ("ok_index", "value"), READ_INSTEAD)]


def unseen(passes: Passes) -> list[Occurrences]:
    """`unseen`: an acknowledged send never read and above every offset read from its partition.

    Unlike a `lost-write`, nothing read got past it: either the final read stopped short, or the
    partition's tail (this send included) was truncated and nothing was written after it. A partition
    with no reads at all puts every acknowledged send to it here.
    """
    return [Occurrences(_unread_acks(passes, UNSEEN), ("ok_index", "value"), ACKNOWLEDGEMENT)]


# --- duplicate, inconsistent-offset ----------------------------------------------------------------------


def duplicates(passes: Passes) -> list[Occurrences]:
    """`duplicate`: one value read at more than one distinct topic-partition-offset.

    Re-reading one offset (a second consumer, a rebalance) is not a duplicate; the value must occupy two
    places in the log, as a producer retry that re-appends a record does. Counted once per value.
    """
    frame = (
        passes.value()
        .filter(F.col(flag(DUPLICATE)))
        .select(F.col("value").alias("id"), "value", "first_read_index")
    )
    return [Occurrences(frame, ("first_read_index", "value"), PLACES_READ)]


def inconsistent_offsets(passes: Passes) -> list[Occurrences]:
    """`inconsistent-offset`: reads disagree with each other or with the acknowledgement about an offset.

    Two kinds, counted together (ids and examples carry the kind):
    - `values-differ`: one topic-partition-offset read with different values, across consumers or reads
      (once per offset);
    - `offset-differs`: a value read at places other than the one its send was acknowledged at, and never
      at the acknowledged one (once per value).

    Refinement of design.md §3: a value read at its acknowledged offset *and* elsewhere is a `duplicate`
    only. The copy at the acknowledged offset shows the acknowledgement was truthful; the extra copy is a
    re-append, which `duplicate` already counts, and counting it twice would charge a producer retry as a
    consistency failure.
    """
    differ = (
        passes.offset()
        .filter(F.col(flag(VALUES_DIFFER)))
        .select(
            F.concat(F.lit(VALUES_DIFFER + ":"), F.concat_ws("/", *TPO)).alias("id"),
            F.lit(VALUES_DIFFER).alias("kind"),
            *TPO,
            "first_read_index",
        )
    )
    moved = (
        passes.value()
        .filter(F.col(flag(OFFSET_DIFFERS)))
        .select(
            F.concat(F.lit(OFFSET_DIFFERS + ":"), F.col("value")).alias("id"),
            F.lit(OFFSET_DIFFERS).alias("kind"),
            "value",
            F.col("acked_partition").alias("partition"),
            "first_read_index",
        )
    )
    return [
        Occurrences(differ, TPO, READS_AT_OFFSET),
        Occurrences(moved, ("first_read_index", "value"), PLACES_READ),
    ]


# --- nonmonotonic-send, poll-skip, nonmonotonic-poll ------------------------------------------------------


def nonmonotonic_sends(passes: Passes) -> list[Occurrences]:
    """`nonmonotonic-send`: a producer's send acknowledged at or below the offset of the send it invoked
    just before, to the same partition.

    Each example shows both sends — value, offset, when each was invoked and acknowledged — so the swap can
    be found in the history by index.
    """
    frame = (
        passes.send_order()
        .filter(F.col(flag(NONMONOTONIC_SEND)))
        .select(
            F.col("value").alias("id"),
            "process",
            "topic",
            "partition",
            "value",
            "offset",
            "invoke_index",
            "ok_index",
            "ok_wall_time",
            "previous_value",
            "previous_offset",
            "previous_invoke_index",
            "previous_ok_index",
        )
    )
    return [Occurrences(frame, ("invoke_index", "ok_index", "value"))]


def _poll_order(passes: Passes, anomaly: str, gap_name: str, gap: Column) -> list[Occurrences]:
    frame = (
        passes.poll_order()
        .filter(F.col(flag(anomaly)))
        .select(
            F.concat_ws(":", F.col("process"), F.col("index")).alias("id"),
            "process",
            "topic",
            "partition",
            "previous_offset",
            "previous_value",
            "previous_index",
            "offset",
            "value",
            "index",
            gap.alias(gap_name),
        )
    )
    return [Occurrences(frame, ("index", "process"))]


def poll_skips(passes: Passes) -> list[Occurrences]:
    """`poll-skip`: a reader's next record of a partition lies more than one offset past its previous one,
    with no reassignment between. `skipped` is how many offsets it jumped over."""
    return _poll_order(passes, POLL_SKIP, "skipped", F.col("offset") - F.col("previous_offset") - 1)


def nonmonotonic_polls(passes: Passes) -> list[Occurrences]:
    """`nonmonotonic-poll`: a reader's next record of a partition is at or before its previous one, with no
    reassignment between. `back_by` is how far it went back (0: the same offset again)."""
    return _poll_order(passes, NONMONOTONIC_POLL, "back_by", F.col("previous_offset") - F.col("offset"))


# --- truncated-read, replica-divergence -------------------------------------------------------------------


def truncated_reads(passes: Passes) -> list[Occurrences]:
    """`truncated-read`: a value a consumer polled during the run that the final read does not hold, in a
    partition the final read covered: it was visible, then lost. The example is its first such poll.

    Not a record of a transaction that did not commit, which a final read at read_committed rightly
    lacks however a reader at read_uncommitted saw it (`kchaos.checkers.transactions.HIDDEN`)."""
    frame = (
        passes.value()
        .filter(F.col(flag(TRUNCATED_READ)))
        .select(
            F.col("value").alias("id"),
            "value",
            F.col("covered_poll_index").alias("poll_index"),
            F.col("covered_poll_partition").alias("partition"),
            F.col("covered_poll_offset").alias("offset"),
        )
    )
    if passes.transactional:
        hidden = passes.transactions().filter(F.col(HIDDEN)).select("value")
        frame = frame.join(hidden, on="value", how="left_anti")
    return [Occurrences(frame, ("poll_index", "value"), POLL_THEN_GONE)]


def replica_divergences(passes: Passes) -> list[Occurrences]:
    """`replica-divergence`: an offset inside the ranges of two or more replicas at which they differ.

    Either the replicas covering it hold different values there, or one of them holds no record there.
    Each example lists what every replica holds at the offset (broker, value, leader epoch), which
    covering replicas hold nothing, and every replica's range of the partition.
    """
    frame = (
        passes.offset()
        .filter(F.col(flag(REPLICA_DIVERGENCE)))
        .select(F.concat_ws("/", *TPO).alias("id"), *TPO, "covering", "ranges")
    )
    return [Occurrences(frame, TPO, REPLICAS_AT_OFFSET)]


# --- the transaction anomalies ---------------------------------------------------------------------------


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
    before its producer first asked to commit (`first_commit_index`; null: it never asked)."""
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
        F.col("value").alias("id"), "value", "txn", F.col("acked_partition").alias("partition"),
        F.col("acked_offset").alias("offset"), "ok_index", F.col("ended_index").alias("commit_index"),
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


def _counted_where_they_occur(name: str, occurrences: Callable[[Passes], list[Occurrences]]) -> Anomaly:
    """An anomaly counted per partition from its own occurrence frames' `partition` column."""
    return Anomaly(name, occurrences, by_partition=per_occurrence_partition(occurrences))


#: Every anomaly the checker reports, by the one name used everywhere, in report order.
ANOMALIES: dict[str, Anomaly] = {
    anomaly.name: anomaly
    for anomaly in (
        Anomaly(LOST_WRITE, lost_writes, by_partition=_per_acked_partition(LOST_WRITE)),
        Anomaly(UNSEEN, unseen, by_partition=_per_acked_partition(UNSEEN)),
        Anomaly(DUPLICATE, duplicates),
        _counted_where_they_occur(INCONSISTENT_OFFSET, inconsistent_offsets),
        _counted_where_they_occur(NONMONOTONIC_SEND, nonmonotonic_sends),
        _counted_where_they_occur(POLL_SKIP, poll_skips),
        _counted_where_they_occur(NONMONOTONIC_POLL, nonmonotonic_polls),
        _counted_where_they_occur(TRUNCATED_READ, truncated_reads),
        Anomaly(REPLICA_DIVERGENCE, replica_divergences, needs_replicas=True),
        Anomaly(ABORTED_READ, aborted_reads, needs_transactions=True),
        Anomaly(UNCOMMITTED_READ, uncommitted_reads, needs_transactions=True),
        Anomaly(
            LOST_COMMITTED,
            lost_committed,
            by_partition=per_occurrence_partition(lost_committed),
            needs_transactions=True,
        ),
        Anomaly(PARTIAL_TRANSACTION, partial_transactions, needs_transactions=True),
    )
}
