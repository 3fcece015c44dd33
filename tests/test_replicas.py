"""Reading Kafka's `DumpLogSegments --print-data-log` output into replica records.

The sample is the tool's real output shape (Kafka 4.3), trimmed: two partitions of a topic whose name has
a dash, batches from two leader epochs, and a transaction marker.
"""

from __future__ import annotations

import pytest

from kchaos.harness.dump_text import (
    ReplicaColumns,
    ReplicaRecord,
    dump_format,
    epoch_at,
    parse_dump,
    replica_manifest,
    topic_partition_of,
)

DUMP = """\
Dumping /var/lib/kafka/data/chaos-topic-0/00000000000000000000.log
Log starting offset: 0
baseOffset: 0 lastOffset: 1 count: 2 baseSequence: 0 lastSequence: 1 producerId: 7 producerEpoch: 0 \
partitionLeaderEpoch: 0 isTransactional: false isControl: false deleteHorizonMs: OptionalLong.empty \
position: 0 CreateTime: 1795285487164 size: 90 magic: 2 compresscodec: none crc: 1 isvalid: true
| offset: 0 CreateTime: 1795285487164 keySize: 3 valueSize: 3 sequence: 0 headerKeys: [] key: v-0 payload: v-0
| offset: 1 CreateTime: 1795285487164 keySize: -1 valueSize: 3 sequence: 1 headerKeys: [] payload: v-1
baseOffset: 2 lastOffset: 2 count: 1 baseSequence: -1 lastSequence: -1 producerId: 7 producerEpoch: 0 \
partitionLeaderEpoch: 3 isTransactional: true isControl: true deleteHorizonMs: OptionalLong.empty \
position: 90 CreateTime: 1795285487200 size: 78 magic: 2 compresscodec: none crc: 2 isvalid: true
| offset: 2 CreateTime: 1795285487200 keySize: 4 valueSize: 6 sequence: -1 headerKeys: [] \
endTxnMarker: COMMIT coordinatorEpoch: 0
Dumping /var/lib/kafka/data/chaos-topic-12/00000000000000000000.log
Log starting offset: 0
baseOffset: 0 lastOffset: 0 count: 1 baseSequence: -1 lastSequence: -1 producerId: -1 producerEpoch: -1 \
partitionLeaderEpoch: 5 isTransactional: false isControl: false deleteHorizonMs: OptionalLong.empty \
position: 0 CreateTime: 1795285487164 size: 70 magic: 2 compresscodec: none crc: 3 isvalid: true
| offset: 0 CreateTime: 1795285487164 keySize: 3 valueSize: 11 sequence: -1 headerKeys: [] key: k-9 \
payload: has key: in
"""


def test_records_carry_their_partition_offset_epoch_key_and_value() -> None:
    assert list(parse_dump(DUMP, broker=2)) == [
        ReplicaRecord(2, "chaos-topic", 0, 0, 0, "v-0", "v-0"),
        ReplicaRecord(2, "chaos-topic", 0, 1, 0, None, "v-1"),
        # A transaction marker holds its offset but no value.
        ReplicaRecord(2, "chaos-topic", 0, 2, 3, None, None),
        ReplicaRecord(2, "chaos-topic", 12, 0, 5, "k-9", "has key: in"),
    ]


#: The same shape from a release that prints no batch lines (0.10.2.2's Scala tool): one line per record,
#: no leader epoch, a key printed before the payload.
RECORDS_DUMP = """\
Dumping /var/lib/kafka/data/chaos-topic-1/00000000000000000000.log
Starting offset: 0
offset: 0 position: 0 CreateTime: 1795285487164 isvalid: true payloadsize: 3 magic: 1 \
compresscodec: NoCompressionCodec crc: 3543276390 keysize: 3 key: k-0 payload: v-0
offset: 1 position: 40 CreateTime: 1795285487165 isvalid: true payloadsize: 3 magic: 1 \
compresscodec: NoCompressionCodec crc: 1287625403 payload: v-1
"""


