"""The guarantee oracle's vocabulary: what a rule is, and the facts of a run it may turn on.

An anomaly count alone does not say whether Kafka broke a promise: acks=1 losing writes after a leader
crash is the documented trade-off, acks=all losing them with an in-sync replica alive is a bug. For each
anomaly the oracle says what the run was allowed to show — `none`, `possible`, or `unknown` when the docs'
answer turns on a fact the run did not record (which replicas were in sync when the power went) — and names
the rule and the document it rests on; `kchaos.checkers.rules.verdicts` holds the counts against it.

Rules are a table, not code paths, so docs/rules.md can print exactly what the checker enforces: the rules
about records and the log are in `kchaos.checkers.rules.log_rules`, those about consumer groups in
`kchaos.checkers.rules.group_rules`, and `kchaos.checkers.rules.rule_table` puts them in the order they are
tried. This module holds what they share: the context a rule is judged in (`GuaranteeContext`), a rule's
shape, the fault kinds and anomaly groups rules are written in, and the documents several rules cite. A power
loss is judged per partition (whether that partition's whole in-sync replica set lost power), so the context
can name the partition being judged.

Pure Python on purpose: judging is cheap and must be testable without a Spark session.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Literal

from kchaos.checkers.rules.anomaly_names import (
    ABORTED_READ,
    EOS_LOST,
    GROUP_LOST,
    INCONSISTENT_OFFSET,
    INT_NONMONOTONIC_POLL,
    INT_NONMONOTONIC_SEND,
    INT_POLL_SKIP,
    LOST_COMMITTED,
    LOST_WRITE,
    NONMONOTONIC_POLL,
    NONMONOTONIC_SEND,
    PARTIAL_TRANSACTION,
    POLL_SKIP,
    PRECOMMITTED_READ,
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
#: read, and a position past the new log end that is reset forwards or backwards (between a reader's
#: polls, or between the polls of one read-write transaction).
READ_ANOMALIES = frozenset(
    {POLL_SKIP, NONMONOTONIC_POLL, TRUNCATED_READ, INT_POLL_SKIP, INT_NONMONOTONIC_POLL}
)
#: A later send acknowledged at or below an earlier one: a producer's, or one transaction's own.
SEND_ORDER_ANOMALIES = frozenset({NONMONOTONIC_SEND, INT_NONMONOTONIC_SEND})

#: What a truncation does to committed transactions: records lost, some of a transaction's records lost
#: while others survive, or a group's processed output lost though its offsets say it was committed. Not
#: under the acks=1 rules: a transactional producer is idempotent, which takes acks=all whatever the run's
#: other producers were configured with.
TRANSACTION_LOSS_ANOMALIES = frozenset({LOST_COMMITTED, PARTIAL_TRANSACTION, EOS_LOST})

#: Anomalies a truncation that reaches committed records can cause.
COMMITTED_LOSS_ANOMALIES = LOSS_ANOMALIES | READ_ANOMALIES | SEND_ORDER_ANOMALIES | TRANSACTION_LOSS_ANOMALIES

#: What a reader at read_committed must never return: records of a transaction that did not commit, its
#: own transaction's included.
ISOLATION_ANOMALIES = frozenset({ABORTED_READ, UNCOMMITTED_READ, PRECOMMITTED_READ})

#: The transaction protocol's known hole, named in the rules it breaks (see also
#: `kchaos.checkers.rules.known_fixes`).
DELAYED_END_TXN = (
    "Known issue: a commit or abort delayed in the network (EndTxn retried after a timeout) can end the "
    "producer's next transaction instead of its own, so aborted records become visible, committed ones are "
    "lost, and a transaction is torn in parts; Jepsen reproduced it on Kafka itself (analysis of Bufstream "
    "0.1.0, 2024), and KIP-890 closes it from 4.0 with "
    "transaction.version=2 (a producer epoch bump per transaction), where client and cluster both use it. "
    "The documentation promises isolation and atomicity regardless, so an occurrence stays a violation."
)

KIP_98 = "KIP-98"


@dataclass(frozen=True)
class GuaranteeContext:
    """The configuration the promises depend on, and the faults that actually happened."""

    acks: str  # "all" | "1"
    replication_factor: int
    unclean_leader_election: bool
    idempotence: bool
    fault_kinds: frozenset[str]  # detail.kind of every fault that started: "crash", "partition", ...
    max_concurrent_crashed: int  # most distinct nodes down at once from crash faults
    #: The topic's min.insync.replicas when the run recorded it, shown with the verdicts; no rule turns on
    #: it (see `kchaos.model.oracle_inputs.OracleInputs`), so a run that did not record it is judged alike.
    min_insync_replicas: int | None = None
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
    #: The transaction protocols the run's commits and aborts used (their rows' `kchaos.model.txn_protocol`
    #: keys): a fix that needs protocol 2 is missing from a 4.x run whose client spoke protocol 1.
    transaction_protocols: frozenset[int] = frozenset()
    #: The producers' `max.in.flight.requests.per.connection` when the run set it (`--producer-config`);
    #: None: the client's default, more than one (5 in Java, 1,000,000 in librdkafka).
    max_in_flight: int | None = None

    @property
    def several_in_flight(self) -> bool:
        """A producer may have more than one request in flight to a partition's leader: what lets a retried
        batch land after a later one when idempotence does not number them."""
        return self.max_in_flight is None or self.max_in_flight > 1

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


def always(_: GuaranteeContext) -> bool:
    """The condition of a table's last rule for an anomaly: what holds when nothing more specific does."""
    return True


#: Where the power-loss rules' facts are documented.
POWER_LOSS_SOURCE = (
    "Kafka documentation, Design > Persistence; Design > Replicated logs; Operations > Eligible Leader "
    "Replicas (KIP-966); broker configs `log.flush.interval.messages` and `log.flush.interval.ms`"
)
