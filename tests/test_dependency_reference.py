"""The dependency graph's pandas reference (issue 49) on planted histories of read-write transactions: the
edges each plants, and the class of cycle the search gives them."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kchaos.checkers.anomalies.cycle_search import Edge, find_cycles
from kchaos.checkers.rules.anomaly_names import G0, G1C, G2, G_SINGLE, RW, WR, WW
from kchaos.model.events import TXN_ABORT, TXN_COMMIT
from tests.histories import HistoryBuilder
from tests.reference.dependencies import dependency_edges

P0, P1 = 0, 1


def txn(
    h: HistoryBuilder, name: str, ops: list[tuple[str, str, int, int]], end: str = TXN_COMMIT,
    process: str | None = None,
) -> None:  # fmt: skip
    """Transaction `name`: ("send" | "poll", value, partition, offset) steps, then `end`; by a producer
    process of its own unless `process` names one."""
    together(h, [(name, ops)], end, process)


def together(
    h: HistoryBuilder, txns: list[tuple[str, list[tuple[str, str, int, int]]]], end: str = TXN_COMMIT,
    process: str | None = None,
) -> None:  # fmt: skip
    """Transactions that overlap in time: each begins, then each takes its steps, then each ends, so none
    is ordered before another by real time (a plant of a dependency cycle alone)."""
    for name, _ in txns:
        h.txn_begin(name, process=process or f"process-{name}")
    for name, ops in txns:
        for op, value, partition, offset in ops:
            if op == "send":
                h.txn_send(name, value, offset, partition=partition, process=process or f"process-{name}")
            else:
                h.txn_poll(name, value, offset, partition=partition, process=process or f"process-{name}")
    for name, _ in txns:
        h.txn_end(end, name, process=process or f"process-{name}")


def write_cycle(h: HistoryBuilder) -> None:
    """T1 before T2 in partition 0, T2 before T1 in partition 1."""
    together(h, [("T1", [("send", "a", P0, 0), ("send", "b", P1, 1)]),
                 ("T2", [("send", "c", P0, 1), ("send", "d", P1, 0)])])  # fmt: skip


def circular_flow(h: HistoryBuilder) -> None:
    """T1 writes partition 0 before T2 does, and reads T2's record of partition 1."""
    together(h, [("T2", [("send", "c", P0, 1), ("send", "d", P1, 0)]),
                 ("T1", [("send", "a", P0, 0), ("poll", "d", P1, 0)])])  # fmt: skip


def read_skew(h: HistoryBuilder) -> None:
    """T1 read partition 0 up to W's record, before T2's; T2 wrote partition 1 before T1 did."""
    txn(h, "W", [("send", "w", P0, 0)])
    together(h, [("T2", [("send", "c", P0, 1), ("send", "d", P1, 0)]),
                 ("T1", [("poll", "w", P0, 0), ("send", "e", P1, 1)])])  # fmt: skip


def write_skew(h: HistoryBuilder) -> None:
    """Each read the other's partition before the other's write landed there."""
    txn(h, "W", [("send", "w0", P0, 0), ("send", "w1", P1, 0)])
    together(h, [("T1", [("poll", "w0", P0, 0), ("send", "e", P1, 1)]),
                 ("T2", [("poll", "w1", P1, 0), ("send", "c", P0, 1)])])  # fmt: skip


@pytest.mark.parametrize(
    ("plant", "edges", "cycle"),
    [
        (write_cycle, {Edge("T1", "T2", WW), Edge("T2", "T1", WW)}, G0),
        (circular_flow, {Edge("T1", "T2", WW), Edge("T2", "T1", WR)}, G1C),
        (
            read_skew,
            {Edge("W", "T2", WW), Edge("W", "T1", WR), Edge("T1", "T2", RW), Edge("T2", "T1", WW)},
            G_SINGLE,
        ),
        (
            write_skew,
            {
                Edge("W", "T2", WW), Edge("W", "T1", WW), Edge("W", "T1", WR), Edge("W", "T2", WR),
                Edge("T1", "T2", RW), Edge("T2", "T1", RW),
            },
            G2,
        ),
    ],
)  # fmt: skip
def test_each_planted_dependency_is_an_edge_and_its_cycle_is_classified(
    plant: object, edges: set[Edge], cycle: str
) -> None:
    h = HistoryBuilder()
    plant(h)  # type: ignore[operator]
    assert dependency_edges(h.pandas()) == edges
    assert [found.kind for found in find_cycles(sorted(edges, key=lambda e: (e.source, e.target)))] == [cycle]


def test_transactions_that_did_not_commit_and_plain_sends_order_nothing() -> None:
    h = HistoryBuilder()
    txn(h, "T1", [("send", "a", P0, 0)])
    h.send("plain", 1, partition=P0)
    txn(h, "X", [("send", "x", P0, 2)], end=TXN_ABORT)
    txn(h, "T2", [("send", "b", P0, 4), ("poll", "a", P0, 0)])
    # T1 then T2 in partition 0 (stepping over the plain record and the aborted one); T2 read T1's record.
    assert dependency_edges(h.pandas()) == {Edge("T1", "T2", WW), Edge("T1", "T2", WR)}
    assert find_cycles(sorted(dependency_edges(h.pandas()), key=lambda e: (e.source, e.target, e.kind))) == []


@given(st.integers(0, 2**32), st.integers(1, 30), st.integers(1, 3))
@settings(max_examples=60, deadline=None)
def test_a_serial_history_has_only_forward_edges_and_no_cycle(seed: int, count: int, partitions: int) -> None:
    """Transactions one after another, each reading (all of a partition, as far as it goes) and writing at
    random, some aborting: every edge points from an earlier committed transaction to a later one, and the
    search finds no cycle. No anomaly can be in a serial history, so any found would be the check's."""
    rng = random.Random(seed)
    logs: list[list[str]] = [[] for _ in range(partitions)]  # each partition's records, by offset
    h = HistoryBuilder()
    order: dict[str, int] = {}
    for n in range(count):
        name, ops = f"T{n}", []
        for step in range(rng.randint(1, 4)):
            partition = rng.randrange(partitions)
            log = logs[partition]
            if rng.random() < 0.5:
                value = f"{name}-{step}"
                ops.append(("send", value, partition, len(log)))
                log.append(value)
            elif log:
                start = rng.randrange(len(log))
                ops.extend(("poll", log[offset], partition, offset) for offset in range(start, len(log)))
        committed = rng.random() < 0.8
        if not committed:  # its records stay in the logs, as aborted records do, and order nothing
            ops = [op for op in ops if op[0] == "send"]
        txn(h, name, ops, end=TXN_COMMIT if committed else TXN_ABORT)
        order[name] = n
    edges = dependency_edges(h.pandas())
    assert all(order[edge.source] < order[edge.target] for edge in edges), edges
    assert find_cycles(sorted(edges, key=lambda e: (e.source, e.target, e.kind))) == []
