"""Headline counts of a history, the denominators that make anomaly counts meaningful.

Three lost writes mean one thing among a hundred acknowledged sends and another among a million; and a
run whose sends were mostly indeterminate tested less than its length suggests. One aggregation pass.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from checkers.frames import FINAL_READ, POLL, SEND, count_where, is_nemesis, is_read

#: How the workload records librdkafka's message timeout (`KafkaError._MSG_TIMED_OUT`): its name first.
MESSAGE_TIMED_OUT = "_MSG_TIMED_OUT"


def summarize(history: DataFrame) -> dict[str, int]:
    """Sends by outcome, records read by kind of read, and how many partitions any read touched."""
    send = (F.col("f") == SEND) & ~is_nemesis()
    counts = {
        "sends_invoked": send & (F.col("type") == "invoke"),
        "sends_acknowledged": send & (F.col("type") == "ok"),
        "sends_failed": send & (F.col("type") == "fail"),
        "sends_indeterminate": send & (F.col("type") == "info"),
        "sends_timed_out": send & (F.col("type") == "info") & F.col("error").startswith(MESSAGE_TIMED_OUT),
        "records_read_poll": is_read() & (F.col("f") == POLL),
        "records_read_final": is_read() & (F.col("f") == FINAL_READ),
    }
    row = history.agg(
        *(count_where(condition).alias(name) for name, condition in counts.items()),
        F.count_distinct(F.when(is_read(), F.struct("topic", "partition"))).alias("partitions_read"),
    ).first()
    values: dict[str, Any] = row.asDict() if row is not None else {}
    return {name: int(values.get(name) or 0) for name in [*counts, "partitions_read"]}
