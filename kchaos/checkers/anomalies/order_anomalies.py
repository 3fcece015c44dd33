"""The anomalies of order, cut from the two order passes: `nonmonotonic-send`, `poll-skip`,
`nonmonotonic-poll`.

Each is its occurrences (`kchaos.checkers.anomalies.definition.Occurrences`); the registry of every anomaly is
`kchaos.checkers.anomalies.registry.ANOMALIES`.
"""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F

from kchaos.checkers.anomalies.definition import Occurrences
from kchaos.checkers.passes.history_passes import Passes, flag
from kchaos.checkers.rules.anomaly_names import NONMONOTONIC_POLL, NONMONOTONIC_SEND, POLL_SKIP


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
