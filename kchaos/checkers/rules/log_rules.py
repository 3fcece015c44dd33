"""The oracle's rules about records and the log: durability, order, duplicates, transactions and reads.

What Kafka promises about an acknowledged record (that it survives, lands in order, once) and about what
readers are handed (committed records only, all of a transaction or none), under each configuration and
fault; `kchaos.checkers.rules.rule_table` tries them before the consumer-group rules, and `REPLICAS_CONVERGE`
last.
"""

from __future__ import annotations

from kchaos.checkers.rules.anomaly_names import (
    DUPLICATE,
    INCONSISTENT_OFFSET,
    LOST_COMMITTED,
    LOST_WRITE,
    NONMONOTONIC_SEND,
    PARTIAL_TRANSACTION,
    REPLICA_DIVERGENCE,
    UNSEEN,
)
from kchaos.checkers.rules.oracle import (
    COMMITTED_LOSS_ANOMALIES,
    DELAYED_END_TXN,
    FAILOVER_KINDS,
    ISOLATION_ANOMALIES,
    KIP_98,
    LOSS_ANOMALIES,
    POWER_LOSS_SOURCE,
    READ_ANOMALIES,
    SEND_ORDER_ANOMALIES,
    TRANSACTION_LOSS_ANOMALIES,
    Rule,
    always,
)
from kchaos.model.fault_table import KINDS


def _or_list(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]


#: The kinds that may move leadership, in the fault table's order, as the acks=1 rules name them.
_FAILOVER_KINDS_TEXT = _or_list([kind for kind in KINDS if kind in FAILOVER_KINDS])

