"""Per-partition losses for the report, from `results.json` rather than the history, so a report can be
regenerated (`kchaos report`) without checking the run again."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kchaos.checkers.anomalies.definition import partition_key
from kchaos.checkers.rules.anomaly_names import LOST_WRITE, UNSEEN
from kchaos.model.written_topics import run_topics


@dataclass(frozen=True)
class UnreadByPartition:
    """`lost-write` and `unseen` counts per partition (every partition of every topic written, losses or
    not)."""

    partitions: list[str]
    lost: list[int]
    unseen: list[int]

    @property
    def any(self) -> bool:
        return any(self.lost) or any(self.unseen)


def _partition_order(key: str) -> tuple[str, int, int | str]:
    """Topic by topic (a run of several names each key's, `topic/partition`), then partition numbers in
    order, then any other key (`unknown`)."""
    topic, _, partition = key.rpartition("/")
    return (topic, 0, int(partition)) if partition.lstrip("-").isdigit() else (topic, 1, partition)


def unread_by_partition(results: Mapping[str, Any], config: Mapping[str, Any]) -> UnreadByPartition | None:
    """None when results.json predates the per-partition counts (re-checking the run adds them)."""
    anomalies = results.get("anomalies", {})
    lost = anomalies.get(LOST_WRITE, {}).get("by_partition")
    unseen = anomalies.get(UNSEEN, {}).get("by_partition")
    if lost is None or unseen is None:
        return None
    declared = config.get("partitions")
    topics = run_topics(config)
    named: list[str | None] = list(topics) if len(topics) > 1 else [None]  # several: keys name the topic
    keys = (
        {partition_key(p, topic) for topic in named for p in range(declared)}
        if isinstance(declared, int)
        else set()
    )
    keys |= set(lost) | set(unseen)
    partitions = sorted(keys, key=_partition_order)
    return UnreadByPartition(
        partitions=partitions,
        lost=[int(lost.get(p, 0)) for p in partitions],
        unseen=[int(unseen.get(p, 0)) for p in partitions],
    )
