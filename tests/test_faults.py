"""Rebuilding fault intervals from nemesis rows, and counting nodes down at once."""

from __future__ import annotations

from dataclasses import replace

from kchaos.checkers.faults import (
    CRASH_KINDS,
    FaultInterval,
    fault_intervals,
    fault_kinds,
    max_concurrent_crashed,
)
from tests.histories import HistoryBuilder


def nemesis_rows(h: HistoryBuilder) -> list[dict[str, object]]:
    return [row for row in h.rows if row["process"] == "nemesis"]


def test_start_and_stop_pair_by_key_and_an_unstopped_fault_stays_open() -> None:
    h = HistoryBuilder()
    h.fault("isolate-leader", "isolate-leader#1", "start", kind="partition", nodes=[1])
    h.fault("kill-leader", "kill-leader#1", "start", kind="crash", nodes=[2])
    h.fault("isolate-leader", "isolate-leader#1", "stop", kind="partition", nodes=[1])
    h.fault("pause-node", "pause-node#1", "stop", kind="pause", nodes=[3])  # heal of a fault never started
    faults = fault_intervals(nemesis_rows(h))
    assert [(f.key, f.kind, f.nodes, f.stop_index) for f in faults] == [
        ("isolate-leader#1", "partition", (1,), 2),
        ("kill-leader#1", "crash", (2,), None),
    ]
    assert faults[0].to_json()["stop_wall"] == h.rows[2]["wall_time"]
    assert fault_kinds(faults) == frozenset({"partition", "crash"})


def crash(key: str, nodes: tuple[int, ...], start: int, stop: int | None) -> FaultInterval:
    return FaultInterval(
        key, "kill", "crash", nodes, None, start, float(start), stop, None if stop is None else float(stop)
    )


def test_concurrent_crashes_count_distinct_nodes() -> None:
    assert max_concurrent_crashed([]) == 0
    sequential = [crash("a", (1,), 0, 1), crash("b", (2,), 2, 3), crash("c", (3,), 4, 5)]
    assert max_concurrent_crashed(sequential) == 1
    overlapping = [crash("a", (1,), 0, 10), crash("b", (2,), 2, 8), crash("c", (1, 3), 4, None)]
    assert max_concurrent_crashed(overlapping) == 3
    assert max_concurrent_crashed([crash("a", (1,), 0, 10), crash("b", (1,), 2, 5)]) == 1


def test_only_the_tables_crash_kinds_count_nodes_down() -> None:
    """Stopping, pausing or cutting off every node is not a crash: no node loses what it held in memory. A
    full disk is: Kafka halts a broker whose last log dir failed, so it restarts from what reached its
    files; so is a replaced disk, whose broker is killed and restarts from nothing."""
    assert {"crash", "disk-full", "disk-replaced"} == CRASH_KINDS
    stopped = [replace(crash("a", (1, 2, 3), 0, 10), kind=kind) for kind in ("stop", "pause", "partition")]
    assert max_concurrent_crashed(stopped) == 0
