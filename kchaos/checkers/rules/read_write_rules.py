"""The oracle's rules about read-write transactions (issue 49): what one transaction's own records may look
like in the log, and which dependency cycles between transactions Kafka rules out. The reads inside a
transaction are judged by the rules about readers and order (`kchaos.checkers.rules.log_rules`: their
anomalies are in the oracle's read, order and isolation sets); `kchaos.checkers.rules.rule_table` tries
these after the consumer-group rules.
"""

from __future__ import annotations

from kchaos.checkers.rules.anomaly_names import CYCLE_CLASSES, INT_SEND_SKIP, READ_CYCLE_CLASSES
from kchaos.checkers.rules.oracle import DELAYED_END_TXN, KIP_98, Rule, always

#: Where the analyses of Kafka-compatible systems' transactions, by Jepsen's Kafka checker, are published.
_JEPSEN = "Jepsen, analyses of Redpanda 21.10.1 (2022) and Bufstream 0.1.0 (2024)"

#: In the order they are tried.
READ_WRITE_RULES: tuple[Rule, ...] = (
    Rule(
        id="transactions-interleave",
        anomalies=frozenset({INT_SEND_SKIP}),
        expected="possible",
        applies=always,
        applies_when="always",
        statement=(
            "A transaction's records are appended to a partition as its producer sends them, beside those "
            "of every other producer writing the partition at the time; the commit marker decides what "
            "readers may see, not where the records lie. So other producers' records, committed or not, "
            "may lie between two records of one transaction: Kafka promises atomicity and read_committed "
            "isolation, not contiguity."
        ),
        source=f"{KIP_98} (the log layout of transactional records, the last stable offset); Kafka "
        "documentation, Design > Message Delivery Semantics (transactions)",
    ),
    Rule(
        id="read-committed-reads-follow-commits",
        anomalies=frozenset(READ_CYCLE_CLASSES),
        expected="none",
        applies=always,
        applies_when="always, for transactions whose reads are read_committed",
        statement=(
            "A reader at read_committed is handed a transaction's records only once the transaction "
            "committed, and a transaction reads before it commits; so when T1 read T2's record, T2 had "
            "committed before T1 did. A transaction begun after another's commit was acknowledged commits "
            "after it too, whoever began it (so the cycle's process and real-time variants are ruled out "
            "alike). In a cycle of such reads and such orders every transaction would have committed "
            "before itself. " + DELAYED_END_TXN
        ),
        source=f"{KIP_98}; Kafka consumer config `isolation.level`",
    ),
    Rule(
        id="transactions-not-serializable",
        anomalies=frozenset(CYCLE_CLASSES) - frozenset(READ_CYCLE_CLASSES),
        expected="possible",
        applies=always,
        applies_when="always (the documentation promises no order between transactions)",
        statement=(
            "Kafka's transactions make a producer's writes to several partitions atomic and hide them "
            "from read_committed readers until they commit; the documentation promises no order between "
            "transactions beyond that, neither serializability nor snapshot isolation. So two transactions "
            "may write two partitions in opposite orders (G0), one may read another's records while its "
            "own writes precede the other's elsewhere (G1c through a ww edge), and a transaction's reads "
            "may miss records another wrote after them while that one depends on it (G-single, G2). Nor do "
            "they promise that a transaction begun after another committed, by the same producer or by "
            "anyone, comes after it in these orders: its reads may be stale, missing the earlier one's "
            "records, and a third transaction that overlapped both may write after the later one in one "
            "partition and before the earlier one in another (the `-process` and `-realtime` variants, "
            "cycles that close only through those orders of time). The documents are "
            "silent on these orders, so they are reported and permitted, never judged."
        ),
        source=f"{KIP_98}; Kafka documentation, Design > Message Delivery Semantics (transactions); "
        f"{_JEPSEN}",
    ),
)
