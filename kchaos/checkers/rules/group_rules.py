"""The oracle's rules about consumer groups: at-least-once delivery, committed offsets, exactly once.

What Kafka promises a group that commits its progress (nothing skipped below a committed offset, offsets
that do not go back) and one that commits it inside its output transactions (every input processed once);
`kchaos.checkers.rules.rule_table` tries them after the rules about records and the log.
"""

from __future__ import annotations

from kchaos.checkers.rules.anomaly_names import (
    EOS_DUPLICATE,
    EOS_LOST,
    GROUP_DUPLICATE,
    GROUP_LOST,
    OFFSET_REGRESSION,
)
from kchaos.checkers.rules.oracle import DELAYED_END_TXN, KIP_98, POWER_LOSS_SOURCE, Rule, always

#: Where the consumer's delivery guarantee is documented.
_DELIVERY_SEMANTICS = "Kafka documentation, Design > Message Delivery Semantics (https://kafka.apache.org/documentation/#semantics)"

#: Where the group coordinator's fencing of commits from members of an older generation is documented.
_COMMIT_FENCING = (
    "Kafka protocol guide, OffsetCommit request (`generation_id_or_member_epoch`, `member_id`); Kafka "
    "consumer javadoc, CommitFailedException; KIP-848 (member epochs, STALE_MEMBER_EPOCH); KIP-1251, "
    "Motivation"
)


#: In the order they are tried.
GROUP_RULES: tuple[Rule, ...] = (
    Rule(
        id="group-redelivery",
        anomalies=frozenset({GROUP_DUPLICATE}),
        expected="possible",
        applies=always,
        applies_when="always (a consumer group delivers at least once, in `sync` and `auto` commit modes)",
        statement=(
            "A consumer group's position is the offset it last committed, and a member commits only after it "
            "was handed records: after processing each batch (`sync`), or every auto.commit.interval.ms in "
            "the background (`auto`). Whatever a member was handed after its last commit that took effect is "
            "handed again to whoever resumes from that commit: its successor when a rebalance moves the "
            "partition, a member that dies or is fenced before committing, a commit refused during a "
            "rebalance (REBALANCE_IN_PROGRESS, ILLEGAL_GENERATION) or lost with the coordinator. This is "
            "Kafka's at-least-once delivery: records are not lost, and may be delivered more than once."
        ),
        source=f"{_DELIVERY_SEMANTICS}; Kafka consumer configs `enable.auto.commit` and "
        "`auto.commit.interval.ms`; librdkafka CONFIGURATION.md `enable.auto.offset.store`",
    ),
    Rule(
        id="group-offsets-truncated",
        anomalies=frozenset({OFFSET_REGRESSION, EOS_DUPLICATE}),
        expected="possible",
        applies=lambda ctx: (
            ctx.unclean_leader_election
            or ctx.max_concurrent_crashed >= ctx.replication_factor
            or (not ctx.synced_every_append and ctx.isr_fate() == "lost-power")
        ),
        applies_when="unclean.leader.election.enable=true, every replica crashed at once, or a power loss "
        "took every in-sync (and eligible) replica of the partition",
        statement=(
            "When committed records are truncated from a partition, the group's committed offset can lie "
            "past the new end of its log; the member that resumes there finds its position out of range, "
            "starts again from the earliest offset (auto.offset.reset=earliest) and commits offsets below "
            "the ones committed before. The same faults can take the latest commits with the replicas of "
            "__consumer_offsets, and the group resumes from an older one; a group that processes exactly "
            "once then processes the records after it again, and commits their output a second time "
            "(eos-duplicate)."
        ),
        source="Kafka documentation, Design > Unclean leader election; Design > Replicated logs; Kafka "
        "consumer config `auto.offset.reset`",
    ),
    Rule(
        id="group-offsets-power-loss",
        anomalies=frozenset({OFFSET_REGRESSION, EOS_DUPLICATE}),
        expected="unknown",
        applies=lambda ctx: ctx.power_lost,
        applies_when="a power loss happened (and the partition's own replicas are not known to explain it)",
        statement=(
            "A group's commits are records of __consumer_offsets, replicated like any other and not synced "
            "by default; a power loss that took every in-sync replica of the group's __consumer_offsets "
            "partition loses the latest commits, and the group resumes from an older one. kchaos does not "
            "record that partition's in-sync replicas, so whether the power loss took them all is not known, "
            "and a committed offset that went back after one, or output a group that processes exactly "
            "once committed twice, is left unjudged rather than guessed."
        ),
        source=f"{POWER_LOSS_SOURCE}; broker config `offsets.topic.replication.factor`",
    ),
    Rule(
        id="group-generation-fencing",
        anomalies=frozenset({OFFSET_REGRESSION}),
        expected="none",
        applies=always,
        applies_when="no truncation of committed records and no power loss",
        statement=(
            "The group coordinator applies a commit only from a member of the group's current generation "
            "(classic protocol: generation id and member id, else ILLEGAL_GENERATION or UNKNOWN_MEMBER_ID; "
            "consumer protocol: the member epoch, else STALE_MEMBER_EPOCH), so a member that lost its "
            "partitions in a rebalance cannot overwrite its successor's progress with its own older "
            "offsets; the successor starts from the last commit and only moves forward, and kchaos never "
            "resets a group's offsets. A committed offset going back is a bug in the client or the "
            "coordinator (as librdkafka committing stale stored offsets after a rebalance was, "
            "confluentinc/librdkafka#3710)."
        ),
        source=_COMMIT_FENCING,
    ),
    Rule(
        id="group-receives-below-commit",
        anomalies=frozenset({GROUP_LOST}),
        expected="none",
        applies=always,
        applies_when="no truncation of records the group committed past",
        statement=(
            "A member commits only offsets of records it was handed (`sync`: after recording them; `auto`: "
            "librdkafka stores each record's offset as it hands it over, enable.auto.offset.store), starts "
            "from the group's committed offset, and a commit from an older generation is refused; so every "
            "record below an offset the group committed was handed to some member. A record the log held "
            "there that no member received was skipped: the consumer's at-least-once delivery broken."
        ),
        source=f"{_DELIVERY_SEMANTICS}; {_COMMIT_FENCING}; Kafka consumer config `auto.offset.reset`; "
        "librdkafka CONFIGURATION.md `enable.auto.offset.store`",
    ),
    Rule(
        id="exactly-once-processing",
        anomalies=frozenset({EOS_LOST, EOS_DUPLICATE}),
        expected="none",
        applies=always,
        applies_when="no truncation of committed records or of the group's commits",
        statement=(
            "A processor that reads in a consumer group and writes its output in a transaction that also "
            "commits the group's offsets (sendOffsetsToTransaction) makes the output and the progress one "
            "atomic step: a read_committed reader sees the output of an input record once, and the group "
            "never commits past an input whose output is not committed. A processor that crashes or is "
            "fenced mid-transaction has its transaction aborted, and whoever takes its partitions resumes "
            "from the offsets its last committed transaction carried; the group generation sent with the "
            "offsets (KIP-447) fences a processor that lost its partitions. So every input below the "
            "group's committed offset is in the output exactly once. " + DELAYED_END_TXN
        ),
        source=f"{KIP_98}; KIP-447; Kafka producer API `sendOffsetsToTransaction`; Kafka consumer config "
        "`isolation.level`",
    ),
)
