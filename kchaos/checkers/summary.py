"""Headline counts of a history, the denominators that make anomaly counts meaningful.

Three lost writes mean one thing among a hundred acknowledged sends and another among a million; and a
run whose sends were mostly indeterminate tested less than its length suggests. One aggregation pass.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from kchaos.checkers.passes.frames import count_where, is_nemesis, is_read
from kchaos.checkers.passes.group_passes import detail_group, names_group
from kchaos.model.events import (
    ASSIGN,
    COMMIT,
    FAIL,
    FINAL_READ,
    INFO,
    INVOKE,
    MESSAGE_TIMED_OUT,
    OK,
    POLL,
    REVOKE,
    SEND,
    TXN_POLL,
    TXN_SEND,
)


def _group_counts() -> dict[str, Column]:
    """What a run's consumer group did: its members' assignments and revocations (`lost`: partitions the
    client reported lost), and their offset commits by outcome."""
    member = ~is_nemesis() & detail_group().isNotNull()
    commit = (F.col("f") == COMMIT) & member
    return {
        "group_assignments": (F.col("f") == ASSIGN) & (F.col("type") == OK) & member,
        "group_revocations": (F.col("f") == REVOKE) & (F.col("type") == OK) & member,
        "group_revocations_lost": (F.col("f") == REVOKE) & (F.col("type") == INFO) & member,
        "group_commits_ok": commit & (F.col("type") == OK),
        "group_commits_failed": commit & (F.col("type") == FAIL),
        "group_commits_indeterminate": commit & (F.col("type") == INFO),
    }


def summarize(history: DataFrame) -> dict[str, int | float]:
    """Sends by outcome, records read by kind of read, how many partitions any read touched, and
    `writing_seconds`: from the first send invoked to the last, the window the rates are taken over.

    A history whose readers are consumer-group members adds `group_members` (how many processes are) and
    what `_group_counts` counts, in the same aggregation; one without has none of these keys, which is how
    a check knows whether the group anomalies apply (`has_groups`). One with records written in
    transactions adds `txn_records_invoked` and `txn_records_acknowledged`; one whose transactions polled
    (read-write transactions) `txn_records_polled`, which is how a check knows the read-write transaction
    anomalies apply (`has_transaction_reads`), as an eos run's `eos_transactions` does.

    The writing window is that of the writes `--rate` paced: the plain sends, or in a run that wrote none
    (the txn workload) the records written in transactions. In an eos run the input producer's sends are
    paced; the processors' transactional output follows them, into the catch-up after writing stopped."""
    send = (F.col("f") == SEND) & ~is_nemesis()
    txn_send = (F.col("f") == TXN_SEND) & ~is_nemesis()
    txn = {
        "txn_records_invoked": txn_send & (F.col("type") == INVOKE),
        "txn_records_acknowledged": txn_send & (F.col("type") == OK),
        "txn_records_polled": (F.col("f") == TXN_POLL) & (F.col("type") == OK) & ~is_nemesis(),
        # An eos processor's transactions, each keyed `commit` row one (`kchaos.model.events`).
        "eos_transactions": (F.col("f") == COMMIT) & F.col("key").isNotNull() & ~is_nemesis(),
    }
    counts = {
        "sends_invoked": send & (F.col("type") == INVOKE),
        "sends_acknowledged": send & (F.col("type") == OK),
        "sends_failed": send & (F.col("type") == FAIL),
        "sends_indeterminate": send & (F.col("type") == INFO),
        "sends_timed_out": send & (F.col("type") == INFO) & F.col("error").startswith(MESSAGE_TIMED_OUT),
        "records_read_poll": is_read() & (F.col("f") == POLL),
        "records_read_final": is_read() & (F.col("f") == FINAL_READ),
    }
    send_at = F.when(send & (F.col("type") == INVOKE), F.col("wall_time"))
    txn_at = F.when(txn_send & (F.col("type") == INVOKE), F.col("wall_time"))
    group = _group_counts()
    row = history.agg(
        *(count_where(condition).alias(name) for name, condition in {**counts, **group, **txn}.items()),
        F.count_distinct(F.when(is_read(), F.struct("topic", "partition"))).alias("partitions_read"),
        F.count_distinct(F.when(names_group(), F.col("process"))).alias("group_members"),
        (F.max(send_at) - F.min(send_at)).alias("sends_seconds"),
        (F.max(txn_at) - F.min(txn_at)).alias("txn_records_seconds"),
    ).first()
    values: dict[str, Any] = row.asDict() if row is not None else {}
    summary: dict[str, int | float] = {
        name: int(values.get(name) or 0) for name in [*counts, "partitions_read"]
    }
    summary["writing_seconds"] = round(float(values.get(f"{paced_writes(summary)}_seconds") or 0.0), 3)
    if values.get("group_members"):
        summary.update({name: int(values.get(name) or 0) for name in ["group_members", *group]})
    if values.get("txn_records_invoked"):
        summary.update(
            {name: int(values.get(name) or 0) for name in ("txn_records_invoked", "txn_records_acknowledged")}
        )
    for name in ("txn_records_polled", "eos_transactions"):  # read-write transactions only
        if values.get(name):
            summary[name] = int(values[name])
    return summary


