"""The orders of time between committed transactions (issue 49): a producer's order between its own
transactions, and real time's without the edges that follow from others, which still orders every pair
that one ended before the other began, and no other pair."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from kchaos.checkers.anomalies.cycle_search import Edge
from kchaos.checkers.anomalies.time_edges import Span, process_edges, realtime_edges
from kchaos.checkers.rules.anomaly_names import PROCESS, REALTIME


def test_a_producer_s_transactions_are_ordered_one_after_the_next() -> None:
    spans = [
        Span("a2", "p", 30, 40), Span("a1", "p", 10, 20), Span("b1", "q", 15, 35), Span("a3", "p", 50, 60),
        # Began before its predecessor's commit was acknowledged: no order is read into the two.
        Span("b2", "q", 30, 45),
    ]  # fmt: skip
    assert process_edges(spans) == [Edge("a1", "a2", PROCESS), Edge("a2", "a3", PROCESS)]


def test_real_time_leaves_out_what_follows_from_other_edges() -> None:
    """a ends before b and c begin, b ends before d begins; c overlaps d. a -> d follows through b."""
    spans = [Span("a", "p", 0, 10), Span("b", "q", 11, 20), Span("c", "r", 12, 40), Span("d", "s", 21, 30)]
    assert realtime_edges(spans) == [
        Edge("a", "b", REALTIME), Edge("a", "c", REALTIME), Edge("b", "d", REALTIME)
    ]  # fmt: skip


def test_an_end_at_the_instant_of_a_beginning_is_not_before_it() -> None:
    assert realtime_edges([Span("a", "p", 0, 10), Span("b", "q", 10, 20)]) == []


def _reaches(edges: list[Edge], names: list[str]) -> set[tuple[str, str]]:
    after: dict[str, set[str]] = {name: set() for name in names}
    for edge in edges:
        after[edge.source].add(edge.target)
    reach: set[tuple[str, str]] = set()
    for name in names:
        seen, todo = set(), list(after[name])
        while todo:
            node = todo.pop()
            if node not in seen:
                seen.add(node)
                todo.extend(after[node])
        reach.update((name, node) for node in seen)
    return reach


@settings(max_examples=80, deadline=None)
@given(st.integers(0, 2**32), st.integers(1, 40))
def test_real_time_orders_exactly_the_pairs_one_ended_before_the_other_began(seed: int, count: int) -> None:
    """What the edges reach is the whole order of real time, on random spans with ties."""
    rng = random.Random(seed)
    spans = []
    for n in range(count):
        began = rng.randrange(100)
        spans.append(Span(f"t{n}", f"p{n % 3}", began, began + rng.randrange(1, 30)))
    order = {(a.txn, b.txn) for a in spans for b in spans if a.committed_ns < b.began_ns}
    assert _reaches(realtime_edges(spans), [span.txn for span in spans]) == order
    assert {(e.source, e.target) for e in process_edges(spans)} <= order
