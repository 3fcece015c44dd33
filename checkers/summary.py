"""Headline counts of a history, the denominators that make anomaly counts meaningful.

Three lost writes mean one thing among a hundred acknowledged sends and another among a million; and a
run whose sends were mostly indeterminate tested less than its length suggests. One aggregation pass.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from checkers.frames import count_where, is_nemesis, is_read
from harness.events import FAIL, FINAL_READ, INFO, INVOKE, OK, POLL, SEND

#: How the workload records librdkafka's message timeout (`KafkaError._MSG_TIMED_OUT`): its name first.
MESSAGE_TIMED_OUT = "_MSG_TIMED_OUT"


def summarize(history: DataFrame) -> dict[str, int | float]:
    """Sends by outcome, records read by kind of read, how many partitions any read touched, and
    `writing_seconds`: from the first send invoked to the last, the window the rates are taken over."""
    send = (F.col("f") == SEND) & ~is_nemesis()
    counts = {
        "sends_invoked": send & (F.col("type") == INVOKE),
        "sends_acknowledged": send & (F.col("type") == OK),
        "sends_failed": send & (F.col("type") == FAIL),
        "sends_indeterminate": send & (F.col("type") == INFO),
        "sends_timed_out": send & (F.col("type") == INFO) & F.col("error").startswith(MESSAGE_TIMED_OUT),
        "records_read_poll": is_read() & (F.col("f") == POLL),
        "records_read_final": is_read() & (F.col("f") == FINAL_READ),
    }
    invoked_at = F.when(send & (F.col("type") == INVOKE), F.col("wall_time"))
    row = history.agg(
        *(count_where(condition).alias(name) for name, condition in counts.items()),
        F.count_distinct(F.when(is_read(), F.struct("topic", "partition"))).alias("partitions_read"),
        (F.max(invoked_at) - F.min(invoked_at)).alias("writing_seconds"),
    ).first()
    values: dict[str, Any] = row.asDict() if row is not None else {}
    summary: dict[str, int | float] = {
        name: int(values.get(name) or 0) for name in [*counts, "partitions_read"]
    }
    summary["writing_seconds"] = round(float(values.get("writing_seconds") or 0.0), 3)
    return summary


#: Below this share of the requested send rate a run says it could not write as fast as asked.
RATE_SHORTFALL = 0.8


def rates(summary: Mapping[str, Any], requested: float | None) -> dict[str, Any]:
    """Requested against achieved sends per second, and reads per second, over the writing window.

    A run that reached a fraction of its `--rate` tested a lighter load than it claims: loss windows, ISR
    shrinks under fetch lag and flush costs scale with load. `shortfall` says so when the acknowledged
    rate fell below RATE_SHORTFALL of the requested one; `requested` is 0 for a run with no rate limit
    (nothing to fall short of) and None for histories that did not come from a kchaos workload (converted
    tool output).
    """
    seconds = float(summary.get("writing_seconds") or 0.0)

    def per_second(count: Any) -> float | None:
        return round(int(count or 0) / seconds, 1) if seconds > 0 else None

    acknowledged = per_second(summary.get("sends_acknowledged"))
    result: dict[str, Any] = {
        "writing_seconds": seconds,
        "sends_requested_per_s": requested,
        "sends_invoked_per_s": per_second(summary.get("sends_invoked")),
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
