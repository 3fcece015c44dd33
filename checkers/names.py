"""The anomaly names: one spelling per concept, shared by checks, oracle, results and reports.

Kept apart from the Spark definitions so the oracle and the pandas reference (neither needs a JVM) can name
anomalies without importing Spark.
"""

from __future__ import annotations

LOST_WRITE = "lost-write"
UNSEEN = "unseen"
DUPLICATE = "duplicate"
INCONSISTENT_OFFSET = "inconsistent-offset"
NONMONOTONIC_SEND = "nonmonotonic-send"
POLL_SKIP = "poll-skip"
NONMONOTONIC_POLL = "nonmonotonic-poll"
TRUNCATED_READ = "truncated-read"
REPLICA_DIVERGENCE = "replica-divergence"

#: Every anomaly, in the order reports list them: what happened to acknowledged writes first, then what
#: readers saw, then what the brokers' own logs hold.
ANOMALY_NAMES: tuple[str, ...] = (
    LOST_WRITE,
    UNSEEN,
    DUPLICATE,
    INCONSISTENT_OFFSET,
    NONMONOTONIC_SEND,
    POLL_SKIP,
    NONMONOTONIC_POLL,
    TRUNCATED_READ,
    REPLICA_DIVERGENCE,
)

#: The two kinds of `inconsistent-offset`; each occurrence's id starts with its kind and a colon.
VALUES_DIFFER = "values-differ"
OFFSET_DIFFERS = "offset-differs"