def test_a_dump_without_batch_lines_gives_records_without_a_leader_epoch() -> None:
    assert list(parse_dump(RECORDS_DUMP, broker=3)) == [
        ReplicaRecord(3, "chaos-topic", 1, 0, -1, "k-0", "v-0"),
        ReplicaRecord(3, "chaos-topic", 1, 1, -1, None, "v-1"),
    ]


#: 0.11.0.3's tool: without --deep-iteration only the batch lines (with their leader epochs), with it only
#: the records; the replica dump joins both.
BATCH_LINES = """\
Dumping /var/lib/kafka/data/chaos-topic-0/00000000000000000000.log
Starting offset: 0
baseOffset: 0 lastOffset: 1 baseSequence: 0 lastSequence: 1 producerId: 0 producerEpoch: 0 \
partitionLeaderEpoch: 0 isTransactional: false position: 0 CreateTime: 1795483719531 isvalid: true \
size: 112 magic: 2 compresscodec: NONE crc: 3576990862
baseOffset: 2 lastOffset: 2 baseSequence: 2 lastSequence: 2 producerId: 0 producerEpoch: 0 \
partitionLeaderEpoch: 4 isTransactional: false position: 112 CreateTime: 1795483719600 isvalid: true \
size: 70 magic: 2 compresscodec: NONE crc: 1
"""
DEEP_RECORDS = """\
Dumping /var/lib/kafka/data/chaos-topic-0/00000000000000000000.log
Starting offset: 0
offset: 0 position: 0 CreateTime: 1795483719531 isvalid: true keysize: 2 valuesize: 2 magic: 2 \
compresscodec: NONE producerId: 0 producerEpoch: 0 sequence: 0 isTransactional: false headerKeys: [] \
key: k0 payload: v0
offset: 1 position: 0 CreateTime: 1795483719531 isvalid: true keysize: -1 valuesize: 2 magic: 2 \
compresscodec: NONE producerId: 0 producerEpoch: 0 sequence: 1 isTransactional: false headerKeys: [] \
payload: v1
offset: 2 position: 112 CreateTime: 1795483719600 isvalid: true keysize: -1 valuesize: 2 magic: 2 \
compresscodec: NONE producerId: 0 producerEpoch: 0 sequence: 2 isTransactional: false headerKeys: [] \
payload: v2
"""


def test_batch_lines_then_records_give_each_record_its_batchs_leader_epoch() -> None:
    assert list(parse_dump(BATCH_LINES + DEEP_RECORDS, broker=1)) == [
        ReplicaRecord(1, "chaos-topic", 0, 0, 0, "k0", "v0"),
        ReplicaRecord(1, "chaos-topic", 0, 1, 0, None, "v1"),
        ReplicaRecord(1, "chaos-topic", 0, 2, 4, None, "v2"),
    ]


def test_an_offset_no_printed_batch_holds_has_no_epoch() -> None:
    batches = [(0, 1, 0), (2, 2, 4), (5, 9, 6)]
    assert [epoch_at(batches, offset) for offset in (0, 1, 2, 3, 5, 9, 10)] == [0, 0, 4, -1, 6, 6, -1]
    assert epoch_at([], 0) == -1


def test_the_dump_format_is_told_by_its_record_lines() -> None:
    assert dump_format(DUMP) == "batches"
    assert dump_format(RECORDS_DUMP) == "records"
    assert dump_format(BATCH_LINES) == "batch-lines-only"
    assert dump_format(BATCH_LINES + DEEP_RECORDS) == "batches-then-records"
    assert dump_format("Dumping /var/lib/kafka/data/t-0/00000000000000000000.log\nStarting offset: 0\n") == (
        "no-records"
    )


def test_manifest_gives_each_replica_its_range_and_epochs() -> None:
    manifest = replica_manifest(ReplicaColumns().add(DUMP, broker=1).table())
    assert [(r["partition"], r["log_start"], r["log_end"], r["leader_epochs"]) for r in manifest] == [
        (0, 0, 3, [0, 3]),
        (12, 0, 1, [5]),
    ]


def test_a_segment_outside_a_partition_directory_is_refused() -> None:
    with pytest.raises(ValueError, match="<topic>-<partition>"):
        topic_partition_of("/var/lib/kafka/data/meta.properties")
