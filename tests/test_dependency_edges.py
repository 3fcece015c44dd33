"""The dependency graph's edges on Spark (issue 49) are exactly the pandas reference's, on every planted
history of tests.test_dependency_reference and on all of them in one history."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from pyspark.sql import SparkSession

from kchaos.checkers.anomalies.cycle_search import Edge
from kchaos.checkers.anomalies.findings import find_anomalies
from kchaos.checkers.passes.dependency_edges import dependency_edges
from kchaos.checkers.passes.transaction_passes import outcomes
from kchaos.checkers.results import check_run
from kchaos.checkers.rules.anomaly_names import CYCLE_CLASSES, G0, G1C, G2, G_SINGLE, WR_CYCLE
from kchaos.model.events import READ_COMMITTED
from tests.histories import HistoryBuilder
from tests.reference.dependencies import dependency_edges as reference_edges
from tests.test_dependency_reference import P0, P1, circular_flow, read_skew, txn, write_cycle, write_skew
from tests.test_report import make_run


def planted_together(plants: tuple[Callable[[HistoryBuilder], None], ...]) -> HistoryBuilder:
    """Every plant in one history, each in a topic of its own with its transactions and values named
    apart (a value is unique to one send across a history)."""
    together = HistoryBuilder()
    for plant in plants:
        alone = HistoryBuilder()
        plant(alone)
        for event in alone.events:
            named = plant.__name__
            together.add(
                replace(
                    event, key=f"{named}:{event.key}" if event.key else None,
                    value=f"{named}:{event.value}" if event.value else None,
                    topic=named if event.topic else None,
                )
            )  # fmt: skip
    return together


def spark_edges(h: HistoryBuilder, spark: SparkSession) -> set[Edge]:
    frame = h.frame(spark)
    rows = dependency_edges(frame, outcomes(frame)).collect()
    return {Edge(row["source"], row["target"], row["kind"]) for row in rows}


def test_spark_draws_exactly_the_reference_s_edges(spark: SparkSession) -> None:
    """Each plant alone, then every plant in one history (their transactions renamed apart by topic)."""
    plants = (write_cycle, circular_flow, read_skew, write_skew)
    for plant in plants:
        alone = HistoryBuilder()
        plant(alone)
        assert spark_edges(alone, spark) == reference_edges(alone.pandas()), plant.__name__
    together = planted_together(plants)
    assert spark_edges(together, spark) == reference_edges(together.pandas())
    assert len(reference_edges(together.pandas())) == 14


def read_cycle(h: HistoryBuilder) -> None:
    """Each of two transactions read the other's record: impossible at read_committed."""
    txn(h, "T1", [("send", "a", P0, 0), ("poll", "b", P1, 0)])
    txn(h, "T2", [("send", "b", P1, 0), ("poll", "a", P0, 0)])


def test_each_planted_cycle_is_one_occurrence_of_its_class_and_judged(
    tmp_path: Path, spark: SparkSession
) -> None:
    """All plants in one history, a topic each: one cycle of each class, and the run's verdict a
    violation for the cycle of reads alone, the others permitted."""
    h = planted_together((write_cycle, circular_flow, read_skew, write_skew, read_cycle))
    h.assign("process-T1", [0, 1], isolation=READ_COMMITTED)
    findings = find_anomalies(h.frame(spark), rw_transactions=True)
    assert {kind: findings[kind].count for kind in CYCLE_CLASSES} == dict.fromkeys(CYCLE_CLASSES, 1)
    (g0,) = findings[G0].examples
    assert set(g0["transactions"]) == {"write_cycle:T1", "write_cycle:T2"}
    results = check_run(make_run(tmp_path, h, workload="txn", partitions=2))
    verdicts = {kind: results["anomalies"][kind]["verdict"] for kind in CYCLE_CLASSES}
    assert verdicts == {WR_CYCLE: "violation", G0: "permitted", G1C: "permitted", G_SINGLE: "permitted",
                        G2: "permitted"}  # fmt: skip
    assert results["anomalies"][WR_CYCLE]["rule_id"] == "read-committed-reads-follow-commits"
