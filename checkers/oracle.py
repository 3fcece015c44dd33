"""The guarantee oracle: what Kafka's documentation promises for a configuration under the faults a run saw.

An anomaly count alone does not say whether Kafka broke a promise: acks=1 losing writes after a leader
crash is the documented trade-off, acks=all losing them with an in-sync replica alive is a bug. For each
anomaly the oracle says what the run was allowed to show — `none`, `possible`, or `unknown` when the docs'
answer turns on a fact the run did not record (which replicas were in sync when the power went) — and names
the rule and the document it rests on; `checkers.verdicts` holds the counts against it.

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

from checkers.names import (
    DUPLICATE,
    INCONSISTENT_OFFSET,
    LOST_WRITE,
    NONMONOTONIC_POLL,
    NONMONOTONIC_SEND,
    POLL_SKIP,
    REPLICA_DIVERGENCE,
    TRUNCATED_READ,
    UNSEEN,
)
from harness.fault_table import kinds_treated_as

Expectation = Literal["none", "possible", "unknown"]
Verdict = Literal["ok", "permitted", "violation", "unchecked"]
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
#: the final read cannot reach, and an offset reused after truncation.
LOSS_ANOMALIES = frozenset({LOST_WRITE, UNSEEN, INCONSISTENT_OFFSET})

#: What consumers see when a record they were given is truncated away: the record gone from the final
#: read, and a position past the new log end that is reset forwards or backwards.
READ_ANOMALIES = frozenset({POLL_SKIP, NONMONOTONIC_POLL, TRUNCATED_READ})

#: Anomalies a truncation that reaches committed records can cause.
COMMITTED_LOSS_ANOMALIES = LOSS_ANOMALIES | READ_ANOMALIES | {NONMONOTONIC_SEND}


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
        anomalies=LOSS_ANOMALIES | READ_ANOMALIES,
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
