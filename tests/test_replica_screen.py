"""The replica screen: which blocks are compared offset by offset, and that skipping the rest loses nothing.

Replicas of two partitions spanning several blocks, each deviation placed in its own block, so the test
states both which blocks must be compared and which offsets diverge; the Spark checker (which compares only
the unsettled blocks) must then report exactly what the pandas reference finds comparing everything.
"""

from __future__ import annotations

from pyspark.sql import SparkSession

from kchaos.checkers.passes.replica_screen import (
    BLOCK_OFFSETS,
    replica_blocks,
    replica_ranges,
    unsettled_blocks,
)
from kchaos.checkers.rules.anomaly_names import REPLICA_DIVERGENCE
from tests.checker_ids import anomaly_ids
from tests.histories import TOPIC, HistoryBuilder
from tests.reference.anomalies import replica_divergences
from tests.replica_dumps import ReplicasBuilder


def block(n: int) -> range:
    return range(n * BLOCK_OFFSETS, (n + 1) * BLOCK_OFFSETS)


def value(partition: int, offset: int) -> str | None:
    """A transaction marker (no value) at one offset of a settled block, so null values are compared too."""
    return None if offset == block(6).start + 16 else f"v{partition}-{offset}"


def deviating_replicas() -> tuple[ReplicasBuilder, set[int]]:
    """Partition 0: eight blocks on brokers 1-3, one deviation per unsettled block. Partition 1: broker 2's
    log starts mid-block (retention), which is unsettled but no divergence. Returns the divergent offsets."""
    r = ReplicasBuilder()
    missing_280 = block(4).start + 24
    lagging_end = block(7).start + 32
    for broker in (1, 2, 3):
        for offset in range(8 * BLOCK_OFFSETS):
            if broker == 1 and (offset == missing_280 or offset in block(5)):
                continue  # one record missing; then a whole block missing inside broker 1's range
            if broker == 3 and offset >= lagging_end:
                continue  # broker 3 lags: every offset past its end is held by both others
            held = "other" if broker == 3 and offset == block(2).start + 2 else value(0, offset)
            r.record(broker, offset, held)
    r.record(2, block(1).start + 6, "second record at one offset")
    for broker in (1, 2, 3):
        start = block(1).start + 36 if broker == 2 else 0
        r.log(broker, [(value(1, o), o) for o in range(start, 3 * BLOCK_OFFSETS + 8)], partition=1)
    divergent = {block(1).start + 6, block(2).start + 2, missing_280, *block(5)}
    return r, divergent


def test_only_blocks_with_deviations_or_ragged_ends_are_compared(spark: SparkSession) -> None:
    r, _ = deviating_replicas()
    blocks = replica_blocks(r.frame(spark))
    unsettled = {
        (row["partition"], row["block"]) for row in unsettled_blocks(blocks, replica_ranges(blocks)).collect()
    }
    assert unsettled == {(0, 1), (0, 2), (0, 4), (0, 5), (0, 7), (1, 1)}


def test_comparing_unsettled_blocks_finds_every_divergence(spark: SparkSession) -> None:
    r, divergent = deviating_replicas()
    h = HistoryBuilder()
    h.final_reads(h.sends(3))
    expected = {f"{TOPIC}/0/{offset}" for offset in divergent}
    assert replica_divergences(r.pandas()) == expected
    assert anomaly_ids(h.frame(spark), r.frame(spark))[REPLICA_DIVERGENCE] == expected
