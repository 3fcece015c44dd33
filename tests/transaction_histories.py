"""Canned transactional histories with stated ground truth for the transaction anomalies, shared by the
Spark and pandas tests (`TRANSACTION_SCENARIOS`).

Offsets leave room for the control records Kafka writes: each commit or abort puts a marker at the next
offset of every partition its transaction wrote to.
"""

from __future__ import annotations

from collections.abc import Iterable

from kchaos.checkers.rules.anomaly_names import (
    ABORTED_READ,
    LOST_COMMITTED,
    PARTIAL_TRANSACTION,
    UNCOMMITTED_READ,
)
from kchaos.model.events import (
    FAIL,
    INFO,
    OK,
    TXN_ABORT,
    TXN_COMMIT,
)
from tests.canned_histories import Scenario
from tests.histories import PRODUCER, RC, RU, HistoryBuilder


def _final_read_committed(h: HistoryBuilder, reads: Iterable[tuple[str, int, int]], partitions: int) -> None:
    """A read_committed final reader covering partitions 0 .. `partitions`-1 and returning `reads`
    (value, partition, offset)."""
    for partition in range(partitions):
        h.final_read_start(partition=partition, isolation=RC)
    for value, partition, offset in reads:
        h.final_read(value, offset, partition=partition)


def txn_clean_scenario() -> Scenario:
    """Everything a transactional run may show: a read_uncommitted reader returns records before their
    commit and records of an aborted transaction; a read_committed reader returns a record after its
    commit was asked for but before the answer (markers may be written first); the final read returns
    exactly the committed records, of a transaction spanning two partitions too."""
    h = HistoryBuilder()
    h.assign("consumer-0", [0, 1], isolation=RC)
    h.assign("consumer-1", [0, 1], isolation=RU)
    h.transaction("t1", [("a", 0, 0), ("b", 1, 0)])
    h.read("a", 0, process="consumer-1")
    h.txn_end(TXN_COMMIT, "t1")
    h.read("a", 0)
    h.read("b", 0, partition=1)
    h.transaction("t2", [("c", 0, 2), ("d", 1, 2)])
    h.txn_end(TXN_ABORT, "t2")
    h.read("c", 2, process="consumer-1")
    h.transaction("t3", [("e", 0, 4)])
    h.txn_end(TXN_COMMIT, "t3", outcome=None)
    h.read("e", 4)
    h.event(PRODUCER, OK, TXN_COMMIT, key="t3")
    _final_read_committed(h, [("a", 0, 0), ("e", 0, 4), ("b", 1, 0)], partitions=2)
    return Scenario(h, None, {})


def txn_aborted_read_scenario() -> Scenario:
    """Records of aborted transactions read at read_committed: `x1` (abort acknowledged), `y1` (commit
    definitely failed, the abort indeterminate), `v1` (read by consumer-2 once reassigned at
    read_committed). Not: `x2` (read_uncommitted), `z1` (commit indeterminate, then an acknowledged
    abort: undecided), `w1` (commit left without an answer), `u1` (consumer-3's level is not known after
    its reassignment)."""
    h = HistoryBuilder()
    h.assign("consumer-0", [0, 1], isolation=RC)
    h.assign("consumer-1", [0, 1], isolation=RU)
    h.assign("consumer-2", [0])
    h.assign("consumer-3", [0], isolation=RC)
    h.transaction("t1", [("x1", 0, 0), ("x2", 1, 0)])
    h.txn_end(TXN_ABORT, "t1")
    h.read("x1", 0)
    h.read("x2", 0, partition=1, process="consumer-1")
    h.transaction("t2", [("y1", 0, 2)])
    h.txn_end(TXN_COMMIT, "t2", outcome=FAIL)
    h.txn_end(TXN_ABORT, "t2", outcome=INFO)
    h.transaction("t3", [("z1", 0, 4)])
    h.txn_end(TXN_COMMIT, "t3", outcome=INFO)
    h.txn_end(TXN_ABORT, "t3")
    h.transaction("t5", [("v1", 0, 6)])
    h.txn_end(TXN_ABORT, "t5")
    h.read("v1", 6, process="consumer-2")
    h.assign("consumer-2", [0], isolation=RC)
    h.read("v1", 6, process="consumer-2")
    h.transaction("t6", [("u1", 0, 8)])
    h.txn_end(TXN_ABORT, "t6")
    h.assign("consumer-3", [0])
    h.read("u1", 8, process="consumer-3")
    h.transaction("t4", [("w1", 1, 2)])
    h.txn_end(TXN_COMMIT, "t4", outcome=None)
    h.read("w1", 2, partition=1)
    _final_read_committed(h, [("y1", 0, 2), ("z1", 0, 4), ("w1", 1, 2)], partitions=2)
    return Scenario(h, None, {ABORTED_READ: {"x1", "y1", "v1"}})


