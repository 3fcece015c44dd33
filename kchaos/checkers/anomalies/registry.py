"""The anomaly definitions (design.md §3): each is its occurrences, a DataFrame with one `id` per occurrence.

A history can be millions of rows, so nothing here collects it. The passes
(`kchaos.checkers.passes.history_passes`) mark the rows that take part in an anomaly, in a flag column named
after it; each anomaly's occurrences are cut from those marked rows, with an `id` column (the identity the
contract fixes, shared with the pandas reference in `tests.reference.anomalies`), the columns that place it, a
stable order, and how its examples are completed from the history (`kchaos.checkers.anomalies.examples`).
Counting and showing them is `kchaos.checkers.anomalies.findings`.

Adding an anomaly means a flag in a pass, one `Anomaly` in `ANOMALIES`, a rule in the oracle, and the
same definition in the pandas reference.

The definitions live by the pass they are cut from (`kchaos.checkers.anomalies.content_anomalies`,
`kchaos.checkers.anomalies.order_anomalies`, `kchaos.checkers.anomalies.transaction_anomalies`), what an
anomaly is in `kchaos.checkers.anomalies.definition`; this module is the registry of them all, in report
order.
"""

from __future__ import annotations

from kchaos.checkers.anomalies.content_anomalies import (
    duplicates,
    inconsistent_offsets,
    lost_writes,
    replica_divergences,
    truncated_read_kinds,
    truncated_reads,
    unseen,
)
from kchaos.checkers.anomalies.definition import Anomaly
from kchaos.checkers.anomalies.order_anomalies import nonmonotonic_polls, nonmonotonic_sends, poll_skips
from kchaos.checkers.anomalies.transaction_anomalies import (
    aborted_reads,
    lost_committed,
    partial_transactions,
    uncommitted_reads,
)
from kchaos.checkers.rules.anomaly_names import (
    ABORTED_READ,
    DUPLICATE,
    INCONSISTENT_OFFSET,
    LOST_COMMITTED,
    LOST_WRITE,
    NONMONOTONIC_POLL,
    NONMONOTONIC_SEND,
    PARTIAL_TRANSACTION,
    POLL_SKIP,
    REPLICA_DIVERGENCE,
    TRUNCATED_READ,
    UNCOMMITTED_READ,
    UNSEEN,
)

#: Every anomaly the checker reports, by the one name used everywhere, in report order.
ANOMALIES: dict[str, Anomaly] = {
    anomaly.name: anomaly
    for anomaly in (
        Anomaly(LOST_WRITE, lost_writes, by_partition=True),
        Anomaly(UNSEEN, unseen, by_partition=True),
        Anomaly(DUPLICATE, duplicates),
        Anomaly(INCONSISTENT_OFFSET, inconsistent_offsets, by_partition=True),
        Anomaly(NONMONOTONIC_SEND, nonmonotonic_sends, by_partition=True),
        Anomaly(POLL_SKIP, poll_skips, by_partition=True),
        Anomaly(NONMONOTONIC_POLL, nonmonotonic_polls, by_partition=True),
        Anomaly(TRUNCATED_READ, truncated_reads, by_partition=True, by_kind=truncated_read_kinds),
        Anomaly(REPLICA_DIVERGENCE, replica_divergences, needs_replicas=True),
        Anomaly(ABORTED_READ, aborted_reads, needs_transactions=True),
        Anomaly(UNCOMMITTED_READ, uncommitted_reads, needs_transactions=True),
        Anomaly(
            LOST_COMMITTED,
            lost_committed,
            by_partition=True,
            needs_transactions=True,
        ),
        Anomaly(PARTIAL_TRANSACTION, partial_transactions, needs_transactions=True),
    )
}
