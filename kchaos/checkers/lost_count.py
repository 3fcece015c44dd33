"""The run's headline: what it wrote that Kafka acknowledged, and `lost`, what a user means by lost:
acknowledged records that are no longer in Kafka after healing, counted across the anomalies that each see
part of it.

`lost-write` (read past, never read), `unseen` (never read, beyond what the final read reached) and the
acknowledged ones among `truncated-read` (read during the run, gone from the final read) are disjoint by
their definitions, so they add up. A power loss that took every replica's unsynced tail after consumers had
read it leaves its records as truncated reads alone: `lost-write` was 0 while thousands of acknowledged
records had vanished, which is why the headline cannot be `lost-write`'s count. The finer anomalies keep
their own verdicts; this is a count, not a judgement. Pure: it reads the anomalies of `results.json`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kchaos.checkers.rules.anomaly_names import (
    ACKNOWLEDGED,
    EOS_LOST,
    LOST_COMMITTED,
    LOST_WRITE,
    TRUNCATED_READ,
    UNSEEN,
)
from kchaos.checkers.rules.checkability import NO_EOS, NO_PLAIN_SENDS, NO_TRANSACTIONS

#: The anomalies whose acknowledged records the headline counts, in the order it names them: plain sends'
#: first, then the records of transactions whose commit was acknowledged and the read_committed final read
#: lacks (`lost-committed`), then an exactly-once pipeline's consumed inputs whose output is missing
#: (`eos-lost`). A `txn` run's headline read `lost: not known` when it counted plain sends alone.
LOST_PARTS = (LOST_WRITE, UNSEEN, TRUNCATED_READ, LOST_COMMITTED, EOS_LOST)
#: Parts a results.json written before they were counted lacks: left out, not unknown.
_LATER_PARTS = (LOST_COMMITTED, EOS_LOST)
#: Why a part does not apply to what the run wrote (plain sends of a run that wrote only transactions):
#: left out of the sum, where a part that could not be checked makes it unknown.
NOT_WRITTEN = (NO_PLAIN_SENDS, NO_TRANSACTIONS, NO_EOS)


def part_count(name: str, anomaly: Mapping[str, Any]) -> int | None:
    """How many acknowledged records `anomaly` (one entry of results.json's `anomalies`) counts as gone;
    None when it was not checked."""
    count = anomaly.get("count")
    if not anomaly.get("checked", False) or count is None:
        return None
    if name != TRUNCATED_READ or not count:
        return int(count)
    kinds = anomaly.get("by_kind")
    return None if kinds is None else int(kinds.get(ACKNOWLEDGED, 0))


def headline_lost(anomalies: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """`{"count", "parts", "unchecked"}`: the sum of the parts, or null with the parts that could not be
    counted named (a run whose final read did not finish cannot say what is gone)."""
    parts = {
        name: part_count(name, anomalies.get(name, {}))
        for name in LOST_PARTS
        if anomalies.get(name, {}).get("unchecked_reason") not in NOT_WRITTEN
        and not (name in _LATER_PARTS and name not in anomalies)
    }
    unchecked = [name for name, count in parts.items() if count is None]
    total = None if unchecked else sum(count for count in parts.values() if count is not None)
    return {"count": total, "parts": parts, "unchecked": unchecked}


def run_lost(results: Mapping[str, Any]) -> dict[str, Any]:
    """A checked run's headline `lost` from its `results.json`, counted again from its anomalies for
    results written before it had one."""
    lost = results.get("lost")
    return dict(lost) if lost is not None else headline_lost(results.get("anomalies", {}))


def run_acknowledged(results: Mapping[str, Any]) -> int | None:
    """The records a checked run wrote and Kafka acknowledged, what its `lost` is out of: plain sends
    acknowledged, and records of transactions whose commit was acknowledged (`committed_records`; an
    aborted transaction's records were acknowledged as sends but never as written). Results written before
    that was counted give the records acknowledged in transactions instead; None when they do not say."""
    summary = results.get("summary") or {}
    transactions = results.get("transactions") or {}
    plain = _whole(summary.get("sends_acknowledged"))
    written = _whole(transactions.get("committed_records", summary.get("txn_records_acknowledged", 0)))
    return None if plain is None or written is None else plain + written


def _whole(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
