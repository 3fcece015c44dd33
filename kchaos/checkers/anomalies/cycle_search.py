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

The search: the components of the whole graph (Tarjan's algorithm, iterative so a long chain cannot
overflow Python's stack), then inside each one of more than one transaction the weakest class it holds:
`G0` and `G1c` exactly, from the components of its `ww` (and `wr`) edges alone, each a linear pass;
`G-single` through one of its first `RW_TRIES` `rw` edges (a breadth-first search each); else `G2`. Each
is shown as the shortest cycle through the first edge (in name order) that makes one.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from kchaos.checkers.rules.anomaly_names import G0, G1C, G2, G_SINGLE, RW, WR, WR_CYCLE, WW


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


def classify(component: Sequence[str], edges: Iterable[Edge]) -> Cycle:
    """The class of cycle inside `component` (a strongly connected component of the graph of `edges`)
    that is reported for it, with a cycle of it through the first edge (in name order) that makes one: a
    `wr-cycle` if it holds one (the one class read_committed rules out, so never hidden behind another),
    else the weakest it holds."""
    members = set(component)
    inside = sorted(
        (e for e in edges if e.source in members and e.target in members),
        key=lambda e: (e.source, e.target, e.kind),
    )
    adjacency: dict[str, list[Edge]] = {}
    for edge in inside:
        adjacency.setdefault(edge.source, []).append(edge)
    reads = frozenset({WR})
    wr = _internal(inside, reads)
    for edge in inside:
        if edge.kind == WR and wr.get(edge.source, -1) == wr.get(edge.target, -2):
            return Cycle(WR_CYCLE, tuple(_through(adjacency, edge, reads) or ()))
    writes = frozenset({WW})
    ww = _internal(inside, writes)
    for edge in inside:
        if edge.kind == WW and ww.get(edge.source, -1) == ww.get(edge.target, -2):
            return Cycle(G0, tuple(_through(adjacency, edge, writes) or ()))
    flow = frozenset({WW, WR})
    ww_wr = _internal(inside, flow)
    for edge in inside:
        if edge.kind == WR and ww_wr.get(edge.source, -1) == ww_wr.get(edge.target, -2):
            return Cycle(G1C, tuple(_through(adjacency, edge, flow) or ()))
    for edge in [e for e in inside if e.kind == RW][:RW_TRIES]:
        single = _through(adjacency, edge, flow)
        if single is not None:
            return Cycle(G_SINGLE, tuple(single))
    first = next(e for e in inside if e.kind == RW)  # a cycle without one was found above
    anti = _through(adjacency, first, frozenset({WW, WR, RW}))
    assert anti is not None, "every edge inside a strongly connected component lies on a cycle"
    return Cycle(G2, tuple(anti))


def find_cycles(edges: Sequence[Edge]) -> list[Cycle]:
    """One cycle per strongly connected component of the graph, of the weakest class it holds."""
    return [classify(component, edges) for component in components(edges)]
