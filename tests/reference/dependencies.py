"""The dependency graph between read-write transactions in plain pandas (issue 49): the reference the Spark
edges are to be tested against, written for reading, after Jepsen's Kafka checker (`jepsen.tests.kafka`).

A node is a transaction whose commit was acknowledged. Its edges, each from the transaction that must come
first:

- `ww`: per partition, the committed transactions' acknowledged records in offset order; each record's
  transaction follows the one of the record before it (records of one transaction in a row add nothing);
- `wr`: a transaction's last read of a partition (its highest `txn-poll` offset there) returned the record of
  another transaction, which therefore came first;
- `rw`: that last read stopped before the next committed transaction's record in the partition, whose
  writer therefore came after (the reader did not see it).

Records written outside transactions, and those of transactions that did not commit, order nothing: the
`ww` chain steps over them.
"""

from __future__ import annotations

import itertools

import pandas as pd

from kchaos.checkers.anomalies.cycle_search import Edge
from kchaos.checkers.rules.anomaly_names import RW, WR, WW
from kchaos.model.events import NEMESIS_PROCESS, OK, TXN_COMMIT, TXN_POLL, TXN_SEND
from tests.reference.frames import INTEGERS, STRINGS, TP, normalized


def committed_transactions(history: pd.DataFrame) -> set[str]:
    rows = history[(history["f"] == TXN_COMMIT) & (history["type"] == OK)]
    return {str(key) for key in rows["key"].dropna()}


def dependency_edges(history: pd.DataFrame) -> set[Edge]:
    """Every `ww`, `wr` and `rw` edge between two different committed transactions of `history`."""
    frame = normalized(history, (*STRINGS, "key"), INTEGERS)
    frame = frame[frame["process"] != NEMESIS_PROCESS]
    nodes = committed_transactions(frame)
    ok = frame["type"] == OK
    writes = frame[ok & (frame["f"] == TXN_SEND) & frame["key"].isin(nodes) & frame["offset"].notna()]
    reads = frame[ok & (frame["f"] == TXN_POLL) & frame["key"].isin(nodes) & frame["offset"].notna()]
    edges: set[Edge] = set()
    writer_at: dict[tuple[str, int, int], str] = {}
    order: dict[tuple[str, int], list[tuple[int, str]]] = {}
    for row in writes.itertuples():
        place = (str(row.topic), int(row.partition))
        writer_at[(*place, int(row.offset))] = str(row.key)
        order.setdefault(place, []).append((int(row.offset), str(row.key)))
    for records in order.values():
        records.sort()
        for (_, before), (_, after) in itertools.pairwise(records):
            if before != after:
                edges.add(Edge(before, after, WW))
    last_reads = reads.groupby(["key", *TP])["offset"].max()
    for (reader, topic, partition), offset in last_reads.items():
        place = (str(topic), int(partition))
        writer = writer_at.get((*place, int(offset)))
        if writer is not None and writer != reader:
            edges.add(Edge(writer, str(reader), WR))
        later = [txn for at, txn in order.get(place, []) if at > int(offset)]
        if later and later[0] != reader:
            edges.add(Edge(str(reader), later[0], RW))
    return edges
