"""The guarantee oracle: what Kafka's documentation promises for a configuration under the faults a run saw.

An anomaly count alone does not say whether Kafka broke a promise: acks=1 losing writes after a leader
crash is the documented trade-off, acks=all losing them with an in-sync replica alive is a bug. The oracle
turns each count into a verdict — `ok` (none occurred), `permitted` (occurred, and the docs allow it here)
or `violation` (occurred, and the docs say it cannot) — and names the rule and the document it rests on.
An anomaly the history could not be checked for (no replica dumps) is `unchecked`: never `ok`, and it
does not move the run's verdict.

Rules are a table, not code paths, so the README can print exactly what the checker enforces. For each
anomaly the first rule (in table order) whose condition holds decides the expectation; every anomaly ends
with an unconditional rule, so the table is total.

Pure Python on purpose: judging is cheap and must be testable without a Spark session.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
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

Expectation = Literal["none", "possible"]
Verdict = Literal["ok", "permitted", "violation", "unchecked"]

#: Fault kinds that can move partition leadership: a crashed, stopped, paused or cut-off leader is
#: replaced. The fault table says which kinds those are.
FAILOVER_KINDS = kinds_treated_as("crash", "failover")

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


@dataclass(frozen=True)
class Judgement:
    """One anomaly's count held against the rule that decides what this run was allowed to show.

    `count` is None when the anomaly could not be checked; the rule is still named (what the run would
    have been allowed to show), but the verdict is `unchecked`.
    """

    anomaly: str
    count: int | None
    expected: Expectation
    verdict: Verdict
    rule: str
    source: str
    rule_id: str
    unchecked_reason: str | None = None

    @property
    def checked(self) -> bool:
        return self.count is not None

    def to_json(self) -> dict[str, Any]:
        return {
            "checked": self.checked,
            **({"unchecked_reason": self.unchecked_reason} if not self.checked else {}),
            "count": self.count,
            "expected": self.expected,
            "verdict": self.verdict,
            "rule": self.rule,
            "rule_id": self.rule_id,
            "source": self.source,
        }


def _always(_: GuaranteeContext) -> bool:
    return True


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
        applies_when="acks=1 and a crash, stop, partition or pause fault happened",
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
            "no crash, partition or pause happened, so leadership had no reason to move."
        ),
        source="Kafka producer config `acks`; Kafka documentation, Design > Replicated logs",
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
            "not lossy, so the promise still holds."
        ),
        source="Kafka documentation, Design > Replicated logs; Kafka producer config `acks`; topic config "
        "`min.insync.replicas`; KIP-101",
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


def verdict_for(count: int | None, expected: Expectation) -> Verdict:
    if count is None:
        return "unchecked"
    if count == 0:
        return "ok"
    return "permitted" if expected == "possible" else "violation"


def judge(
    anomaly: str, count: int | None, ctx: GuaranteeContext, unchecked_reason: str | None = None
) -> Judgement:
    """The verdict on `count` occurrences of `anomaly` (None: the history could not be checked for it,
    for `unchecked_reason`)."""
    rule = rule_for(anomaly, ctx)
    return Judgement(
        anomaly=anomaly,
        count=count,
        expected=rule.expected,
        verdict=verdict_for(count, rule.expected),
        rule=rule.statement,
        source=rule.source,
        rule_id=rule.id,
        unchecked_reason=(unchecked_reason or "not checked") if count is None else None,
    )


def judge_all(
    counts: Mapping[str, int | None], ctx: GuaranteeContext, reasons: Mapping[str, str] | None = None
) -> dict[str, Judgement]:
    """Judges every count; `reasons` says why each None count could not be checked."""
    why = reasons or {}
    return {anomaly: judge(anomaly, count, ctx, why.get(anomaly)) for anomaly, count in counts.items()}


#: Verdicts from least to most serious.
VERDICT_SEVERITY: tuple[Verdict, ...] = ("unchecked", "ok", "permitted", "violation")


def worst_verdict(verdicts: Iterable[Verdict]) -> Verdict:
    """The most serious of `verdicts`: `unchecked` only when nothing was checked (or there are none)."""
    return max(verdicts, key=VERDICT_SEVERITY.index, default="unchecked")


def overall_verdict(judgements: Iterable[Judgement]) -> Verdict:
    """The worst verdict: one violation fails the run; a permitted anomaly is still worth reporting.

    An unchecked anomaly moves nothing: it neither passes nor fails the run.
    """
    worst = worst_verdict(judgement.verdict for judgement in judgements)
    return "ok" if worst == "unchecked" else worst


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
