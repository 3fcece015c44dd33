"""The anomalies inside one read-write transaction (issue 49, docs/anomalies.md) on Spark, each cut from
the internal passes (`kchaos.checkers.passes.read_write.internal_passes`, which says what each is). They apply
only to a history whose transactions polled (`txn-poll` rows); the pandas reference they are tested against is
`tests.reference.internal`.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from kchaos.checkers.anomalies.definition import Anomaly, Occurrences
from kchaos.checkers.passes.frames import TPO
from kchaos.checkers.passes.history_passes import Passes, flag
from kchaos.checkers.passes.read_write.internal_passes import (
    PAIR_COLUMNS,
    by_internal_poll_order,
    by_internal_send_order,
    precommitted_reads,
)
from kchaos.checkers.passes.transaction_passes import due_records
from kchaos.checkers.rules.anomaly_names import (
    INT_NONMONOTONIC_POLL,
    INT_NONMONOTONIC_SEND,
    INT_POLL_SKIP,
    INT_SEND_SKIP,
    PRECOMMITTED_READ,
)


def _poll_order(passes: Passes) -> DataFrame:
    due, levels, reads = (
        due_records(passes.views, passes.outcomes()),
        passes.levels(),
        passes.transaction_reads(),
    )
    return passes.cached("internal_poll_order", lambda views: by_internal_poll_order(reads, due, levels))


def _send_order(passes: Passes) -> DataFrame:
    due, levels = due_records(passes.views, passes.outcomes()), passes.levels()
    return passes.cached("internal_send_order", lambda views: by_internal_send_order(views, due, levels))


def _pairs(frame: DataFrame, anomaly: str) -> list[Occurrences]:
    """The occurrences of `anomaly` in an internal order pass: one per later read or send of a pair, its
    id the transaction and the row's index."""
    found = frame.filter(F.col(flag(anomaly))).select(
        F.concat_ws(":", F.col("txn"), F.col("index")).alias("id"), *PAIR_COLUMNS
    )
    return [Occurrences(found, ("index", "txn"))]


def int_poll_skips(passes: Passes) -> list[Occurrences]:
    """`int-poll-skip`: a transaction's read of a partition more than one offset past its previous read of
    it, over a record it had to return."""
    return _pairs(_poll_order(passes), INT_POLL_SKIP)


def int_nonmonotonic_polls(passes: Passes) -> list[Occurrences]:
    """`int-nonmonotonic-poll`: a transaction's read of a partition at or before its previous read of it."""
    return _pairs(_poll_order(passes), INT_NONMONOTONIC_POLL)


def int_send_skips(passes: Passes) -> list[Occurrences]:
    """`int-send-skip`: another acknowledged record between two successive sends of one transaction to a
    partition."""
    return _pairs(_send_order(passes), INT_SEND_SKIP)


def int_nonmonotonic_sends(passes: Passes) -> list[Occurrences]:
    """`int-nonmonotonic-send`: a transaction's send acknowledged at or below the offset of its previous
    send to the partition."""
    return _pairs(_send_order(passes), INT_NONMONOTONIC_SEND)


def precommitted(passes: Passes) -> list[Occurrences]:
    """`precommitted-read`: a transaction's poll returned a record that transaction wrote itself."""
    levels, reads = passes.levels(), passes.transaction_reads()
    frame = passes.cached(
        "precommitted_reads", lambda views: precommitted_reads(views, reads, levels)
    ).select(
        F.concat_ws(":", F.col("txn"), F.col("index")).alias("id"),
        "txn",
        "process",
        *TPO,
        "value",
        "index",
        "send_index",
    )
    return [Occurrences(frame, ("index", "txn"))]


#: The anomalies inside one transaction, in report order
#: (`kchaos.checkers.rules.anomaly_names.INTERNAL_ANOMALY_NAMES`).
INTERNAL_ANOMALIES: dict[str, Anomaly] = {
    anomaly.name: anomaly
    for anomaly in (
        Anomaly(PRECOMMITTED_READ, precommitted, by_partition=True, needs_transactions=True),
        Anomaly(INT_POLL_SKIP, int_poll_skips, by_partition=True, needs_transactions=True),
        Anomaly(INT_NONMONOTONIC_POLL, int_nonmonotonic_polls, by_partition=True, needs_transactions=True),
        Anomaly(INT_NONMONOTONIC_SEND, int_nonmonotonic_sends, by_partition=True, needs_transactions=True),
        Anomaly(INT_SEND_SKIP, int_send_skips, by_partition=True, needs_transactions=True),
    )
}
