"""A dependency cycle's story (`wr-cycle`, `G0`, `G1c`, `G-single`, `G2` and their variants; issue 49):
each transaction of the cycle, and each edge with the rows of the history that make it.

An example names its transactions and its edges (`A ww B`), which says *that* no serial order fits them,
not why. The story gives each edge its evidence, by the definitions the check drew the edges with
(`kchaos.checkers.passes.read_write.dependency_edges`):
- `A ww B`: in a partition, B's record is the next committed transaction's record after A's;
- `A wr B`: B's last read of a partition returned A's record;
- `A rw B`: A's last read of a partition stopped before B's record, the next committed one there;
- `A process B`, `A realtime B` (a variant's orders of time, `kchaos.checkers.anomalies.time_edges`): A's
  commit was acknowledged before B began, by one producer or by any.
Each edge says one transaction must come before the next, and the last edge brings the cycle back to its
first transaction: that is the contradiction.

Pure functions over rows, as the transaction's story (`kchaos.checkers.stories.transaction_story`);
`load_cycle` is the one place that reads the run directory.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from kchaos.checkers.rules.anomaly_names import PROCESS, REALTIME, RW, WR, WW
from kchaos.checkers.stories.evidence import run_started_at
from kchaos.model.events import OK, TXN_BEGIN, TXN_COMMIT, TXN_POLL, TXN_SEND
from kchaos.model.history_files import history_path
from kchaos.model.run_files import RunDir

#: What each edge kind says of its two transactions.
EDGE_WORDS = {
    WW: "wrote before",
    WR: "was read by",
    RW: "read before the write of",
    PROCESS: "committed, then its producer began",
    REALTIME: "had its commit acknowledged before the start of",
}


@dataclass(frozen=True)
class Cycle:
    """A cycle an anomaly's example names: its id, class, transactions and edges (source, kind, target),
    and the anomaly and verdict that name it."""

    id: str
    kind: str
    transactions: tuple[str, ...]
    edges: tuple[tuple[str, str, str], ...]
    anomaly: str | None = None

    @classmethod
    def of(cls, example: Mapping[str, Any], anomaly: str | None = None) -> Cycle | None:
        """The cycle a cycle anomaly's example names; None for an example of another shape."""
        ident, kind, txns, edges = (example.get(k) for k in ("id", "kind", "transactions", "edges"))
        if not (isinstance(ident, str) and isinstance(kind, str) and isinstance(txns, list)):
            return None
        parsed = [tuple(edge.split(" ")) for edge in edges or [] if isinstance(edge, str)]
        if not parsed or any(len(edge) != 3 or edge[1] not in EDGE_WORDS for edge in parsed):
            return None
        return cls(ident, kind, tuple(str(t) for t in txns), tuple(parsed), anomaly)  # type: ignore[arg-type]


@dataclass(frozen=True)
class CycleEvidence:
    """What the history holds about a cycle: its transactions' begin and commit rows and their reads, and
    every committed write in the partitions they wrote or read, in offset order."""

    started_at: float
    own_rows: dict[str, list[dict[str, Any]]]
    #: (topic, partition) -> the committed transactions' acknowledged writes there, by offset.
    writes: dict[tuple[str, int], list[dict[str, Any]]]


def load_cycle(run_dir: Path, cycle: Cycle) -> CycleEvidence:
    """Reads what `run_dir`'s history holds about `cycle`."""
    table = pq.read_table(history_path(run_dir))
    ok = pc.equal(table["type"], OK)
    mine = pc.is_in(table["key"], value_set=pa.array(cycle.transactions, table["key"].type))
    kinds = pa.array([TXN_BEGIN, TXN_COMMIT, TXN_POLL, TXN_SEND], table["f"].type)
    own = table.filter(pc.and_kleene(pc.and_kleene(ok, mine), pc.is_in(table["f"], value_set=kinds)))
    own_rows: dict[str, list[dict[str, Any]]] = {}
    for row in own.to_pylist():
        own_rows.setdefault(row["key"], []).append(row)
    places = {
        (row["topic"], row["partition"])
        for rows in own_rows.values()
        for row in rows
        if row["offset"] is not None
    }
    commits = table.filter(pc.and_kleene(ok, pc.equal(table["f"], TXN_COMMIT)))
    committed = set(commits["key"].to_pylist())
    sends = table.filter(pc.and_kleene(ok, pc.equal(table["f"], TXN_SEND)))
    writes: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for row in sends.select(["topic", "partition", "offset", "key", "value", "wall_time"]).to_pylist():
        place = (row["topic"], row["partition"])
        if place in places and row["key"] in committed and row["offset"] is not None:
            writes.setdefault(place, []).append(row)
    for rows in writes.values():
        rows.sort(key=lambda row: row["offset"])
    started = run_started_at(RunDir(run_dir), pc.min(table["wall_time"]).as_py())
    return CycleEvidence(started, own_rows, writes)


