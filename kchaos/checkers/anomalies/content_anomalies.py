"""The anomalies of what the log holds, cut from the by-value and by-offset passes: `lost-write`, `unseen`,
`duplicate`, `inconsistent-offset`, `truncated-read`, `replica-divergence`.

Each is its occurrences (`kchaos.checkers.anomalies.definition.Occurrences`); the registry of every anomaly is
`kchaos.checkers.anomalies.registry.ANOMALIES`.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from kchaos.checkers.anomalies.definition import Occurrences
from kchaos.checkers.anomalies.examples import (
    ACKNOWLEDGEMENT,
    PLACES_READ,
    POLL_THEN_GONE,
    READ_INSTEAD,
    READS_AT_OFFSET,
    REPLICAS_AT_OFFSET,
)
from kchaos.checkers.passes.frames import TPO
from kchaos.checkers.passes.history_passes import Passes, flag
from kchaos.checkers.passes.transaction_passes import HIDDEN, committed_records
from kchaos.checkers.rules.anomaly_names import (
    ACKNOWLEDGED,
    DUPLICATE,
    LOST_WRITE,
    OFFSET_DIFFERS,
    REPLICA_DIVERGENCE,
    TRUNCATED_READ,
    UNACKNOWLEDGED,
    UNSEEN,
    VALUES_DIFFER,
)

# --- lost-write, unseen ----------------------------------------------------------------------------------


def _unread_acks(passes: Passes, anomaly: str) -> DataFrame:
    return (
        passes.value()
        .filter(F.col(flag(anomaly)))
        .select(
            F.col("value").alias("id"),
            "value",
            F.col("acked_topic").alias("topic"),
            F.col("acked_partition").alias("partition"),
            F.col("acked_offset").alias("offset"),
            "ok_index",
            "highest_read_offset",
        )
    )


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
            F.col("acked_topic").alias("topic"),
            F.col("acked_partition").alias("partition"),
            "first_read_index",
        )
    )
    return [
        Occurrences(differ, TPO, READS_AT_OFFSET),
        Occurrences(moved, ("first_read_index", "value"), PLACES_READ),
    ]


# --- truncated-read, replica-divergence -------------------------------------------------------------------


def truncated_reads(passes: Passes) -> list[Occurrences]:
    """`truncated-read`: a value a consumer polled during the run that the final read does not hold, in a
    partition the final read covered: it was visible, then lost. The example is its first such poll.

    Not a record of a transaction that did not commit, which a final read at read_committed rightly
    lacks however a reader at read_uncommitted saw it (`kchaos.checkers.passes.transaction_passes.HIDDEN`).
    The example says whether its send was acknowledged (`truncated_read_kinds`): for a record written in a
    transaction, whether it is one of a committed transaction's acknowledged records (a `txn` run's
    truncated reads were all `unacknowledged`, so its headline `lost` left them out)."""
    frame = (
        passes.value()
        .filter(F.col(flag(TRUNCATED_READ)))
        .select(
            F.col("value").alias("id"),
            "value",
            F.col("covered_poll_index").alias("poll_index"),
            F.col("covered_poll_topic").alias("topic"),
            F.col("covered_poll_partition").alias("partition"),
            F.col("covered_poll_offset").alias("offset"),
            F.col("ok_index").isNotNull().alias(ACKNOWLEDGED),
        )
    )
    if passes.transactional:
        hidden = passes.transactions().filter(F.col(HIDDEN)).select("value")
        acknowledged = committed_records(passes.views.history, passes.outcomes())
        committed = acknowledged.select("value", F.lit(True).alias("committed"))
        frame = (
            frame.join(hidden, on="value", how="left_anti")
            .join(committed, on="value", how="left")
            .withColumn(ACKNOWLEDGED, F.col(ACKNOWLEDGED) | F.coalesce(F.col("committed"), F.lit(False)))
            .drop("committed")
        )
    return [Occurrences(frame, ("poll_index", "value"), POLL_THEN_GONE)]


def truncated_read_kinds(passes: Passes) -> DataFrame:
    """(`kind`, `count`) of `truncated-read`: `acknowledged` where the record's send was acknowledged,
    `unacknowledged` where it never was."""
    frame = truncated_reads(passes)[0].frame
    kind = F.when(F.col(ACKNOWLEDGED), ACKNOWLEDGED).otherwise(UNACKNOWLEDGED)
    return frame.groupBy(kind.alias("kind")).count()


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
