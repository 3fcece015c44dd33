"""The cycle search over a dependency graph (issue 49): planted graphs with known cycles of each class and
length, each found and classified, and nothing found in graphs without one."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kchaos.checkers.anomalies.cycle_search import Edge, components, find_cycles
from kchaos.checkers.rules.anomaly_names import (
    G0,
    G1C,
    G2,
    G_SINGLE,
    PROCESS,
    PROCESS_VARIANT,
    REALTIME,
    REALTIME_VARIANT,
    RW,
    WR,
    WR_CYCLE,
    WW,
)


def ring(kinds: list[str], prefix: str = "t") -> list[Edge]:
    """A cycle t0 -> t1 -> ... -> t0 whose i-th edge is of kinds[i]."""
    names = [f"{prefix}{i}" for i in range(len(kinds))]
    return [Edge(names[i], names[(i + 1) % len(names)], kind) for i, kind in enumerate(kinds)]


@pytest.mark.parametrize(
    ("kinds", "expected"),
    [
        ([WW, WW], G0),
        ([WW, WW, WW, WW, WW], G0),
        ([WW, WR], G1C),
        ([WR, WR, WR], WR_CYCLE),
        ([WR, WR], WR_CYCLE),
        ([RW, WW], G_SINGLE),
        ([WR, RW, WW, WW], G_SINGLE),
        ([RW, RW], G2),
        ([RW, WR, RW, WW], G2),
    ],
)
def test_a_planted_cycle_is_found_once_and_classified(kinds: list[str], expected: str) -> None:
    edges = ring(kinds)
    cycles = find_cycles(edges)
    assert [(cycle.kind, len(cycle.edges)) for cycle in cycles] == [(expected, len(kinds))]
    (cycle,) = cycles
    assert all(
        a.target == b.source for a, b in zip(cycle.edges, cycle.edges[1:] + cycle.edges[:1], strict=True)
    )


@pytest.mark.parametrize(
    ("kinds", "expected"),
    [
        ([WW, PROCESS], G0 + PROCESS_VARIANT),
        ([WW, WR, PROCESS], G1C + PROCESS_VARIANT),
        ([WR, PROCESS], WR_CYCLE + PROCESS_VARIANT),
        ([RW, PROCESS], G_SINGLE + PROCESS_VARIANT),
        ([RW, RW, PROCESS], G2 + PROCESS_VARIANT),
        ([WW, WW, REALTIME], G0 + REALTIME_VARIANT),
        ([WR, WW, REALTIME], G1C + REALTIME_VARIANT),
        ([WR, REALTIME, WR], WR_CYCLE + REALTIME_VARIANT),
        ([RW, REALTIME], G_SINGLE + REALTIME_VARIANT),
        ([RW, PROCESS, RW, REALTIME], G2 + REALTIME_VARIANT),
    ],
)
def test_a_cycle_through_an_order_of_time_is_its_class_s_variant(kinds: list[str], expected: str) -> None:
    """A cycle that closes only through a producer's order is the `-process` variant of the class its
    dependencies make, one that needs real time's the `-realtime` one."""
    (cycle,) = find_cycles(ring(kinds))
    assert (cycle.kind, len(cycle.edges)) == (expected, len(kinds))


def kinds_found(edges: list[Edge]) -> list[str]:
    """The classes found, each cycle checked to be a cycle of that class."""
    cycles = find_cycles(edges)
    for cycle in cycles:
        assert all(
            a.target == b.source for a, b in zip(cycle.edges, cycle.edges[1:] + cycle.edges[:1], strict=True)
        )
        assert class_of(cycle.edges) == cycle.kind, cycle
    return [cycle.kind for cycle in cycles]


def class_of(edges: tuple[Edge, ...]) -> str:
    """A cycle's class by its edges, as docs/anomalies.md defines them."""
    kinds = [edge.kind for edge in edges]
    data, rw = {kind for kind in kinds if kind in (WW, WR, RW)}, kinds.count(RW)
    base = (
        WR_CYCLE if data == {WR} else G0 if data == {WW} else G1C if not rw else G_SINGLE if rw == 1 else G2
    )
    return base + (REALTIME_VARIANT if REALTIME in kinds else PROCESS_VARIANT if PROCESS in kinds else "")


def test_every_class_a_component_holds_is_reported_once() -> None:
    """A G2 ring whose transactions also write in opposite orders: the write cycle, the read skew through
    one of the ring's `rw` edges and the ring itself."""
    edges = [*ring([RW, RW, RW]), Edge("t0", "t1", WW), Edge("t1", "t0", WW)]
    assert kinds_found(edges) == [G0, G_SINGLE, G2]


def test_a_cycle_of_reads_is_reported_beside_the_write_cycle_it_shares_transactions_with() -> None:
    edges = [*ring([WW, WW]), Edge("t0", "t1", WR), Edge("t1", "t0", WR)]
    assert kinds_found(edges) == [WR_CYCLE, G0, G1C]


def test_a_stale_read_beside_a_write_cycle_is_its_own_variant() -> None:
    """t1, begun after t0's commit was acknowledged, read before t0's write: a stale read that real time
    closes, reported beside the write cycle the two transactions also make."""
    edges = [*ring([WW, WW]), Edge("t1", "t0", RW), Edge("t0", "t1", REALTIME)]
    assert kinds_found(edges) == [G0, G0 + REALTIME_VARIANT, G_SINGLE, G_SINGLE + REALTIME_VARIANT]


def test_a_producer_s_order_is_a_process_variant_and_real_time_s_a_realtime_one() -> None:
    """The same stale read through a producer's order and through real time: both variants."""
    edges = [Edge("t1", "t0", RW), Edge("t0", "t1", PROCESS), Edge("t0", "t1", REALTIME)]
    assert kinds_found(edges) == [G_SINGLE + PROCESS_VARIANT, G_SINGLE + REALTIME_VARIANT]


def test_separate_components_are_separate_cycles_and_chains_are_none() -> None:
    edges = [*ring([WW, WW], "a"), *ring([RW, WR], "b"), Edge("a0", "b0", WW), Edge("c0", "c1", RW)]
    assert [cycle.kind for cycle in find_cycles(edges)] == [G0, G_SINGLE]
    assert components([Edge(f"t{i}", f"t{i + 1}", WW) for i in range(100_000)]) == []


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32), st.integers(2, 40))
def test_a_graph_ordered_by_one_serial_order_has_no_cycle(seed: int, size: int) -> None:
    """Edges that only ever point from an earlier transaction to a later one (a serial history) leave no
    cycle whatever their kinds."""
    rng = random.Random(seed)
    edges = [
        Edge(f"t{a:03}", f"t{b:03}", rng.choice([WW, WR, RW]))
        for a in range(size)
        for b in range(a + 1, size)
        if rng.random() < 0.2
    ]
    assert find_cycles(edges) == []


def test_a_deep_component_does_not_overflow_the_stack() -> None:
    edges = ring([WW] * 50_000)
    (cycle,) = find_cycles(edges)
    assert cycle.kind == G0 and len(cycle.edges) == 50_000
