"""Sends as pairs of history rows: each `invoke` with its first completion.

Latency is what the report plots and what a comparison ranks configurations by, and both must pair the
rows the same way: by run, process and value (values are unique per send), the first completion by
index standing for the send's outcome.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from kchaos.checkers.passes.frames import is_nemesis
from kchaos.model.events import INVOKE, OK, SEND
from kchaos.model.events import OUTCOMES as OUTCOMES  # the types that end a send; the report reads them here


def is_send() -> Column:
    return (F.col("f") == SEND) & ~is_nemesis()


def send_pairs(history: DataFrame) -> DataFrame:
    """One row per send: `run_id`, `process`, `value`, `invoke_ns`, `invoke_wall` (null without an
    invoke row) and `done`, the first completion as a struct of `index`, `time_ns`, `wall_time`, `type`
    (null for a send never completed)."""
    invoke = F.col("type") == INVOKE
    sends = history.filter(is_send() & F.col("value").isNotNull() & F.col("type").isin(INVOKE, *OUTCOMES))
    return sends.groupBy("run_id", "process", "value").agg(
        F.min(F.when(invoke, F.col("time_ns"))).alias("invoke_ns"),
        F.min(F.when(invoke, F.col("wall_time"))).alias("invoke_wall"),
        # The first completion by index: its struct sorts by index first, and min skips the invoke's null.
        F.min(F.when(~invoke, F.struct("index", "time_ns", "wall_time", "type"))).alias("done"),
    )


def acknowledged_latencies(history: DataFrame) -> DataFrame:
    """`run_id`, `latency_ms` of each send acknowledged (`ok`) with its invoke on record."""
    return (
        send_pairs(history)
        .filter(F.col("invoke_ns").isNotNull() & (F.col("done.type") == OK))
        .select("run_id", ((F.col("done.time_ns") - F.col("invoke_ns")) / F.lit(1e6)).alias("latency_ms"))
    )
