"""Cycles in a dependency graph between transactions, classified as Adya's phenomena (issue 49), in pure
Python: the graph's edges are built at scale by Spark, and what is left to search is small, since a history
without anomalies has no cycle at all and every cycle lies inside one strongly connected component.

The edges are Jepsen's Kafka checker's (`jepsen.tests.kafka`, after Elle): `ww` (T1 wrote a partition's
record just before T2's next one, in offset order), `wr` (T2's last read of a partition returned T1's
record) and `rw` (T1's last read of a partition stopped before T2's next record there). A cycle is
classified by the edges it needs, one per component:

- `wr-cycle`: `wr` edges only (each transaction read the next one's record), the one class read_committed
  rules out, so it is looked for first and never hidden behind another;
- `G0` (write cycle): `ww` edges only;
- `G1c` (circular information flow): `ww` and `wr` edges, at least one `wr`;
- `G-single` (read skew): exactly one `rw` edge, the rest `ww` or `wr`;
- `G2` (anti-dependency cycle): more than one `rw` edge.

Each class has two variants, as Elle's: a cycle that closes only through one producer's own order of its
transactions (`process` edges: it committed T1, then began T2) is `G0-process` and so on, and one that
closes only through real time (`realtime`: T1's commit was acknowledged before T2 began, whoever ran them)
is `G0-realtime` and so on. Those orders only ever point forward in time, so a cycle needs a dependency to
come back, and the graph gets them only between transactions that can lie on a cycle
(`kchaos.checkers.anomalies.time_edges`).

The search: the components of the whole graph (Tarjan's algorithm, iterative so a long chain cannot
overflow Python's stack), then inside each one of more than one transaction a cycle of reads if it holds
one (of the dependencies alone, else with a producer's order, else with real time's), else the weakest
class it holds, of the dependencies alone before either variant: `G0` and `G1c` exactly, from the
components of their edges alone, each a linear pass; `G-single` through one of its first `RW_TRIES` `rw`
edges (a breadth-first search each); else `G2`. Each is shown as the shortest cycle through the first edge
(in name order) that makes one.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from kchaos.checkers.rules.anomaly_names import (
    G0,
    G1C,
    G2,
    G_SINGLE,
    PROCESS,
    REALTIME,
    RW,
    VARIANTS,
    WR,
    WR_CYCLE,
    WW,
)


@dataclass(frozen=True)
class Edge:
    """T `source` must precede T `target`, for the reason `kind` names."""

    source: str
    target: str
    kind: str


@dataclass(frozen=True)
class Cycle:
    """One cycle: its class and its edges in order, the last one's target the first one's source."""

    kind: str
    edges: tuple[Edge, ...]

    @property
    def transactions(self) -> tuple[str, ...]:
        return tuple(edge.source for edge in self.edges)


def components(edges: Iterable[Edge]) -> list[list[str]]:
    """The strongly connected components of more than one transaction (Tarjan's algorithm, iterative),
    each sorted, in the order of their smallest member."""
    graph: dict[str, list[str]] = {}
    for edge in edges:
        graph.setdefault(edge.source, []).append(edge.target)
        graph.setdefault(edge.target, [])
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            node, child = work.pop()
            if child == 0:
                index[node] = low[node] = len(index)
                stack.append(node)
                on_stack.add(node)
            targets = graph[node]
            if child < len(targets):
                work.append((node, child + 1))
                target = targets[child]
                if target not in index:
                    work.append((target, 0))
                elif target in on_stack:
                    low[node] = min(low[node], index[target])
                continue
            if low[node] == index[node]:
                member = ""
                component = []
                while member != node:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                if len(component) > 1:
                    found.append(sorted(component))
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
    return sorted(found, key=lambda component: component[0])


def _path(
    adjacency: dict[str, list[Edge]], start: str, goal: str, kinds: frozenset[str]
) -> list[Edge] | None:
    """The shortest path from `start` to `goal` over edges of `kinds` (breadth first), or None."""
    came: dict[str, Edge | None] = {start: None}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        for edge in adjacency.get(node, ()):
            if edge.kind not in kinds or edge.target in came:
                continue
            came[edge.target] = edge
            if edge.target == goal:
                path: list[Edge] = []
                step: Edge | None = edge
                while step is not None:
                    path.append(step)
                    step = came[step.source]
                return path[::-1]
            queue.append(edge.target)
    return None


#: The most `rw` edges of one component tried for a `G-single` cycle, each a search through the component:
#: a history's components are small unless it is full of anomalies, and one found is enough to name it.
RW_TRIES = 64


def _through(adjacency: dict[str, list[Edge]], edge: Edge, kinds: frozenset[str]) -> list[Edge] | None:
    """The shortest cycle through `edge` whose other edges are of `kinds`, or None."""
    back = _path(adjacency, edge.target, edge.source, kinds)
    return None if back is None else [edge, *back]


def _internal(edges: Sequence[Edge], kinds: frozenset[str]) -> dict[str, int]:
    """Each transaction in a cycle of `kinds` edges alone, with the number of its component of them."""
    return {
        node: number
        for number, component in enumerate(components([e for e in edges if e.kind in kinds]))
        for node in component
    }


def _weakest(
    inside: Sequence[Edge], adjacency: dict[str, list[Edge]], base: frozenset[str], reads_only: bool
) -> tuple[str, list[Edge]] | None:
    """The weakest base class (`BASE_CYCLE_CLASSES`) of a cycle among `inside` whose order edges are of
    `base` (none, `process`, or both orders) with such a cycle through the first edge that makes one, or
    None. `reads_only`: look for a cycle of reads alone and nothing else."""

    def through(kind: str, kinds: frozenset[str]) -> list[Edge] | None:
        kinds = kinds | base
        closed = _internal(inside, kinds)
        for edge in inside:
            if edge.kind == kind and closed.get(edge.source, -1) == closed.get(edge.target, -2):
                return _through(adjacency, edge, kinds)
        return None

    if reads_only:
        found = through(WR, frozenset({WR}))
        return None if found is None else (WR_CYCLE, found)
    for name, kind, kinds in ((G0, WW, {WW}), (G1C, WR, {WW, WR})):
        found = through(kind, frozenset(kinds))
        if found is not None:
            return name, found
    for edge in [e for e in inside if e.kind == RW][:RW_TRIES]:
        single = _through(adjacency, edge, frozenset({WW, WR}) | base)
        if single is not None:
            return G_SINGLE, single
    found = through(RW, frozenset({WW, WR, RW}))
    return None if found is None else (G2, found)


#: Each variant's order edges, in the order they are tried: none, one producer's, then real time's.
_ORDERS = tuple(
    zip(VARIANTS, (frozenset(), frozenset({PROCESS}), frozenset({PROCESS, REALTIME})), strict=True)
)


def classify(component: Sequence[str], edges: Iterable[Edge]) -> Cycle:
    """The class of cycle inside `component` (a strongly connected component of the graph of `edges`)
    that is reported for it, with a cycle of it through the first edge (in name order) that makes one: a
    cycle of reads if it holds one (the classes read_committed rules out, so never hidden behind another:
    of the dependencies alone, else with a producer's order, else with real time's), else the weakest it
    holds, of the dependencies alone before their variants."""
    members = set(component)
    inside = sorted(
        (e for e in edges if e.source in members and e.target in members),
        key=lambda e: (e.source, e.target, e.kind),
    )
    adjacency: dict[str, list[Edge]] = {}
    for edge in inside:
        adjacency.setdefault(edge.source, []).append(edge)
    for reads_only in (True, False):
        for variant, orders in _ORDERS:
            found = _weakest(inside, adjacency, orders, reads_only)
            if found is not None:
                return Cycle(found[0] + variant, tuple(found[1]))
    raise AssertionError("every edge inside a strongly connected component lies on a cycle")


def find_cycles(edges: Sequence[Edge]) -> list[Cycle]:
    """One cycle per strongly connected component of the graph, of the weakest class it holds."""
    return [classify(component, edges) for component in components(edges)]
