"""Which blocks of offsets the replicas might disagree about, found without moving their records.

A replica dump holds every broker's copy of every partition: three times the records of the history,
almost all of which agree. Comparing them offset by offset means shuffling every record, which costs more
than any other part of a check. So the records are first summarised where they lie, per broker and block
of `BLOCK_OFFSETS` consecutive offsets, by aggregates Spark merges before any shuffle: which offsets of
the block the broker holds (one bit each), how many records, and two sums of a 64-bit hash of each
record's offset and value. A block is *settled* when only one replica's range reaches into it, or when
every replica whose range reaches into it holds records there, all with the same offsets, the same record
count as offsets and the same sums: then at each offset every covering replica holds the same one value,
which is exactly "no divergence" (`kchaos.checkers.passes.offset_pass.by_offset`). Only the records of
unsettled blocks — divergence, and the ragged ends of logs — go on to be compared offset by offset.

Agreeing sums with different values would need two replicas' hashes to differ yet sum the same in both
32-bit halves: a chance of about 2**-64 per differing block, the same footing as any checksum.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from kchaos.checkers.passes.frames import TP

#: Offsets per block: one bit each in a 64-bit mask of the offsets a broker holds.
BLOCK_BITS = 6
BLOCK_OFFSETS = 1 << BLOCK_BITS
BLOCK = "block"
#: Brokers are told apart by one bit each in a 64-bit mask.
MAX_BROKER_ID = 62
LOW_32 = 0xFFFFFFFF


def block_of(offset: Column) -> Column:
    return F.shiftright(offset, BLOCK_BITS)


def broker_bit() -> Column:
    """The broker's bit; a broker id that has none fails the check instead of being confused with another."""
    return F.when(F.col("broker").between(0, MAX_BROKER_ID), F.expr("shiftleft(1L, broker)")).otherwise(
        F.raise_error(F.lit(f"replica dump: broker ids must be 0..{MAX_BROKER_ID}"))
    )


def replica_blocks(replicas: DataFrame) -> DataFrame:
    """Per broker, topic-partition and block: the broker's bit, offsets held, record count, hash sums, and
    the lowest and highest offset (from which each replica's range follows without another scan)."""
    record_hash = F.xxhash64("offset", "value")
    return replicas.groupBy("broker", *TP, block_of(F.col("offset")).alias(BLOCK)).agg(
        F.bit_or(broker_bit()).alias("broker_bit"),
        F.bit_or(F.expr(f"shiftleft(1L, cast(offset & {BLOCK_OFFSETS - 1} as int))")).alias("held"),
        F.count("*").alias("records"),
        F.sum(record_hash.bitwiseAND(F.lit(LOW_32))).alias("hash_low"),
        F.sum(F.shiftrightunsigned(record_hash, 32)).alias("hash_high"),
        F.min("offset").alias("first_offset"),
        F.max("offset").alias("last_offset"),
    )


def replica_ranges(blocks: DataFrame) -> DataFrame:
    """Per topic-partition: each replica's range [first offset, last offset + 1) and how many replicas."""
    per_replica = blocks.groupBy("broker", *TP).agg(
        F.min("first_offset").alias("log_start"), (F.max("last_offset") + 1).alias("log_end")
    )
    return per_replica.groupBy(*TP).agg(
        F.array_sort(F.collect_list(F.struct("broker", "log_start", "log_end"))).alias("ranges"),
        F.count("*").alias("replica_count"),
    )


def _same(column: str) -> Column:
    return F.min(column) == F.max(column)


def unsettled_blocks(blocks: DataFrame, ranges: DataFrame) -> DataFrame:
    """(topic, partition, block) of every block whose records must be compared offset by offset."""
    per_block = blocks.groupBy(*TP, BLOCK).agg(
        F.bit_count(F.bit_or("broker_bit")).alias("holding"),
        (_same("held") & _same("hash_low") & _same("hash_high")).alias("alike"),
        F.max(F.bit_count("held") != F.col("records")).alias("repeats_an_offset"),
    )
    start = F.col(BLOCK) * BLOCK_OFFSETS
    reaching = F.size(
        F.filter("ranges", lambda r: (r["log_start"] < start + BLOCK_OFFSETS) & (r["log_end"] > start))
    )
    settled = (reaching <= 1) | (
        F.col("alike") & ~F.col("repeats_an_offset") & (F.col("holding") == reaching)
    )
    return (
        per_block.join(F.broadcast(ranges.select(*TP, "ranges")), on=list(TP), how="left")
        .filter(~F.coalesce(settled, F.lit(False)))
        .select(*TP, BLOCK)
    )


def unsettled_records(replicas: DataFrame, unsettled: DataFrame) -> DataFrame:
    """The replica records in unsettled blocks: all that can diverge.

    A record without a topic, partition or offset lies in no range and is never compared, so it is dropped
    like the settled ones.
    """
    return (
        replicas.withColumn(BLOCK, block_of(F.col("offset")))
        .join(F.broadcast(unsettled), on=[*TP, BLOCK], how="left_semi")
        .drop(BLOCK)
    )
