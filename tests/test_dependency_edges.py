"""The dependency graph's edges on Spark (issue 49) are exactly the pandas reference's, on every planted
history of tests.test_dependency_reference and on all of them in one history."""

from __future__ import annotations

from dataclasses import replace

from pyspark.sql import SparkSession

from kchaos.checkers.anomalies.cycle_search import Edge
from kchaos.checkers.passes.dependency_edges import dependency_edges
from kchaos.checkers.passes.transaction_passes import outcomes
from tests.histories import HistoryBuilder
from tests.reference.dependencies import dependency_edges as reference_edges
from tests.test_dependency_reference import circular_flow, read_skew, write_cycle, write_skew


def spark_edges(h: HistoryBuilder, spark: SparkSession) -> set[Edge]:
    frame = h.frame(spark)
    rows = dependency_edges(frame, outcomes(frame)).collect()
    return {Edge(row["source"], row["target"], row["kind"]) for row in rows}


def test_spark_draws_exactly_the_reference_s_edges(spark: SparkSession) -> None:
    """Each plant alone, then every plant in one history (their transactions renamed apart by topic)."""
    together = HistoryBuilder()
    for plant in (write_cycle, circular_flow, read_skew, write_skew):
        alone = HistoryBuilder()
        plant(alone)
        assert spark_edges(alone, spark) == reference_edges(alone.pandas()), plant.__name__
        for event in alone.events:  # each plant in a topic of its own, its transactions named apart
            key = f"{plant.__name__}:{event.key}" if event.key else None
            together.add(replace(event, key=key, topic=plant.__name__ if event.topic else None))
    assert spark_edges(together, spark) == reference_edges(together.pandas())
    assert len(reference_edges(together.pandas())) == 14
