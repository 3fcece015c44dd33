"""What each transaction read (issue 49): an eos processor's batch is the transaction that follows it, so
consume-transform-produce transactions are judged as read-write ones; a batch a crash dropped is no
transaction's, and a reader that runs no transaction reads for none. One Spark check."""

from __future__ import annotations

from pyspark.sql import SparkSession

from kchaos.checkers.anomalies.findings import find_anomalies
from kchaos.checkers.passes.read_write.transaction_reads import has_transaction_reads, transaction_reads
from kchaos.checkers.rules.anomaly_names import INT_POLL_SKIP, INTERNAL_ANOMALY_NAMES
from kchaos.model.events import COMMIT, INFO, MEMBER_CRASH, OK, TXN_COMMIT, output_topic
from tests.histories import RC, TOPIC, HistoryBuilder

PROCESSOR = "processor-0"


def batch(h: HistoryBuilder, txn: str, reads: list[tuple[str, int]], out: int) -> None:
    """The processor polls `reads` (value, offset of partition 0), then writes each to the output in
    transaction `txn` (from offset `out` of the output) and commits it with its input offsets, as
    kchaos.workloads.in_harness.eos records."""
    for value, offset in reads:
        h.read(value, offset, process=PROCESSOR)
    h.txn_begin(txn, process=PROCESSOR)
    for n, (value, _) in enumerate(reads):
        h.txn_send(txn, f"{value}@{txn}", out + n, topic=output_topic(TOPIC), process=PROCESSOR)
    h.txn_end(TXN_COMMIT, txn, process=PROCESSOR)
    h.event(PROCESSOR, OK, COMMIT, topic=TOPIC, key=txn, detail={"mode": "transaction"})


def eos_history() -> HistoryBuilder:
    h = HistoryBuilder()
    for offset, value in enumerate("abcdef"):
        h.send(value, offset)
    h.assign(PROCESSOR, isolation=RC)
    h.assign("consumer-0", isolation=RC)
    h.read("a", 0)  # a reader of the input, in no transaction
    batch(h, "t0", [("a", 0), ("b", 1)], out=0)
    h.read("c", 2, process=PROCESSOR)
    h.event(PROCESSOR, INFO, MEMBER_CRASH)  # handed c, then crashed: c is read again by t1
    h.assign(PROCESSOR, isolation=RC, start={0: 2})
    batch(h, "t1", [("c", 2), ("d", 3), ("f", 5)], out=2)  # e, at 4, skipped inside the transaction
    return h


def test_an_eos_batch_is_what_its_transaction_read(spark: SparkSession) -> None:
    h = eos_history()
    frame = h.frame(spark)
    reads = {(r["txn"], r["value"], r["offset"]) for r in transaction_reads(frame).collect()}
    assert reads == {("t0", "a", 0), ("t0", "b", 1), ("t1", "c", 2), ("t1", "d", 3), ("t1", "f", 5)}
    assert has_transaction_reads(frame)
    findings = find_anomalies(frame)
    assert {name: findings[name].count for name in INTERNAL_ANOMALY_NAMES if findings[name].count} == {
        INT_POLL_SKIP: 1
    }
    (skip,) = findings[INT_POLL_SKIP].examples
    assert (skip["txn"], skip["previous_offset"], skip["offset"]) == ("t1", 3, 5)
