"""What an anomaly is to the checker: `Anomaly`, its name and how its occurrences are cut from the passes,
and `Occurrences`, one kind of occurrence as a frame with an `id` per occurrence.

Apart from the definitions (`kchaos.checkers.anomalies.registry`,
`kchaos.checkers.anomalies.group_anomalies`), which build these, and from the findings
(`kchaos.checkers.anomalies.findings`), which count and show them; also the per-partition counting every
definition module shares.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from kchaos.checkers.anomalies.examples import Explainer
from kchaos.checkers.passes.history_passes import Passes


@dataclass(frozen=True)
class Occurrences:
    """One kind of occurrence of an anomaly: rows with an `id` and the columns that place it, in order."""

    frame: DataFrame
    order: tuple[str, ...]
    explainer: Explainer | None = None


@dataclass(frozen=True)
class Anomaly:
    """One anomaly: its name and how its occurrences are cut from the passes.

    Most anomalies have one kind of occurrence; `inconsistent-offset` has two, whose examples alternate so
    a flood of one cannot hide the other. `by_partition` breaks the count down by partition, from the
    `partition` column of its occurrence frames: examples are capped, whether losses gather where the
    faults struck is the first thing a reader asks, and after a power loss each partition is judged by
    what the loss did to its own replicas. Every anomaly a truncation can cause has it; `duplicate` and
    `replica-divergence` are judged alike in every partition. A flag, not a frame of counts, so that a
    check counts every anomaly, per partition too, from one union of their ids
    (`kchaos.checkers.anomalies.findings.count_all`).
    """

    name: str
    occurrences: Callable[[Passes], list[Occurrences]]
    needs_replicas: bool = False
    by_partition: bool = False
    needs_transactions: bool = False
    #: Where set, a frame of (`kind`, `count`): the anomaly's occurrences by kind, each counted once, for an
    #: anomaly whose kinds mean different things (`group-duplicate`: redelivered after a rebalance or not).
    #: Computed with its examples, so only when it occurred.
    by_kind: Callable[[Passes], DataFrame] | None = None

    def is_checked(self, passes: Passes) -> bool:
        """False when the history lacks what the anomaly is judged from (replica dumps, transactions)."""
        return (passes.replicas_checked or not self.needs_replicas) and (
            passes.transactional or not self.needs_transactions
        )

    def ids(self, passes: Passes) -> list[DataFrame]:
        """Every occurrence as (`anomaly`, `id`, `topic`, `partition`, `by_partition`), one frame per kind
        of occurrence (an id may repeat): the anomaly's name, the occurrence's id, its topic (where its
        frame names one) and partition where the anomaly is counted `by_partition` (else null), and that
        flag."""
        counted = self.by_partition
        frames = []
        for part in self.occurrences(passes):
            topic = F.col("topic") if counted and "topic" in part.frame.columns else F.lit(None)
            partition = F.col("partition") if counted else F.lit(None)
            frames.append(
                part.frame.select(
                    F.lit(self.name).alias("anomaly"),
                    "id",
                    topic.cast("string").alias("topic"),
                    partition.cast("int").alias("partition"),
                    F.lit(counted).alias("by_partition"),
                )
            )
        return frames


#: The `by_partition` key of a write acknowledged without a partition (a foreign history may hold one).
UNKNOWN_PARTITION = "unknown"


def partition_key(partition: int | None, topic: str | None = None) -> str:
    """The `by_partition` key of a partition: the partition as a string, or `UNKNOWN_PARTITION`; of a run
    of several topics (`topic` given), `<topic>/<partition>` (`<topic>/unknown` without a partition)."""
    key = str(partition) if partition is not None else UNKNOWN_PARTITION
    return key if topic is None else f"{topic}/{key}"
