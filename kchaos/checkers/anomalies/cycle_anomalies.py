"""Dependency cycles between read-write transactions (issue 49, docs/anomalies.md): the dependency graph's
edges from Spark (`kchaos.checkers.passes.read_write.dependency_edges`), the search for cycles in them on the
driver (`kchaos.checkers.anomalies.cycle_search`), one occurrence per class a strongly connected component
holds, named by it. Checked with the other read-write transaction anomalies, on histories whose transactions
read (`kchaos.checkers.passes.read_write.transaction_reads`).

Only the edges that can lie on a cycle reach the driver (`cycle_edges`, pruned in Spark with the same
components and the same edges inside them as the whole graph), and the orders of time that the variants
close through are added there between their transactions alone (`kchaos.checkers.anomalies.time_edges`):
a million transactions have millions of dependency edges (bench/cycles.py), and real time would order
every pair of transactions that did not overlap.
"""

from __future__ import annotations

from collections.abc import Callable

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from kchaos.checkers.anomalies.cycle_search import Edge, find_cycles
from kchaos.checkers.anomalies.definition import Anomaly, Occurrences
from kchaos.checkers.anomalies.time_edges import Span, time_edges
from kchaos.checkers.passes.frames import HistoryViews
from kchaos.checkers.passes.history_passes import Passes
from kchaos.checkers.passes.read_write.dependency_edges import (
    cycle_edges,
    positioned_edges,
    transaction_spans,
)
from kchaos.checkers.rules.anomaly_names import CYCLE_CLASSES

#: One row per cycle found: `id` (its class and first transaction), `kind`, `transactions` in cycle order,
#: and `edges`, each `T1 ww T2`.
CYCLE_SCHEMA = "id string, kind string, transactions array<string>, edges array<string>"


def _search(views: HistoryViews, ends: DataFrame, reads: DataFrame) -> DataFrame:
    """The cycles of the history's dependency graph with the orders of time, as a small frame (see
    `CYCLE_SCHEMA`)."""
    spans = transaction_spans(views.history, ends).persist()  # read by the edges and by the spans kept
    positioned = positioned_edges(views.history, reads, spans).persist()  # read twice by `cycle_edges`
    try:
        edges = [Edge(r["source"], r["target"], r["kind"]) for r in cycle_edges(positioned).collect()]
        kept = views.history.sparkSession.createDataFrame(
            [(txn,) for txn in sorted({e.source for e in edges} | {e.target for e in edges})], "txn string"
        )
        on_cycles = [
            Span(r["txn"], r["process"] or "", r["began_ns"], r["committed_ns"])
            for r in spans.join(F.broadcast(kept), on="txn", how="inner").collect()
            if r["began_ns"] is not None and r["committed_ns"] is not None
        ]
    finally:
        positioned.unpersist()
        spans.unpersist()
    edges.extend(time_edges(sorted(on_cycles, key=lambda span: span.txn)))
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
    ends, reads = passes.outcomes(), passes.transaction_reads()
    return passes.cached("cycles", lambda views: _search(views, ends, reads))


def _of_class(kind: str) -> Callable[[Passes], list[Occurrences]]:
    def occurrences(passes: Passes) -> list[Occurrences]:
        return [Occurrences(cycles(passes).filter(F.col("kind") == kind), ("id",))]

    return occurrences


#: The cycle anomalies, in report order (`kchaos.checkers.rules.anomaly_names.CYCLE_CLASSES`).
CYCLE_ANOMALIES: dict[str, Anomaly] = {
    kind: Anomaly(kind, _of_class(kind), needs_transactions=True) for kind in CYCLE_CLASSES
}
