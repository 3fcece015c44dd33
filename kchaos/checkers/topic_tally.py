"""Per topic of a run that wrote several (`--topics N`): what was acknowledged there, what the reads
returned, and which acknowledged values no read returned at all.

Every anomaly is found by topic, partition and offset, so each topic's records are checked like the test
topic's, and the counts per partition (`by_partition`) name their topic. This tally says, topic by topic,
how much was written and read at all, and where the acknowledged records no read returned were written. A
run of one topic has none (its headline says it all).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from kchaos.checkers.passes.frames import count_where, is_nemesis, is_read
from kchaos.model.events import FINAL_READ, OK, POLL, SEND, TXN_COMMIT, TXN_SEND


def topic_tally(history: DataFrame, topics: Sequence[str]) -> dict[str, dict[str, int]]:
    """`{topic: {"acknowledged", "read_final", "read_poll", "unread"}}` for each of the run's `topics`
    (`kchaos.model.written_topics.run_topics`), a topic with no row at all included, with zeros.
    `acknowledged`: plain sends acknowledged, and records of transactions whose commit was (a record of an
    aborted transaction is rightly never read); `unread`: of those, the values no read (poll or final)
    returned, in any topic (the anomalies say which of them are lost and which only unseen)."""
    commits = (
        history.filter((F.col("f") == TXN_COMMIT) & (F.col("type") == OK) & ~is_nemesis())
        .select(F.col("key").alias("committed_txn"))
        .distinct()
    )
    rows = history.filter(F.col("topic").isin(*topics)).join(
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
    found = {str(row["topic"]): row for row in counted}

    def count(topic: str, name: str) -> int:
        row = found.get(topic)
        return int(row[name]) if row is not None else 0

    return {
        topic: {
            "acknowledged": count(topic, "acknowledged"),
            "read_final": count(topic, "read_final"),
            "read_poll": count(topic, "read_poll"),
            "unread": missing.get(topic, 0),
        }
        for topic in sorted(topics)
    }


def tally_line(tally: dict[str, Any]) -> str:
    """`kchaos: 1,200 acknowledged, 1,200 in the final read, 0 never read; kchaos-1: ...`: the report row."""
    return "; ".join(
        f"{topic}: {counts['acknowledged']:,} acknowledged, {counts['read_final']:,} in the final read, "
        f"{counts['unread']:,} never read"
        for topic, counts in tally.items()
    )