def has_transaction_reads(summary: Mapping[str, Any]) -> bool:
    """Whether the summarized history's transactions read (read-write transactions polled, or an eos
    processor's), so the read-write transaction anomalies apply to it."""
    return bool(summary.get("txn_records_polled") or summary.get("eos_transactions"))


def has_groups(summary: Mapping[str, Any]) -> bool:
    """Whether the summarized history has consumer-group members, so the group anomalies apply to it."""
    return bool(summary.get("group_members"))


def paced_writes(summary: Mapping[str, Any]) -> str:
    """The prefix of the summary's counts of the writes `--rate` paced: `sends`, or `txn_records` in a run
    with no plain sends (the txn workload). An eos run's processors write their transactional output as
    fast as their paced input comes, so there the sends are the paced writes."""
    return "sends" if summary.get("sends_invoked") else "txn_records"


#: Below this share of the requested send rate a run says it could not write as fast as asked.
RATE_SHORTFALL = 0.8


def rates(summary: Mapping[str, Any], requested: float | None) -> dict[str, Any]:
    """Requested against achieved sends per second, and reads per second, over the writing window. The
    sends are the writes `--rate` paced: the plain sends, or the records written in transactions in a run
    that has no plain sends (an eos run's processors write theirs as fast as their input comes).

    A run that reached a fraction of its `--rate` tested a lighter load than it claims: loss windows, ISR
    shrinks under fetch lag and flush costs scale with load. `shortfall` says so when the acknowledged
    rate fell below RATE_SHORTFALL of the requested one; `requested` is 0 for a run with no rate limit
    (nothing to fall short of) and None for histories that did not come from a kchaos workload (converted
    tool output).
    """
    seconds = float(summary.get("writing_seconds") or 0.0)

    def per_second(count: Any) -> float | None:
        return round(int(count or 0) / seconds, 1) if seconds > 0 else None

    paced = paced_writes(summary)
    acknowledged = per_second(summary.get(f"{paced}_acknowledged"))
    result: dict[str, Any] = {
        "writing_seconds": seconds,
        "sends_requested_per_s": requested,
        "sends_invoked_per_s": per_second(summary.get(f"{paced}_invoked")),
        "sends_acknowledged_per_s": acknowledged,
        "reads_per_s": per_second(summary.get("records_read_poll")),
        "shortfall": bool(
            requested and acknowledged is not None and acknowledged < RATE_SHORTFALL * requested
        ),
    }
    result["line"] = rate_line(result)
    return result


def rate_line(rates: Mapping[str, Any]) -> str:
    """`sends/s: 1850 acknowledged of 20000 requested (9%); reads/s: 1790`, the line runs end with."""

    def shown(value: Any) -> str:
        return "—" if value is None else f"{value:,.0f}"

    requested = rates.get("sends_requested_per_s")
    acknowledged = rates.get("sends_acknowledged_per_s")
    sends = f"sends/s: {shown(acknowledged)} acknowledged"
    if requested:
        share = "" if acknowledged is None else f" ({100 * acknowledged / requested:.0f}%)"
        sends += f" of {shown(requested)} requested{share}"
    elif requested == 0:
        sends += " (no rate limit)"
    return f"{sends}; reads/s: {shown(rates.get('reads_per_s'))}"