def txn_uncommitted_read_scenario() -> Scenario:
    """read_committed reads before the transaction's commit was asked for: `a` (committed later), `d`
    (never ended), `f` (never asked to commit; its abort indeterminate), `h2` (one partition of a
    transaction spanning two, read early while `h1` is read after the commit was asked for). Not: `b`
    (read between the commit's invoke and its answer), `c` (commit indeterminate, read after asking),
    `g` (read_uncommitted). `e` is read after a commit that definitely failed and before the retry that
    succeeded: a real early read, but the definition bounds reads by the first commit row, whatever its
    outcome, and so misses it rather than resolve which attempt was which. A client process's rows are
    recorded as its lines arrive but stamped when it printed them, so "before" is by `time_ns`: `j` is read
    before `t10`'s commit was asked for though recorded after it; not `i`, recorded before `t9`'s commit
    row but read after the producer had asked."""
    h = HistoryBuilder()
    h.assign("consumer-0", [0, 1], isolation=RC)
    h.assign("consumer-1", [0, 1], isolation=RU)
    h.transaction("t1", [("a", 0, 0)])
    h.read("a", 0)
    h.txn_end(TXN_COMMIT, "t1")
    h.transaction("t2", [("b", 0, 2)])
    h.txn_end(TXN_COMMIT, "t2", outcome=None)
    h.read("b", 2)
    h.event(PRODUCER, OK, TXN_COMMIT, key="t2")
    h.transaction("t3", [("c", 0, 4)])
    h.txn_end(TXN_COMMIT, "t3", outcome=INFO)
    h.read("c", 4)
    h.transaction("t4", [("d", 1, 0)], process="producer-1")
    h.read("d", 0, partition=1)
    h.transaction("t5", [("e", 0, 6)])
    h.txn_end(TXN_COMMIT, "t5", outcome=FAIL)
    h.read("e", 6)
    h.txn_end(TXN_COMMIT, "t5")
    h.transaction("t6", [("f", 0, 8)])
    h.read("f", 8)
    h.txn_end(TXN_ABORT, "t6", outcome=INFO)
    h.transaction("t7", [("g", 0, 10)])
    h.read("g", 10, process="consumer-1")
    h.txn_end(TXN_COMMIT, "t7")
    h.transaction("t8", [("h1", 0, 12), ("h2", 1, 2)])
    h.read("h2", 2, partition=1)
    h.txn_end(TXN_COMMIT, "t8")
    h.read("h1", 12)
    h.transaction("t9", [("i", 0, 14)], process="producer-2")
    read_i = h.read("i", 14)
    h.stamp_before(h.txn_end(TXN_COMMIT, "t9", process="producer-2"), read_i)
    h.transaction("t10", [("j", 0, 16)], process="producer-2")
    commit_j = h.txn_end(TXN_COMMIT, "t10", process="producer-2")
    h.stamp_before(h.read("j", 16), commit_j)
    _final_read_committed(
        h,
        [("a", 0, 0), ("b", 0, 2), ("c", 0, 4), ("e", 0, 6), ("g", 0, 10), ("h1", 0, 12), ("h2", 1, 2),
         ("i", 0, 14), ("j", 0, 16)],
        partitions=2,
    )  # fmt: skip
    return Scenario(h, None, {UNCOMMITTED_READ: {"a", "d", "f", "h2", "j"}})


def txn_lost_scenario() -> Scenario:
    """Committed transactions the final read (partitions 0 and 1) returned only part of: `t1` lacks `a2`
    in partition 1, `t3` lacks `c2`, which a consumer read during the run (so `c2` is not lost-committed:
    it was read; the existing `truncated-read` is its anomaly). `t2` lost both records: two
    `lost-committed`, not partial. Not: `t4`'s missing `d2` (its send indeterminate), `t5`'s `e1` (in
    partition 2, which the final read did not cover), `t6`'s `f2` (commit indeterminate), `t7` (aborted)."""
    h = HistoryBuilder()
    h.assign("consumer-0", [0, 1], isolation=RC)
    h.transaction("t1", [("a1", 0, 0), ("a2", 1, 0)])
    h.txn_end(TXN_COMMIT, "t1")
    h.transaction("t2", [("b1", 0, 2), ("b2", 1, 2)])
    h.txn_end(TXN_COMMIT, "t2")
    h.transaction("t3", [("c1", 0, 4), ("c2", 0, 5)])
    h.txn_end(TXN_COMMIT, "t3")
    h.read("c2", 5)
    h.transaction("t4", [("d1", 0, 7)])
    h.txn_send("t4", "d2", partition=1, outcome=INFO)
    h.txn_end(TXN_COMMIT, "t4")
    h.transaction("t5", [("e1", 2, 0)])
    h.txn_end(TXN_COMMIT, "t5")
    h.transaction("t6", [("f1", 0, 9), ("f2", 1, 4)])
    h.txn_end(TXN_COMMIT, "t6", outcome=INFO)
    h.transaction("t7", [("g1", 0, 11)])
    h.txn_end(TXN_ABORT, "t7")
    _final_read_committed(h, [("a1", 0, 0), ("c1", 0, 4), ("d1", 0, 7), ("f1", 0, 9)], partitions=2)
    return Scenario(h, None, {PARTIAL_TRANSACTION: {"t1", "t3"}, LOST_COMMITTED: {"a2", "b1", "b2"}})


TRANSACTION_SCENARIOS = {
    "txn-clean": txn_clean_scenario,
    "txn-aborted-read": txn_aborted_read_scenario,
    "txn-uncommitted-read": txn_uncommitted_read_scenario,
    "txn-lost": txn_lost_scenario,
}
