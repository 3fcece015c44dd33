"""The dependency graph's edges on Spark (issue 49) are exactly the pandas reference's on every planted
history of tests.test_dependency_reference together in one (one Spark check: each costs seconds of CI), and
their cycles are found once each and judged."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from pyspark.sql import SparkSession

from kchaos.checkers.anomalies.cycle_search import Edge
from kchaos.checkers.anomalies.findings import find_anomalies
from kchaos.checkers.passes.read_write.dependency_edges import dependency_edges
from kchaos.checkers.passes.transaction_passes import outcomes
from kchaos.checkers.results import check_run
from kchaos.checkers.rules.anomaly_names import (
    BASE_CYCLE_CLASSES,
    CYCLE_CLASSES,
    G0,
    G_SINGLE,
    PROCESS_VARIANT,
    READ_CYCLE_CLASSES,
    REALTIME_VARIANT,
    WR_CYCLE,
)
from kchaos.checkers.stories.teller import choose, subject_named, tell_all
from kchaos.model.events import READ_COMMITTED
from tests.histories import HistoryBuilder
from tests.reference.dependencies import dependency_edges as reference_edges
from tests.test_dependency_reference import (
    P0,
    P1,
    circular_flow,
    read_skew,
    together,
    txn,
    write_cycle,
    write_skew,
)
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


def read_cycle(h: HistoryBuilder) -> None:
    """Each of two transactions read the other's record: impossible at read_committed."""
    together(h, [("T1", [("send", "a", P0, 0), ("poll", "b", P1, 0)]),
                 ("T2", [("send", "b", P1, 0), ("poll", "a", P0, 0)])])  # fmt: skip


def stale_read(h: HistoryBuilder) -> None:
    """T2, begun after T1's commit was acknowledged, read partition 0 only as far as W's record, before
    T1's: a cycle through real time (`G-single-realtime`)."""
    txn(h, "W", [("send", "w", P0, 0)])
    txn(h, "T1", [("send", "a", P0, 1)])
    txn(h, "T2", [("poll", "w", P0, 0)])


def own_stale_read(h: HistoryBuilder) -> None:
    """`stale_read` with T1 and T2 by one producer: `G-single-process`."""
    txn(h, "W", [("send", "w", P0, 0)])
    txn(h, "T1", [("send", "a", P0, 1)], process="producer-P")
    txn(h, "T2", [("poll", "w", P0, 0)], process="producer-P")


def future_read(h: HistoryBuilder) -> None:
    """T1 read the record of T2, which began after T1's commit was acknowledged: `wr-cycle-realtime`,
    ruled out at read_committed."""
    txn(h, "T1", [("poll", "f", P0, 0)])
    txn(h, "T2", [("send", "f", P0, 0)])


#: The variants planted: a stale read through real time, one through a producer's own order (which is real
#: time's too), a read of a transaction begun after the reader committed; no other variant is planted.
VARIANTS_PLANTED = {
    G_SINGLE + REALTIME_VARIANT: 2,
    G_SINGLE + PROCESS_VARIANT: 1,
    WR_CYCLE + REALTIME_VARIANT: 1,
}


def test_each_planted_cycle_is_one_occurrence_of_its_class_and_judged(
    tmp_path: Path, spark: SparkSession
) -> None:
    """All plants in one history, a topic each: one cycle of each class, and the run's verdict a
    violation for the cycle of reads alone, the others permitted."""
    h = planted_together(
        (
            write_cycle,
            circular_flow,
            read_skew,
            write_skew,
            read_cycle,
            stale_read,
            own_stale_read,
            future_read,
        )
    )
    assert spark_edges(h, spark) == reference_edges(h.pandas())
    h.assign("process-T1", [0, 1], isolation=READ_COMMITTED)
    findings = find_anomalies(h.frame(spark), rw_transactions=True)
    base = dict.fromkeys(BASE_CYCLE_CLASSES, 1)
    assert {kind: findings[kind].count for kind in CYCLE_CLASSES} == {
        kind: base.get(kind, VARIANTS_PLANTED.get(kind, 0)) for kind in CYCLE_CLASSES
    }
    (late,) = findings[WR_CYCLE + REALTIME_VARIANT].examples
    assert late["edges"] == ["future_read:T2 wr future_read:T1", "future_read:T1 realtime future_read:T2"]
    (g0,) = findings[G0].examples
    assert set(g0["transactions"]) == {"write_cycle:T1", "write_cycle:T2"}
    run_dir = make_run(tmp_path, h, workload="txn", partitions=2)
    results = check_run(run_dir)
    verdicts = {kind: results["anomalies"][kind]["verdict"] for kind in (*base, *VARIANTS_PLANTED)}
    assert verdicts == {
        kind: "violation" if kind in READ_CYCLE_CLASSES else "permitted"
        for kind in (*base, *VARIANTS_PLANTED)
    }
    for kind in (WR_CYCLE, WR_CYCLE + REALTIME_VARIANT):
        assert results["anomalies"][kind]["rule_id"] == "read-committed-reads-follow-commits"
    # The violations' stories give each edge the rows it rests on; a permitted cycle is told when asked.
    chosen = choose(results, 5)
    assert [subject.id for subject in chosen.subjects] == [
        "wr-cycle:read_cycle:T1", "wr-cycle-realtime:future_read:T2"
    ]  # fmt: skip
    (_, story), (_, late_story) = tell_all(run_dir, chosen.subjects)
    assert late_story[0] == (
        "wr-cycle-realtime: a cycle of 2 committed transactions (wr-cycle-realtime: violation)"
    )
    assert "  future_read:T1 had its commit acknowledged before the start of future_read:T2 (realtime):" in (
        late_story
    )
    assert late_story[-1].endswith("and keeps the order in which they ran")
    assert story[0] == "wr-cycle: a cycle of 2 committed transactions (wr-cycle: violation)"
    assert "  read_cycle:T1 was read by read_cycle:T2 (wr):" in story
    assert (
        "      read_cycle/0: read_cycle:T2's last read there returned read_cycle:T1's record at offset 0 "
        "(read_cycle:a)" in "\n".join(story)
    )
    g0_id = findings[G0].examples[0]["id"]
    told = tell_all(run_dir, [subject_named(run_dir, g0_id, results)])[0][1]
    assert told[0] == "G0: a cycle of 2 committed transactions (G0: permitted)"
    assert sum("the next committed one" in line for line in told) == 2
