"""Cycles in a dependency graph between transactions, classified as Adya's phenomena (issue 49), in pure
Python: the graph's edges are built at scale by Spark, and what is left to search is small, since a history
without anomalies has no cycle at all and every cycle lies inside one strongly connected component.

The edges are Jepsen's Kafka checker's (`jepsen.tests.kafka`, after Elle): `ww` (T1 wrote a partition's
record just before T2's next one, in offset order), `wr` (T2's last read of a partition returned T1's
record) and `rw` (T1's last read of a partition stopped before T2's next record there). A cycle is
classified by the edges it takes:

- `wr-cycle`: `wr` edges only (each transaction read the next one's record), the one class read_committed
  rules out;
- `G0` (write cycle): `ww` edges only;
- `G1c` (circular information flow): `ww` and `wr` edges, at least one of each;
- `G-single` (read skew): exactly one `rw` edge, the rest `ww` or `wr`;
- `G2` (anti-dependency cycle): more than one `rw` edge.

Each class has two variants, as Elle's: a cycle that takes one producer's own order of its transactions
(`process` edges: it committed T1, then began T2) is `G0-process` and so on, and one that takes real time
(`realtime`: T1's commit was acknowledged before T2 began, whoever ran them) is `G0-realtime` and so on.
Those orders only ever point forward in time, so a cycle needs a dependency to come back, and the graph
gets them only between transactions that can lie on a cycle (`kchaos.checkers.anomalies.time_edges`).

The search: the components of the whole graph (Tarjan's algorithm, iterative so a long chain cannot
overflow Python's stack), then inside each one of more than one transaction every class it holds, each
once, as Elle reports each anomaly it finds (a component with a stale read and a write cycle holds both,
and reporting only one would hide the other). A class is sought through its kind of edge (`_SHAPES`): the
shortest path back from the edge's target to its source over the class's kinds, taking the kinds it must
(a breadth-first search over each transaction and the kinds taken so far), through the first `TRIES`
edges that the components of those kinds alone leave on a cycle, in name order: a class a component holds
only through edges past those is missed, and none is ever reported that the component does not hold.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from kchaos.checkers.rules.anomaly_names import (
    BASE_CYCLE_CLASSES,
    G0,
    G1C,
    G2,
    G_SINGLE,
    PROCESS,
    PROCESS_VARIANT,
    REALTIME,
    REALTIME_VARIANT,
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
    adjacency: dict[str, list[Edge]], start: str, goal: str, kinds: frozenset[str], needs: tuple[str, ...]
) -> list[Edge] | None:
    """The shortest path from `start` to `goal` over edges of `kinds` that takes at least one edge of each
    kind in `needs` (breadth first over each transaction with the needs met so far), or None. It may pass
    a transaction twice, with different needs met: the caller keeps only simple paths."""
    full = (1 << len(needs)) - 1
    came: dict[tuple[str, int], tuple[tuple[str, int], Edge] | None] = {(start, 0): None}
    queue = deque([(start, 0)])
    while queue:
        state = queue.popleft()
        for edge in adjacency.get(state[0], ()):
            if edge.kind not in kinds:
                continue
            met = state[1] | sum(1 << i for i, kind in enumerate(needs) if kind == edge.kind)
            reached = (edge.target, met)
            if reached in came:
                continue
            came[reached] = (state, edge)
            if reached == (goal, full):
                path: list[Edge] = []
                step = came[reached]
                while step is not None:
                    path.append(step[1])
                    step = came[step[0]]
                return path[::-1]
            queue.append(reached)
    return None


#: The most edges of one component tried for each class, each a search through the component: a
#: history's components are small unless it is full of anomalies, and one cycle is enough to name it.
TRIES = 64

#: Per base class: the kind of the edge a cycle of it is sought through, the kinds of the path back, and
#: the kinds that path must take (a `G1c` needs a `ww` beside its `wr`, a `G2` a second `rw`).
_SHAPES: dict[str, tuple[str, frozenset[str], tuple[str, ...]]] = {
    WR_CYCLE: (WR, frozenset({WR}), ()),
    G0: (WW, frozenset({WW}), ()),
    G1C: (WR, frozenset({WW, WR}), (WW,)),
    G_SINGLE: (RW, frozenset({WW, WR}), ()),
    G2: (RW, frozenset({WW, WR, RW}), (RW,)),
}
#: Per variant: the orders of time its cycles may take, and the one each must take.
_ORDERS: dict[str, tuple[frozenset[str], tuple[str, ...]]] = {
    "": (frozenset(), ()),
    PROCESS_VARIANT: (frozenset({PROCESS}), (PROCESS,)),
    REALTIME_VARIANT: (frozenset({PROCESS, REALTIME}), (REALTIME,)),
}


def _internal(edges: Sequence[Edge], kinds: frozenset[str]) -> dict[str, int]:
    """Each transaction in a cycle of `kinds` edges alone, with the number of its component of them."""
    return {
        node: number
        for number, component in enumerate(components([e for e in edges if e.kind in kinds]))
        for node in component
    }


def _one_of(
    base: str, variant: str, inside: Sequence[Edge], adjacency: dict[str, list[Edge]]
) -> Cycle | None:
    """A cycle of class `base + variant` among `inside`, the shortest through the first edge (in name order)
    of the first `TRIES` that can lie on one, or None."""
    kind, back, needs = _SHAPES[base]
    orders, order_needs = _ORDERS[variant]
    back, needs = back | orders, needs + order_needs
    closed = _internal(inside, back | {kind})
    held: dict[int, Counter[str]] = {}  # the kinds of edge inside each component of those kinds
    for e in inside:
        if e.kind in back | {kind} and closed.get(e.source, -1) == closed.get(e.target, -2):
            held.setdefault(closed[e.source], Counter())[e.kind] += 1
    # A component without the edges the path back needs, beside the one it goes through, holds none.
    wanted = Counter(needs) + Counter({kind: 1})
    able = {number for number, kinds in held.items() if all(kinds[k] >= n for k, n in wanted.items())}
    candidates = [
        e for e in inside
        if e.kind == kind and closed.get(e.source, -1) in able and closed[e.source] == closed.get(e.target)
    ]  # fmt: skip
    for edge in candidates[:TRIES]:
        path = _path(adjacency, edge.target, edge.source, back, needs)
        # A walk that meets its needs by going round twice is no cycle (a G-single twice is no G2).
        if path is not None and len({edge.source, *(step.source for step in path)}) == len(path) + 1:
            return Cycle(base + variant, (edge, *path))
    return None


def classify(component: Sequence[str], edges: Iterable[Edge]) -> list[Cycle]:
    """Every class of cycle inside `component` (a strongly connected component of the graph of `edges`),
    in `CYCLE_CLASSES` order, each with one cycle of it: the shortest through the first edge (in name
    order) that makes one."""
    members = set(component)
    inside = sorted(
        (e for e in edges if e.source in members and e.target in members),
        key=lambda e: (e.source, e.target, e.kind),
    )
    adjacency: dict[str, list[Edge]] = {}
    for edge in inside:
        adjacency.setdefault(edge.source, []).append(edge)
    found = (_one_of(base, variant, inside, adjacency) for base in BASE_CYCLE_CLASSES for variant in VARIANTS)
    return [cycle for cycle in found if cycle is not None]


def find_cycles(edges: Sequence[Edge]) -> list[Cycle]:
    """Per strongly connected component of the graph, one cycle of each class it holds."""
    return [cycle for component in components(edges) for cycle in classify(component, edges)]