#: In the order they are tried.
LOG_RULES: tuple[Rule, ...] = (
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
            "nor a loss of power to every replica at once can take it: the log is recovered from disk. A "
            "new segment's name is durable only once its directory is synced, which Kafka does from 3.0 "
            "(KAFKA-3968): before, a power loss that takes unsynced directory entries "
            "(`power-loss:dirents=lost`) can take a segment synced in full, and that is this bug."
        ),
        source="Kafka documentation, Design > Persistence; broker config `log.flush.interval.messages`; "
        "topic config `flush.messages`; Kafka producer config `acks`; KAFKA-3968",
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
        source=POWER_LOSS_SOURCE,
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
        applies_when=f"acks=1 and a {_FAILOVER_KINDS_TEXT} fault happened",
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
            f"no {_FAILOVER_KINDS_TEXT} fault happened, so leadership had no reason to move."
        ),
        source="Kafka producer config `acks`; Kafka documentation, Design > Replicated logs",
    ),
    Rule(
        id="retries-reorder",
        anomalies=frozenset({NONMONOTONIC_SEND}),
        expected="possible",
        applies=lambda ctx: not ctx.idempotence and ctx.several_in_flight,
        applies_when="enable.idempotence=false and max.in.flight.requests.per.connection above 1 (both "
        "clients' default)",
        statement=(
            "Without idempotence a producer with several requests in flight per connection retries a "
            "failed batch after later batches to the same partition succeeded, so the retried records land "
            "after records sent later (librdkafka allows many requests in flight and retries by default)."
        ),
        source="Kafka producer configs `retries`, `max.in.flight.requests.per.connection` and "
        "`enable.idempotence`; librdkafka INTRODUCTION.md, Message reliability > Reordering",
    ),
    Rule(
        id="one-in-flight-order",
        anomalies=frozenset({NONMONOTONIC_SEND}),
        expected="none",
        applies=lambda ctx: not ctx.idempotence and not ctx.several_in_flight,
        applies_when="enable.idempotence=false and max.in.flight.requests.per.connection=1 "
        "(--producer-config), unclean election off, an in-sync replica always alive",
        statement=(
            "With one request in flight per connection a producer sends a partition's next batch only once "
            "the one before it was answered, and a batch it retries goes out again ahead of every later one, "
            "so sends land in the order they were made even without idempotence. A send that times out "
            "leaves a gap in that order, not a reordering."
        ),
        source="Kafka producer configs `retries` and `max.in.flight.requests.per.connection` (ordering is "
        "preserved when it is 1); librdkafka INTRODUCTION.md, Message reliability > Reordering",
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
        source=POWER_LOSS_SOURCE,
    ),
    Rule(
        id="committed-not-lost",
        anomalies=frozenset({LOST_WRITE, INCONSISTENT_OFFSET}),
        expected="none",
        applies=always,
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
        applies=always,
        applies_when="unclean election off, an in-sync replica always alive",
        statement=(
            "A transactional producer is idempotent, so its records are written with acks=all: each was "
            "acknowledged only once every in-sync replica held it, and a committed record is not lost as "
            "long as one in-sync replica remains alive. A commit makes the transaction's records visible to "
            "every reader, so a committed record acknowledged in a partition the final read drained is "
            "returned by some reader. " + DELAYED_END_TXN
        ),
        source=f"{KIP_98}; Kafka documentation, Design > Replicated logs; Kafka producer configs "
        "`transactional.id` and `enable.idempotence`",
    ),
    Rule(
        id="transactions-atomic",
        anomalies=frozenset({PARTIAL_TRANSACTION}),
        expected="none",
        applies=always,
        applies_when="unclean election off, an in-sync replica always alive",
        statement=(
            "A transaction's writes to several partitions are atomic: the coordinator logs its decision "
            "once and writes a commit marker into every partition the transaction wrote to, so readers see "
            "all of its records or none of them. Committed records survive while an in-sync replica lives, "
            "so no committed transaction may keep some records and lose others. " + DELAYED_END_TXN
        ),
        source=f"{KIP_98}; Kafka documentation, Design > Message Delivery Semantics (transactions); "
        "Kafka producer config `transactional.id`",
    ),
    Rule(
        id="read-committed-isolation",
        anomalies=ISOLATION_ANOMALIES,
        expected="none",
        applies=always,
        applies_when="always, for readers at isolation.level=read_committed",
        statement=(
            "A consumer at isolation.level=read_committed is handed only records below the last stable "
            "offset (the first offset of a transaction still open) and drops those of aborted transactions, "
            "whose list the broker sends with them; so it never returns a record of an aborted transaction, "
            "nor one of a transaction before its producer asked to commit. " + DELAYED_END_TXN
        ),
        source=f"{KIP_98}; Kafka consumer config `isolation.level`",
    ),
    Rule(
        id="final-read-reaches-end",
        anomalies=frozenset({UNSEEN}),
        expected="none",
        applies=always,
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
        applies=always,
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
        anomalies=SEND_ORDER_ANOMALIES,
        expected="none",
        applies=always,
        applies_when="enable.idempotence=true, unclean election off, an in-sync replica always alive",
        statement=(
            "An idempotent producer numbers each partition's batches and the leader appends them only in "
            "sequence, so sends land in the order they were produced even with several requests in flight. "
            "A message that times out leaves a gap in that order, not a reordering. A transactional "
            "producer is idempotent, so one transaction's sends to a partition land in its order too."
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
        applies=always,
        applies_when="enable.idempotence=true, unclean election off, no send timed out",
        statement=(
            "An idempotent producer numbers its batches per partition and the leader drops a batch it "
            "already has, so a retry cannot append a record twice."
        ),
        source="KIP-98; Kafka producer config `enable.idempotence`",
    ),
)

#: Replicas agree once healed, whatever else happened: the table's last rule.
REPLICAS_CONVERGE = Rule(
    id="replicas-converge",
    anomalies=frozenset({REPLICA_DIVERGENCE}),
    expected="none",
    applies=always,
    applies_when="always (after healing)",
    statement=(
        "A follower that rejoins asks the leader where its last leader epoch ends "
        "(OffsetsForLeaderEpoch), "
        "truncates what the leader does not have and refetches; KIP-279 closed the cases left after fast "
        "repeated failovers. Once healed, replicas hold the same record at every offset they share, "
        "whatever the configuration and whatever was lost, unclean elections included."
    ),
    source="KIP-101; KIP-279; Kafka documentation, Design > Replicated logs",
)
