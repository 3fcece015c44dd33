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

#: The two kinds of `inconsistent-offset`; each occurrence's id starts with its kind and a colon.
VALUES_DIFFER = "values-differ"
OFFSET_DIFFERS = "offset-differs"

# Transactions: judged only in a history whose records were written inside transactions.
ABORTED_READ = "aborted-read"
UNCOMMITTED_READ = "uncommitted-read"
LOST_COMMITTED = "lost-committed"
PARTIAL_TRANSACTION = "partial-transaction"

#: The transaction anomalies, in the order reports list them: what readers saw that they must not have,
#: then what committed transactions lost.
TRANSACTION_ANOMALY_NAMES: tuple[str, ...] = (
    ABORTED_READ,
    UNCOMMITTED_READ,
    LOST_COMMITTED,
    PARTIAL_TRANSACTION,
)

#: Every anomaly, in the order reports list them: what happened to acknowledged writes first, then what
#: readers saw, then what the brokers' own logs hold, then what became of transactions.
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
    *TRANSACTION_ANOMALY_NAMES,
)

# Consumer groups (issue 17): judged only on histories whose readers are members of a consumer group (`assign`
# or `commit` rows naming a `group`), so not in `ANOMALY_NAMES`, which every history is checked for.
GROUP_LOST = "group-lost"
GROUP_DUPLICATE = "group-duplicate"
OFFSET_REGRESSION = "offset-regression"
# Exactly-once processing (`--workload eos`): a group whose members write what they read to another topic
# in transactions, end to end. Judged only where the members wrote in transactions.
EOS_LOST = "eos-lost"
EOS_DUPLICATE = "eos-duplicate"

#: The end-to-end anomalies of a group that processes exactly once.
EOS_ANOMALY_NAMES: tuple[str, ...] = (EOS_LOST, EOS_DUPLICATE)

#: The consumer-group anomalies, in the order reports list them, after the others: what the group skipped,
#: what it was handed twice, where its committed progress went back, then what its processing output lacks
#: or holds twice.
GROUP_ANOMALY_NAMES: tuple[str, ...] = (GROUP_LOST, GROUP_DUPLICATE, OFFSET_REGRESSION, *EOS_ANOMALY_NAMES)

# Read-write transactions (issue 49): judged only on histories whose transactions polled (`txn-poll` rows).
# What one transaction did inside itself, after Jepsen's Kafka checker's names.
INT_POLL_SKIP = "int-poll-skip"
INT_NONMONOTONIC_POLL = "int-nonmonotonic-poll"
INT_SEND_SKIP = "int-send-skip"
INT_NONMONOTONIC_SEND = "int-nonmonotonic-send"
PRECOMMITTED_READ = "precommitted-read"

# Dependency cycles between read-write transactions (issue 49), Adya's phenomena as Jepsen's Kafka checker
# names them, and the kinds of dependency edge they are classified by.
G0 = "G0"
G1C = "G1c"
G_SINGLE = "G-single"
G2 = "G2"
#: A G1c cycle of `wr` edges alone: each transaction read the next one's record, so each committed before
#: the one before it read, which a read_committed reader's transaction cannot see happen.
WR_CYCLE = "wr-cycle"
#: The suffixes of a class's variants, as Elle names them: a cycle that needs one producer's own order of
#: its transactions (`process` edges) besides the dependencies, or the real-time order of any two (`realtime`
#: edges, of which a producer's order is a part).
PROCESS_VARIANT, REALTIME_VARIANT = "-process", "-realtime"
#: The classes of each variant, in the order a component is classified by.
BASE_CYCLE_CLASSES: tuple[str, ...] = (WR_CYCLE, G0, G1C, G_SINGLE, G2)
#: The classes the dependencies alone make, then with a producer's order, then with real time.
VARIANTS: tuple[str, ...] = ("", PROCESS_VARIANT, REALTIME_VARIANT)
#: The cycle classes, in report order: each base class, then its process and real-time variants.
CYCLE_CLASSES: tuple[str, ...] = tuple(base + variant for base in BASE_CYCLE_CLASSES for variant in VARIANTS)
#: The classes of cycles of reads, which read_committed rules out, with or without the orders of time.
READ_CYCLE_CLASSES: tuple[str, ...] = tuple(WR_CYCLE + variant for variant in VARIANTS)
#: T1 `ww` T2: T2 wrote the record after T1's; `wr`: T2 read T1's record; `rw`: T1's read stopped before
#: T2's record.
WW, WR, RW = "ww", "wr", "rw"
#: T1 `process` T2: one producer committed T1, then began T2; `realtime`: T1's commit was acknowledged
#: before T2 began, whoever ran them. Not dependencies: orders of time, which the variants add.
PROCESS, REALTIME = "process", "realtime"

#: The anomalies inside one read-write transaction, in the order reports list them: what a transaction
#: read of itself or past, then how its own writes landed.
INTERNAL_ANOMALY_NAMES: tuple[str, ...] = (
    PRECOMMITTED_READ,
    INT_POLL_SKIP,
    INT_NONMONOTONIC_POLL,
    INT_NONMONOTONIC_SEND,
    INT_SEND_SKIP,
)

#: The read-write transaction anomalies, in the order reports list them, after the group ones: inside
#: one transaction, then the cycles between them.
RW_TRANSACTION_ANOMALY_NAMES: tuple[str, ...] = (*INTERNAL_ANOMALY_NAMES, *CYCLE_CLASSES)

#: The kinds of `group-duplicate` (`by_kind`): handed to the group again in another assignment (another
#: member, or the same one after a rebalance), or only ever within one assignment of one member.
AFTER_REBALANCE = "after-rebalance"
WITHIN_ASSIGNMENT = "within-assignment"

#: The kinds of `truncated-read` (`by_kind`): a record whose send was acknowledged, which is gone from
#: Kafka after healing and so counts in the run's headline `lost` (`kchaos.checkers.lost_count`), or one
#: never acknowledged (its send timed out or failed, yet it reached the log before it was truncated).
ACKNOWLEDGED = "acknowledged"
UNACKNOWLEDGED = "unacknowledged"
