"""Dependency cycles between read-write transactions (issue 49, docs/anomalies.md): the dependency graph's
edges from Spark (`kchaos.checkers.passes.dependency_edges`), the search for cycles in them on the driver
(`kchaos.checkers.anomalies.cycle_search`), one occurrence per strongly connected component, named by its
class. Checked with the other read-write transaction anomalies, on histories whose transactions polled.

Only the edges that can lie on a cycle reach the driver (`cycle_edges`, pruned in Spark with the same
components and the same edges inside them as the whole graph): collecting every edge of a million
transactions, some five million, took the driver minutes and gigabytes (bench/cycles.py).
"""

from __future__ import annotations

from collections.abc import Callable

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from kchaos.checkers.anomalies.cycle_search import Edge, find_cycles
from kchaos.checkers.anomalies.definition import Anomaly, Occurrences
from kchaos.checkers.passes.dependency_edges import cycle_edges, positioned_edges
from kchaos.checkers.passes.frames import HistoryViews
from kchaos.checkers.passes.history_passes import Passes
from kchaos.checkers.rules.anomaly_names import CYCLE_CLASSES

#: One row per cycle found: `id` (its class and first transaction), `kind`, `transactions` in cycle order,
#: and `edges`, each `T1 ww T2`.
CYCLE_SCHEMA = "id string, kind string, transactions array<string>, edges array<string>"


def _search(views: HistoryViews, ends: DataFrame) -> DataFrame:
    """The cycles of the history's dependency graph, as a small frame (see `CYCLE_SCHEMA`)."""
    positioned = positioned_edges(views.history, ends).persist()  # read twice by `cycle_edges`
    try:
        edges = [Edge(r["source"], r["target"], r["kind"]) for r in cycle_edges(positioned).collect()]
    finally:
        positioned.unpersist()
    rows = [
        (
            f"{cycle.kind}:{cycle.transactions[0]}",
            cycle.kind,
            list(cycle.transactions),
            [f"{edge.source} {edge.kind} {edge.target}" for edge in cycle.edges],
        )
        for cycle in find_cycles(sorted(edges, key=lambda e: (e.source, e.target, e.kind)))
    ]
    return views.history.sparkSession.createDataFrame(rows, schema=CYCLE_SCHEMA)


def cycles(passes: Passes) -> DataFrame:
    """Every cycle found, searched once per check."""
    ends = passes.outcomes()
    return passes.cached("cycles", lambda views: _search(views, ends))


def _of_class(kind: str) -> Callable[[Passes], list[Occurrences]]:
    def occurrences(passes: Passes) -> list[Occurrences]:
        return [Occurrences(cycles(passes).filter(F.col("kind") == kind), ("id",))]

    return occurrences


#: The cycle anomalies, in report order (`kchaos.checkers.rules.anomaly_names.CYCLE_CLASSES`).
CYCLE_ANOMALIES: dict[str, Anomaly] = {
    kind: Anomaly(kind, _of_class(kind), needs_transactions=True) for kind in CYCLE_CLASSES
}