def tell_cycle(evidence: CycleEvidence, cycle: Cycle) -> list[str]:
    """The cycle's story: a line saying what it is, each transaction's span, then each edge and its rows."""
    at = _clock(evidence.started_at)
    lines = [
        f"{cycle.kind}: a cycle of {len(cycle.transactions)} committed transactions"
        + (f" ({cycle.anomaly})" if cycle.anomaly else "")
    ]
    for txn in cycle.transactions:
        rows = evidence.own_rows.get(txn, [])
        begun = [at(row) for row in rows if row["f"] == TXN_BEGIN]
        ended = [at(row) for row in rows if row["f"] == TXN_COMMIT]
        process = rows[0]["process"] if rows else "?"
        span = f"begun {begun[0]}" if begun else "begin not recorded"
        lines.append(f"  {txn} ({process}): {span}, commit acknowledged {ended[0] if ended else '?'}")
    lines.append("each edge, and what it rests on:")
    for source, kind, target in cycle.edges:
        lines.append(f"  {source} {EDGE_WORDS[kind]} {target} ({kind}):")
        lines.extend(f"      {line}" for line in _why(evidence, source, kind, target, at))
    first = cycle.edges[0][0]
    timed = any(kind in (PROCESS, REALTIME) for _, kind, _ in cycle.edges)
    lines.append(
        f"  so each transaction must come before the next, and the last before {first}: "
        "no order of these transactions gives every read and write its place"
        + (" and keeps the order in which they ran" if timed else "")
    )
    return lines


def _why(
    evidence: CycleEvidence, source: str, kind: str, target: str, at: Callable[[Mapping[str, Any]], str]
) -> list[str]:
    """The rows that make one edge, one line per partition that does (at most three)."""
    if kind in (PROCESS, REALTIME):
        return _in_time(evidence, source, target, at)
    found: list[str] = []
    for (topic, partition), writes in sorted(evidence.writes.items()):
        where = f"{topic}/{partition}"
        if kind == WW:
            for before, after in pairwise(writes):
                if before["key"] == source and after["key"] == target:
                    found.append(
                        f"{where}: {source}'s record at offset {before['offset']} ({before['value']}), then "
                        f"{target}'s at offset {after['offset']} ({after['value']}), the next committed one"
                    )
            continue
        reader = target if kind == WR else source
        last = _last_read(evidence.own_rows.get(reader, []), topic, partition)
        if last is None:
            continue
        if kind == WR:
            writer = next((w for w in writes if w["offset"] == last["offset"]), None)
            if writer is not None and writer["key"] == source:
                found.append(
                    f"{where}: {target}'s last read there returned {source}'s record at offset "
                    f"{last['offset']} ({last['value']}), {at(last)}"
                )
        else:
            following = next((w for w in writes if w["offset"] > last["offset"]), None)
            if following is not None and following["key"] == target:
                found.append(
                    f"{where}: {source}'s last read there stopped at offset {last['offset']}, {at(last)}; "
                    f"the next committed record there is {target}'s, offset {following['offset']} "
                    f"({following['value']})"
                )
    return found[:3] or ["the history holds no rows that make this edge"]


def _in_time(
    evidence: CycleEvidence, source: str, target: str, at: Callable[[Mapping[str, Any]], str]
) -> list[str]:
    """An order of time's rows: the earlier transaction's acknowledged commit and the later one's first
    row, each with its stamp."""
    committed = [r for r in evidence.own_rows.get(source, []) if r["f"] == TXN_COMMIT]
    began = min(evidence.own_rows.get(target, []), key=lambda row: row["time_ns"], default=None)
    if not committed or began is None:
        return ["the history holds no rows that make this edge"]
    commit = max(committed, key=lambda row: row["time_ns"])
    return [
        f"{source}'s commit acknowledged {at(commit)} ({commit['process']}); {target} began {at(began)} "
        f"({began['process']}), {(began['time_ns'] - commit['time_ns']) / 1e6:.1f} ms later"
    ]


def _last_read(rows: Sequence[dict[str, Any]], topic: str, partition: int) -> dict[str, Any] | None:
    reads = [r for r in rows if r["f"] == TXN_POLL and r["topic"] == topic and r["partition"] == partition]
    return max(reads, key=lambda row: row["offset"], default=None)


def _clock(started_at: float) -> Callable[[Mapping[str, Any]], str]:
    """A row's time as the stories write it: seconds since the run started."""

    def at(row: Mapping[str, Any]) -> str:
        return f"+{row['wall_time'] - started_at:.2f}s"

    return at
