"""Per topic of a run that wrote several (`--topics N`): what was acknowledged there, what the reads
returned, and which acknowledged values no read returned at all.

Every anomaly is found by topic, partition and offset, so each topic's records are checked like the test
topic's; but the counts per partition (`by_partition`) go by partition number. This tally is what says in
which topic the acknowledged records that no read returned were written, and that every topic was written
and read at all. A run of one topic has none (its headline says it all).
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from kchaos.checkers.passes.frames import count_where, is_nemesis, is_read
from kchaos.model.events import FINAL_READ, INVOKE, OK, POLL, SEND, TXN_COMMIT, TXN_SEND


def topic_tally(history: DataFrame) -> dict[str, dict[str, int]]:
    """`{topic: {"acknowledged", "read_final", "read_poll", "unread"}}` for each topic records were
    written to, when there are two or more. `acknowledged`: plain sends acknowledged, and records of
    transactions whose commit was (a record of an aborted transaction is rightly never read); `unread`: of
    those, the values no read (poll or final) returned, in any topic (the anomalies say which of them are
    lost and which only unseen). Empty for one topic."""
    written = F.col("f").isin(SEND, TXN_SEND) & ~is_nemesis()
    topics = [
        str(row["topic"])
        for row in history.filter(written & (F.col("type") == INVOKE)).select("topic").distinct().collect()
        if row["topic"] is not None
    ]
    if len(topics) < 2:
        return {}
    commits = (
        history.filter((F.col("f") == TXN_COMMIT) & (F.col("type") == OK) & ~is_nemesis())
        .select(F.col("key").alias("committed_txn"))
        .distinct()
    )
    rows = history.filter(F.col("topic").isin(topics)).join(
        F.broadcast(commits), (F.col("f") == TXN_SEND) & (F.col("key") == F.col("committed_txn")), "left"
    )
    plain = (F.col("f") == SEND) & (F.col("type") == OK)
    committed = (F.col("f") == TXN_SEND) & (F.col("type") == OK) & F.col("committed_txn").isNotNull()
    acked = ~is_nemesis() & (plain | committed)
    counted = (
        rows.groupBy("topic")
        .agg(
            count_where(acked).alias("acknowledged"),
            count_where(is_read() & (F.col("f") == FINAL_READ)).alias("read_final"),
            count_where(is_read() & (F.col("f") == POLL)).alias("read_poll"),
        )
        .collect()
    )
    read_values = history.filter(is_read()).select("value").distinct()
    unread = (
        rows.filter(acked)
        .select("topic", "value")
        .join(read_values, on="value", how="left_anti")
        .groupBy("topic")
        .count()
        .collect()
    )
    missing = {str(row["topic"]): int(row["count"]) for row in unread}
    return {
        str(row["topic"]): {
            "acknowledged": int(row["acknowledged"]),
            "read_final": int(row["read_final"]),
            "read_poll": int(row["read_poll"]),
            "unread": missing.get(str(row["topic"]), 0),
        }
        for row in sorted(counted, key=lambda row: str(row["topic"]))
    }


def tally_line(tally: dict[str, Any]) -> str:
    """`kchaos: 1,200 acknowledged, 1,200 in the final read, 0 never read; kchaos-1: ...`: the report row."""
    return "; ".join(
        f"{topic}: {counts['acknowledged']:,} acknowledged, {counts['read_final']:,} in the final read, "
        f"{counts['unread']:,} never read"
        for topic, counts in tally.items()
    )
