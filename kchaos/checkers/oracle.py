"""The guarantee oracle: what Kafka's documentation promises for a configuration under the faults a run saw.

An anomaly count alone does not say whether Kafka broke a promise: acks=1 losing writes after a leader
crash is the documented trade-off, acks=all losing them with an in-sync replica alive is a bug. For each
anomaly the oracle says what the run was allowed to show — `none`, `possible`, or `unknown` when the docs'
answer turns on a fact the run did not record (which replicas were in sync when the power went) — and names
the rule and the document it rests on; `kchaos.checkers.verdicts` holds the counts against it.

Rules are a table, not code paths, so the README can print exactly what the checker enforces. For each
anomaly the first rule (in table order) whose condition holds decides the expectation; every anomaly ends
with an unconditional rule, so the table is total. A power loss is judged per partition (whether that
partition's whole in-sync replica set lost power), so the context can name the partition being judged.

Pure Python on purpose: judging is cheap and must be testable without a Spark session.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from kchaos.checkers.names import (
    ABORTED_READ,
    DUPLICATE,
    EOS_DUPLICATE,
    EOS_LOST,
    GROUP_DUPLICATE,
    GROUP_LOST,
    INCONSISTENT_OFFSET,
    LOST_COMMITTED,
    LOST_WRITE,
    NONMONOTONIC_POLL,
    NONMONOTONIC_SEND,
    OFFSET_REGRESSION,
    PARTIAL_TRANSACTION,
    POLL_SKIP,
    REPLICA_DIVERGENCE,
    TRUNCATED_READ,
    UNCOMMITTED_READ,
    UNSEEN,
)
from kchaos.model.fault_table import kinds_treated_as

Expectation = Literal["none", "possible", "unknown"]
#: What a power loss did to the replicas that could lead one partition cleanly, its in-sync replicas (ISR)
#: and, on releases with KIP-966, its Eligible Leader Replicas (ELR), as the run recorded them: every one
#: went down with a power loss (`lost-power`), one kept power through every power loss (`kept-power`), or
#: the leader watcher did not record them before a power loss that could have taken them all.
IsrFate = Literal["lost-power", "kept-power", "unknown"]

#: Fault kinds that can move partition leadership: a crashed, powered-off, stopped, paused or cut-off
#: leader is replaced. The fault table says which kinds those are.
FAILOVER_KINDS = kinds_treated_as("crash", "power-loss", "failover")

#: Fault kinds that cut nodes' power: what their OS had not synced to disk is gone.
POWER_LOSS_KINDS = kinds_treated_as("power-loss")

#: Fault kinds that switch unclean leader election on during a run, which lifts the durability promise
#: just as the static setting does.
UNCLEAN_ELECTION_KINDS = kinds_treated_as("unclean-election")

#: Anomalies that follow from records being truncated away: a lost acknowledged record, a truncated tail
#: the final read cannot reach, an offset reused after truncation, and a record a consumer group committed
#: past without any member receiving it (truncated, and its offset reused, before a member got there).
LOSS_ANOMALIES = frozenset({LOST_WRITE, UNSEEN, INCONSISTENT_OFFSET, GROUP_LOST})

#: What consumers see when a record they were given is truncated away: the record gone from the final
#: read, and a position past the new log end that is reset forwards or backwards.
READ_ANOMALIES = frozenset({POLL_SKIP, NONMONOTONIC_POLL, TRUNCATED_READ})

#: What a truncation does to committed transactions: records lost, some of a transaction's records lost
#: while others survive, or a group's processed output lost though its offsets say it was committed. Not
#: under the acks=1 rules: a transactional producer is idempotent, which takes acks=all whatever the run's
#: other producers were configured with.
TRANSACTION_LOSS_ANOMALIES = frozenset({LOST_COMMITTED, PARTIAL_TRANSACTION, EOS_LOST})

#: Anomalies a truncation that reaches committed records can cause.
COMMITTED_LOSS_ANOMALIES = LOSS_ANOMALIES | READ_ANOMALIES | {NONMONOTONIC_SEND} | TRANSACTION_LOSS_ANOMALIES

#: What a reader at read_committed must never return: records of a transaction that did not commit.
ISOLATION_ANOMALIES = frozenset({ABORTED_READ, UNCOMMITTED_READ})

#: The transaction protocol's known hole, named in the rules it breaks (see also
#: `kchaos.checkers.known_fixes`).
_DELAYED_END_TXN = (
    "Known issue: a commit or abort delayed in the network (EndTxn retried after a timeout) can end the "
    "producer's next transaction instead of its own, so aborted records become visible, committed ones are "
    "lost, and a transaction is torn in parts; Jepsen reproduced it on Kafka itself (analysis of Bufstream "
    "0.1.0, 2024), and KIP-890 closes it from 4.0 with "
    "transaction.version=2 (a producer epoch bump per transaction), where client and cluster both use it. "
    "The documentation promises isolation and atomicity regardless, so an occurrence stays a violation."
)

_KIP_98 = "KIP-98"


@dataclass(frozen=True)
class GuaranteeContext:
    """The configuration the promises depend on, and the faults that actually happened."""

    acks: str  # "all" | "1"
    min_insync_replicas: int
    replication_factor: int
    unclean_leader_election: bool
    idempotence: bool
    fault_kinds: frozenset[str]  # detail.kind of every fault that started: "crash", "partition", ...
    max_concurrent_crashed: int  # most distinct nodes down at once from crash faults
    sends_timed_out: int = 0  # sends that hit the producer's message timeout (possibly in flight)
    #: Every in-sync replica fsyncs each append before it counts as replicated: the topic's
    #: `flush.messages` (or, unset, the broker's `log.flush.interval.messages`) is 1.
    synced_every_append: bool = False
    #: After a power loss, each partition's fate (keyed as `by_partition` keys partitions); empty without.
    isr_fates: Mapping[str, IsrFate] = field(default_factory=dict)
    #: The partition an anomaly is being judged in; None when judging the run as a whole.
    partition: str | None = None
    #: The release the run's brokers ran, for naming the fix of a promise it is known to break.
    kafka_version: str | None = None

    @property
    def power_lost(self) -> bool:
        return bool(self.fault_kinds & POWER_LOSS_KINDS)

    def isr_fate(self) -> IsrFate | None:
        """The judged partition's fate under power loss (None: no power loss). For the whole run, the fate
        every partition shares; `unknown` when they differ, as the run then cannot say which one an
        anomaly without a partition breakdown happened in."""
        if not self.power_lost:
            return None
        if self.partition is not None:
            return self.isr_fates.get(self.partition, "unknown")
        fates = set(self.isr_fates.values())
        return fates.pop() if len(fates) == 1 else "unknown"


@dataclass(frozen=True)
class Rule:
    """One documented expectation: for `anomalies`, when `applies` holds, expect `expected`."""

    id: str
    anomalies: frozenset[str]
    expected: Expectation
    applies: Callable[[GuaranteeContext], bool]
    applies_when: str
    statement: str
    source: str


def _always(_: GuaranteeContext) -> bool:
    return True


#: Where the consumer's delivery guarantee is documented.
_DELIVERY_SEMANTICS = "Kafka documentation, Design > Message Delivery Semantics (https://kafka.apache.org/documentation/#semantics)"

#: Where the group coordinator's fencing of commits from members of an older generation is documented.
_COMMIT_FENCING = (
    "Kafka protocol guide, OffsetCommit request (`generation_id_or_member_epoch`, `member_id`); Kafka "
    "consumer javadoc, CommitFailedException; KIP-848 (member epochs, STALE_MEMBER_EPOCH); KIP-1251, "
    "Motivation"
)

_POWER_LOSS_SOURCE = (
    "Kafka documentation, Design > Persistence; Design > Replicated logs; Operations > Eligible Leader "
    "Replicas (KIP-966); broker configs `log.flush.interval.messages` and `log.flush.interval.ms`"
)


RULES: tuple[Rule, ...] = (
    Rule(
        id="unclean-election",
        anomalies=COMMITTED_LOSS_ANOMALIES,
        expected="possible",
        applies=lambda ctx: ctx.unclean_leader_election,
        applies_when="unclean.leader.election.enable=true",
        statement=(
            "Unclean leader election lets a replica outside the ISR become leader; records it lacks, "
            "committed ones included, are truncated from the log and their offsets reused, by design. "
            "Consumers may have read them (truncated-read), their positions may lie past the new log end "
            "and be reset (poll-skip, nonmonotonic-poll), and a later send may land at an offset an "
            "earlier one was acknowledged at (nonmonotonic-send)."
        ),
        source="Kafka documentation, Design > Unclean leader election; topic config "
        "`unclean.leader.election.enable`; KIP-320",
    ),
    Rule(
        id="synced-appends-survive",
        anomalies=LOSS_ANOMALIES | READ_ANOMALIES | TRANSACTION_LOSS_ANOMALIES,
        expected="none",
        applies=lambda ctx: ctx.acks == "all" and ctx.synced_every_append,
        applies_when="acks=all and every append synced (flush.messages=1 or log.flush.interval.messages=1)",
        statement=(
            "With a flush interval of one message every replica writes each append to disk (fsync) before it "
            "answers or fetches again, and acks=all acknowledges a write only once every in-sync replica has "
            "it; so every acknowledged record is on the disk of every in-sync replica, and neither crashes "
            "nor a loss of power to every replica at once can take it: the log is recovered from disk."
        ),
        source="Kafka documentation, Design > Persistence; broker config `log.flush.interval.messages`; "
        "topic config `flush.messages`; Kafka producer config `acks`",
    ),
    Rule(
        id="power-loss-took-isr",
        anomalies=COMMITTED_LOSS_ANOMALIES,
        expected="possible",
        applies=lambda ctx: not ctx.synced_every_append and ctx.isr_fate() == "lost-power",
        applies_when="appends not synced, and a power loss took every in-sync (and eligible) replica of the "
        "partition",
        statement=(
            "Kafka does not fsync by default: a write is acknowledged once the in-sync replicas hold it in "
            "the OS page cache, and reaches the disk when the flush interval or the OS says. Replication, "
            "not the disk, makes it durable, and only while an in-sync replica survives (or, on releases "
            "with Eligible Leader Replicas, a replica that left the ISR while it was below "
            "min.insync.replicas: it holds every committed record and may be elected). Every such replica "
            "of the partition was down at once, power lost, so the first to return leads with what its "
            "disk held and what no disk held yet is gone from every copy: committed records are truncated "
            "and their offsets reused, with the same effects on readers and offsets as an unclean election."
        ),
        source=_POWER_LOSS_SOURCE,
    ),
    Rule(
        id="every-replica-crashed",
        anomalies=COMMITTED_LOSS_ANOMALIES,
        expected="possible",
        applies=lambda ctx: ctx.max_concurrent_crashed >= ctx.replication_factor,
        applies_when="crashed nodes at once >= replication factor",
        statement=(
            "The durability promise needs at least one in-sync replica alive; every replica was down at "
            "once, and as Kafka does not fsync by default, records held only in page cache need not survive. "
            "Committed records consumers already read can vanish with them, with the same effects on "
            "readers and offsets as an unclean election."
        ),
        source="Kafka documentation, Design > Replicated logs; broker config `log.flush.interval.messages`",
    ),
    Rule(
        id="acks-1-failover",
        anomalies=LOSS_ANOMALIES | {NONMONOTONIC_SEND},
        expected="possible",
        applies=lambda ctx: ctx.acks == "1" and bool(ctx.fault_kinds & FAILOVER_KINDS),
        applies_when="acks=1 and a crash, power-loss, stop, partition, pause or zookeeper fault happened",
        statement=(
            "With acks=1 the leader acknowledges a record before any follower has it; when leadership "
            "moves to a follower that lacks it, the record is truncated and its offset reused, so a later "
            "send can be acknowledged at or below an earlier one."
        ),
        source="Kafka producer config `acks`; Kafka documentation, Design > Replicated logs",
    ),
    Rule(
        id="acks-1-no-failover",
        anomalies=LOSS_ANOMALIES,
        expected="none",
        applies=lambda ctx: ctx.acks == "1",
        applies_when="acks=1 and no fault that can move leadership happened",
        statement=(
            "With acks=1 an acknowledged record is lost only if leadership moves before followers copy it; "
            "no crash, power loss, stop, partition, pause or ZooKeeper outage happened, so leadership had no "
            "reason to move."
        ),
        source="Kafka producer config `acks`; Kafka documentation, Design > Replicated logs",
    ),
    Rule(
        id="retries-reorder",
        anomalies=frozenset({NONMONOTONIC_SEND}),
        expected="possible",
        applies=lambda ctx: not ctx.idempotence,
        applies_when="enable.idempotence=false",
        statement=(
            "Without idempotence a producer with several requests in flight per connection retries a "
            "failed batch after later batches to the same partition succeeded, so the retried records land "
            "after records sent later (librdkafka allows many requests in flight and retries by default)."
        ),
        source="Kafka producer configs `retries`, `max.in.flight.requests.per.connection` and "
        "`enable.idempotence`; librdkafka INTRODUCTION.md, Message reliability > Reordering",
    ),
    Rule(
        id="power-loss-isr-unknown",
        anomalies=COMMITTED_LOSS_ANOMALIES,
        expected="unknown",
        applies=lambda ctx: not ctx.synced_every_append and ctx.isr_fate() == "unknown",
        applies_when="appends not synced, and the partition's ISR (or ELR) when the power went was not "
        "recorded",
        statement=(
            "Whether a power loss may lose acknowledged writes turns on whether it took every in-sync "
            "replica, and every eligible leader replica where the release keeps them: one that kept power "
            "holds every acknowledged write; if none did, what was not synced is gone. The leader watcher "
            "recorded no ISR for the partition before the power loss, or no ELR while a replica outside "
            "the ISR kept power (or, for an anomaly not counted per partition, partitions fared "
            "differently), so the run cannot say which, and the anomaly is left unjudged rather than "
            "guessed."
        ),
        source=_POWER_LOSS_SOURCE,
    ),
    Rule(
        id="committed-not-lost",
        anomalies=frozenset({LOST_WRITE, INCONSISTENT_OFFSET}),
        expected="none",
        applies=_always,
        applies_when="acks=all, unclean election off, an in-sync replica always alive",
        statement=(
            "A committed record is not lost as long as at least one in-sync replica remains alive; with "
            "acks=all a write is acknowledged only once committed, and leader epochs keep a restarted "
            "follower from truncating it. With min.insync.replicas=1 the ISR may shrink to the leader "
            "alone, but it is then the only electable leader: its crash makes the partition unavailable, "
            "not lossy, so the promise still holds. A power loss that leaves one in-sync replica powered "
            "changes nothing: that replica holds every acknowledged write. Nor, on releases with Eligible "
            "Leader Replicas (KIP-966, on by default for new clusters from 4.1), does one that leaves an "
            "eligible leader replica powered: the high watermark advances only while the ISR has at least "
            "min.insync.replicas members, so a replica that left it below that holds every committed "
            "record, and the controller elects it when no in-sync replica is left."
        ),
        source="Kafka documentation, Design > Replicated logs; Operations > Eligible Leader Replicas; Kafka "
        "producer config `acks`; topic config `min.insync.replicas`; KIP-101; KIP-966",
    ),
    Rule(
        id="committed-transaction-not-lost",
        anomalies=frozenset({LOST_COMMITTED}),
        expected="none",
        applies=_always,
        applies_when="unclean election off, an in-sync replica always alive",
        statement=(
            "A transactional producer is idempotent, so its records are written with acks=all: each was "
            "acknowledged only once every in-sync replica held it, and a committed record is not lost as "
            "long as one in-sync replica remains alive. A commit makes the transaction's records visible to "
            "every reader, so a committed record acknowledged in a partition the final read drained is "
            "returned by some reader. " + _DELAYED_END_TXN
        ),
        source=f"{_KIP_98}; Kafka documentation, Design > Replicated logs; Kafka producer configs "
        "`transactional.id` and `enable.idempotence`",
    ),
    Rule(
        id="transactions-atomic",
        anomalies=frozenset({PARTIAL_TRANSACTION}),
        expected="none",
        applies=_always,
        applies_when="unclean election off, an in-sync replica always alive",
        statement=(
            "A transaction's writes to several partitions are atomic: the coordinator logs its decision "
            "once and writes a commit marker into every partition the transaction wrote to, so readers see "
            "all of its records or none of them. Committed records survive while an in-sync replica lives, "
            "so no committed transaction may keep some records and lose others. " + _DELAYED_END_TXN
        ),
        source=f"{_KIP_98}; Kafka documentation, Design > Message Delivery Semantics (transactions); "
        "Kafka producer config `transactional.id`",
    ),
    Rule(
        id="read-committed-isolation",
        anomalies=ISOLATION_ANOMALIES,
        expected="none",
        applies=_always,
        applies_when="always, for readers at isolation.level=read_committed",
        statement=(
            "A consumer at isolation.level=read_committed is handed only records below the last stable "
            "offset (the first offset of a transaction still open) and drops those of aborted transactions, "
            "whose list the broker sends with them; so it never returns a record of an aborted transaction, "
            "nor one of a transaction before its producer asked to commit. " + _DELAYED_END_TXN
        ),
        source=f"{_KIP_98}; Kafka consumer config `isolation.level`",
    ),
    Rule(
        id="final-read-reaches-end",
        anomalies=frozenset({UNSEEN}),
        expected="none",
        applies=_always,
        applies_when="acks=all, unclean election off, an in-sync replica always alive",
        statement=(
            "Committed records are not lost, and the final read drains every partition to its end after "
            "healing; an acknowledged write above everything it read was lost past the read horizon."
        ),
        source="Kafka documentation, Design > Replicated logs; Kafka producer config `acks`",
    ),
    Rule(
        id="consumers-read-committed",
        anomalies=READ_ANOMALIES,
        expected="none",
        applies=_always,
        applies_when="unclean election off, an in-sync replica always alive (any acks)",
        statement=(
            "Consumers are given only committed records, those below the high watermark, which every "
            "in-sync replica holds. A clean election picks an in-sync replica, so a record a consumer read "
            "is never truncated, its offset never reused, and a consumer's position stays inside the log. "
            "This holds with acks=1 too: acks decides when the producer hears back, not what consumers see; "
            "what acks=1 loses was never visible to them."
        ),
        source="Kafka documentation, Design > Replicated logs; KIP-101",
    ),
    Rule(
        id="idempotent-order",
        anomalies=frozenset({NONMONOTONIC_SEND}),
        expected="none",
        applies=_always,
        applies_when="enable.idempotence=true, unclean election off, an in-sync replica always alive",
        statement=(
            "An idempotent producer numbers each partition's batches and the leader appends them only in "
            "sequence, so sends land in the order they were produced even with several requests in flight. "
            "A message that times out leaves a gap in that order, not a reordering."
        ),
        source="KIP-98; Kafka producer config `enable.idempotence`; librdkafka INTRODUCTION.md, "
        "Idempotent Producer > Ordering and message sequence numbers, Message timeout considerations",
    ),
    Rule(
        id="unclean-election-duplicates",
        anomalies=frozenset({DUPLICATE}),
        expected="possible",
        applies=lambda ctx: ctx.unclean_leader_election,
        applies_when="unclean.leader.election.enable=true",
        statement=(
            "Idempotence relies on the producer state the partition log carries; an unclean election can "
            "truncate it, after which a retried batch is no longer recognised and is appended again."
        ),
        source="KIP-98; topic config `unclean.leader.election.enable`",
    ),
    Rule(
        id="at-least-once-retries",
        anomalies=frozenset({DUPLICATE}),
        expected="possible",
        applies=lambda ctx: not ctx.idempotence,
        applies_when="enable.idempotence=false",
        statement=(
            "Without idempotence a producer that retries after losing a response appends the record a "
            "second time: delivery is at-least-once."
        ),
        source="Kafka producer configs `retries` and `enable.idempotence`; KIP-98",
    ),
    Rule(
        id="idempotent-epoch-bump",
        anomalies=frozenset({DUPLICATE}),
        expected="possible",
        applies=lambda ctx: ctx.idempotence and ctx.sends_timed_out > 0,
        applies_when="enable.idempotence=true and some sends hit message.timeout.ms",
        statement=(
            "Idempotence deduplicates retries within one producer epoch. A message that times out while "
            "in flight may still have been written, and the producer must then bump its epoch and resend "
            "its other unacknowledged messages with new sequence numbers, so records already written "
            "are appended again. Keep message.timeout.ms (delivery.timeout.ms) above failover time."
        ),
        source="KIP-360; librdkafka INTRODUCTION.md, Idempotent Producer > Message timeout considerations",
    ),
    Rule(
        id="idempotent-producer",
        anomalies=frozenset({DUPLICATE}),
        expected="none",
        applies=_always,
        applies_when="enable.idempotence=true, unclean election off, no send timed out",
        statement=(
            "An idempotent producer numbers its batches per partition and the leader drops a batch it "
            "already has, so a retry cannot append a record twice."
        ),
        source="KIP-98; Kafka producer config `enable.idempotence`",
    ),
    Rule(
        id="group-redelivery",
        anomalies=frozenset({GROUP_DUPLICATE}),
        expected="possible",
        applies=_always,
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
        source=f"{_POWER_LOSS_SOURCE}; broker config `offsets.topic.replication.factor`",
    ),
    Rule(
        id="group-generation-fencing",
        anomalies=frozenset({OFFSET_REGRESSION}),
        expected="none",
        applies=_always,
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
        applies=_always,
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
        applies=_always,
        applies_when="no truncation of committed records or of the group's commits",
        statement=(
            "A processor that reads in a consumer group and writes its output in a transaction that also "
            "commits the group's offsets (sendOffsetsToTransaction) makes the output and the progress one "
            "atomic step: a read_committed reader sees the output of an input record once, and the group "
            "never commits past an input whose output is not committed. A processor that crashes or is "
            "fenced mid-transaction has its transaction aborted, and whoever takes its partitions resumes "
            "from the offsets its last committed transaction carried; the group generation sent with the "
            "offsets (KIP-447) fences a processor that lost its partitions. So every input below the "
            "group's committed offset is in the output exactly once. " + _DELAYED_END_TXN
        ),
        source=f"{_KIP_98}; KIP-447; Kafka producer API `sendOffsetsToTransaction`; Kafka consumer config "
        "`isolation.level`",
    ),
    Rule(
        id="replicas-converge",
        anomalies=frozenset({REPLICA_DIVERGENCE}),
        expected="none",
        applies=_always,
        applies_when="always (after healing)",
        statement=(
            "A follower that rejoins asks the leader where its last leader epoch ends "
            "(OffsetsForLeaderEpoch), "
            "truncates what the leader does not have and refetches; KIP-279 closed the cases left after fast "
            "repeated failovers. Once healed, replicas hold the same record at every offset they share, "
            "whatever the configuration and whatever was lost, unclean elections included."
        ),
        source="KIP-101; KIP-279; Kafka documentation, Design > Replicated logs",
    ),
)


def rule_for(anomaly: str, ctx: GuaranteeContext) -> Rule:
    """The first rule in table order that covers `anomaly` and holds for `ctx`."""
    for rule in RULES:
        if anomaly in rule.anomalies and rule.applies(ctx):
            return rule
    raise KeyError(f"the oracle has no rule for anomaly {anomaly!r}; add one to RULES")


def rule_table() -> list[dict[str, Any]]:
    """The rules as rows (in the order they are tried), for the README and reports."""
    return [
        {
            "rule": rule.id,
            "anomalies": sorted(rule.anomalies),
            "expected": rule.expected,
            "applies_when": rule.applies_when,
            "statement": rule.statement,
            "source": rule.source,
        }
        for rule in RULES
    ]
