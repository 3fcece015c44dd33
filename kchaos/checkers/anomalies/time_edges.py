"""The orders of time between committed transactions (issue 49), the edges that a cycle's process and
real-time variants close through (`kchaos.checkers.anomalies.cycle_search`), in pure Python.

Both are read off each transaction's span: when it began (its first row) and when its commit was
acknowledged, each stamped with the host's monotonic clock by whichever process recorded it
(`kchaos.model.stamped_rows`), so the spans of a worker's and the harness's transactions compare. A
transaction's commit took effect inside its span, so T1 `realtime` T2 (T1's commit acknowledged before T2
began) means T1 committed before T2 did; `process` is the same order between two transactions of one
producer, which is what a single application sees.

They are built only for the transactions that can lie on a cycle of dependencies (`cycle_edges`'s), and
that loses none: both orders are transitive, so a cycle through a transaction left out (one whose edges on
it are both orders of time) closes through the direct edge around it too. Real time is kept as Elle keeps
it, without the edges that follow from others (T1 before T3 needs no edge when T1 is before T2 and T2 before
T3): one edge from each of the transactions that ended last before another began, not from every one.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import pairwise

from kchaos.checkers.anomalies.cycle_search import Edge
from kchaos.checkers.rules.anomaly_names import PROCESS, REALTIME


@dataclass(frozen=True)
class Span:
    """A committed transaction, the producer `process` that ran it, and when it began and when its commit
    was acknowledged (host monotonic nanoseconds)."""

    txn: str
    process: str
    began_ns: int
    committed_ns: int


def process_edges(spans: Iterable[Span]) -> list[Edge]:
    """Between each producer's transactions in the order it began them, from each to the next it began
    after that one's commit was acknowledged (a producer runs one transaction at a time, so that is always
    the next one; the check keeps the rule from reading an order into two that overlapped)."""
    by_process: dict[str, list[Span]] = {}
    for span in spans:
        by_process.setdefault(span.process, []).append(span)
    edges: list[Edge] = []
    for own in by_process.values():
        own.sort(key=lambda span: (span.began_ns, span.txn))
        edges.extend(
            Edge(before.txn, after.txn, PROCESS)
            for before, after in pairwise(own)
            if before.committed_ns < after.began_ns
        )
    return edges


def realtime_edges(spans: Sequence[Span]) -> list[Edge]:
    """T1 `realtime` T2 wherever T1's commit was acknowledged before T2 began, less those that follow from
    others: walking the ends and beginnings in time, the transactions that ended and that no later-ended
    one has since followed are the frontier; each beginning takes an edge from every one of it, and each
    end replaces in it the ones its transaction followed. At one instant, beginnings come first: an end is
    only before what begins strictly after it."""
    BEGIN, END = 0, 1
    moments = sorted(
        [(span.began_ns, BEGIN, span.txn) for span in spans]
        + [(span.committed_ns, END, span.txn) for span in spans]
    )
    frontier: set[str] = set()
    followed: dict[str, set[str]] = {}
    edges: list[Edge] = []
    for _, what, txn in moments:
        if what == BEGIN:
            followed[txn] = set(frontier)
            edges.extend(Edge(before, txn, REALTIME) for before in sorted(frontier))
        else:
            frontier -= followed.get(txn, set())
            frontier.add(txn)
    return edges


def time_edges(spans: Sequence[Span]) -> list[Edge]:
    """Both orders' edges between `spans`' transactions."""
    return [*process_edges(spans), *realtime_edges(spans)]
