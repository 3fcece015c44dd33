"""Promises a release broke that a later release kept: the KIP (or issue) that fixed each, for a violation's
report.

A violation on an old release is still a violation: the documentation promised then what it promises
now (a committed message is not lost while an in-sync replica lives; replicas converge). But a user
looking at a 0.10 run's `lost-write` should learn it is KIP-101's known loss, fixed in 0.11, and not a new
bug, so a violation whose rule one of these fixes covers names the fix when the run's release predates it.

Pure Python, like the rules.
"""

from __future__ import annotations

from dataclasses import dataclass

from kchaos.model.releases import Release


@dataclass(frozen=True)
class KnownFix:
    """A change that made releases from `fixed_in` on keep the promises of `rules`."""

    kip: str
    fixed_in: str
    rules: frozenset[str]
    what: str
    #: The transaction protocol that carries the fix, when the fix needs the client too: a release from
    #: `fixed_in` on keeps the promise only for transactions that used it.
    protocol: int | None = None

    def missing_from(self, kafka_version: str, protocols: frozenset[int] = frozenset()) -> bool:
        """The run's release predates the fix, or its transactions used an older protocol than it needs."""
        if Release.parse(kafka_version).parts < Release.parse(self.fixed_in).parts:
            return True
        return self.protocol is not None and any(used < self.protocol for used in protocols)

    def note(self, kafka_version: str, protocols: frozenset[int] = frozenset()) -> str:
        if Release.parse(kafka_version).parts < Release.parse(self.fixed_in).parts:
            return f"{self.kip}, fixed in {self.fixed_in}: {self.what}"
        used = ", ".join(str(protocol) for protocol in sorted(protocols))
        return (
            f"{self.kip}, fixed in {self.fixed_in} for transaction protocol {self.protocol} only, and this "
            f"run's commits and aborts used protocol {used} (librdkafka speaks protocol 1 whatever the "
            f"cluster offers; confluentinc/librdkafka#5423 asks for KIP-890): {self.what}"
        )


KNOWN_FIXES: tuple[KnownFix, ...] = (
    KnownFix(
        "KIP-101",
        "0.11.0",
        frozenset(
            {"committed-not-lost", "final-read-reaches-end", "consumers-read-committed", "replicas-converge"}
        ),
        "before leader epochs a replica told to follow a new leader truncated its log to its own high "
        "watermark, which lags the leader's by a fetch round; elected before it fetched those records "
        "back, it lost acknowledged writes, and replicas could hold different records at one offset. From "
        "0.11 a follower asks its leader where its epoch ends (OffsetsForLeaderEpoch) and truncates there",
    ),
    KnownFix(
        "KIP-279",
        "2.0.0",
        frozenset({"replicas-converge"}),
        "after fast repeated leader changes a follower could still truncate to an offset of an epoch its "
        "leader never had and keep records the leader replaced; from 2.0 both sides agree on the largest "
        "epoch they share first",
    ),
    KnownFix(
        "KAFKA-3968",
        "3.0.0",
        frozenset({"synced-appends-survive"}),
        "Kafka fsynced a new segment's data but not the directory that names it, so a power loss that takes "
        "unsynced directory entries (`power-loss:dirents=lost`) could take segments synced in full; from "
        "3.0 a segment's directory is synced when the segment is first flushed. kchaos measured 2.8.2 "
        "losing whole partition directories this way and 4.3.1 losing none (docs/faults.md)",
    ),
    KnownFix(
        "KIP-890",
        "4.0.0",
        frozenset({"read-committed-isolation", "committed-transaction-not-lost", "transactions-atomic"}),
        "a commit or abort delayed in the network could end the producer's next transaction instead of "
        "its own, making aborted records visible, losing committed ones or tearing a transaction (Jepsen, "
        "Bufstream 0.1.0 analysis, 2024, reproduced it on Kafka); from 4.0 with transaction.version=2 the "
        "producer bumps its epoch for every transaction, which fences such a late request",
        protocol=2,
    ),
)


def known_fix(rule_id: str, kafka_version: str | None, protocols: frozenset[int] = frozenset()) -> str | None:
    """What fixed the broken promise of `rule_id` in a release after `kafka_version`, or for a protocol
    newer than the run's transactions used (`protocols`, as their commit and abort rows recorded), or
    None (no release known, or none of the fixes is missing from the run)."""
    if kafka_version is None:
        return None
    notes = [
        fix.note(kafka_version, protocols)
        for fix in KNOWN_FIXES
        if rule_id in fix.rules and fix.missing_from(kafka_version, protocols)
    ]
    return "; ".join(notes) or None
