"""The request-fault vocabulary: a user's API name becomes the key the proxy selects on, and a recorded
response head gives back the broker's error code where, and only where, the response puts one first."""

from __future__ import annotations

import struct

import pytest

from kchaos.model.kafka_apis import (
    API_KEYS,
    api_name,
    decode_error_code,
    decode_first_partition_error,
    error_name,
    parse_api,
)


def _head(correlation_id: int, *fields: tuple[str, int], tagged: bool = False) -> bytes:
    head = struct.pack(">i", correlation_id) + (b"\x00" if tagged else b"")
    for fmt, value in fields:
        head += struct.pack(">" + fmt, value)
    return head + b"\x00" * 20


def test_an_api_name_is_read_case_insensitively_and_names_the_same_key_back() -> None:
    assert parse_api("endtxn", "--hold-api") == 26
    assert parse_api(" AddPartitionsToTxn ", "--hold-api") == 24
    assert api_name(parse_api("WRITETXNMARKERS", "api")) == "WriteTxnMarkers"
    assert api_name(999) == "api 999"


def test_an_unknown_api_name_is_refused_naming_the_field_and_the_choices() -> None:
    with pytest.raises(ValueError) as refused:
        parse_api("EndTxns", "request_faults[0].api")
    message = str(refused.value)
    assert message.startswith("request_faults[0].api: unknown Kafka API 'EndTxns'")
    assert all(name in message for name in ("EndTxn", "Produce", "AlterPartition"))


def test_every_key_is_named_once() -> None:
    assert len(set(API_KEYS.values())) == len(API_KEYS)


def test_the_error_code_follows_the_throttle_time_and_a_flexible_header_s_tagged_fields() -> None:
    # EndTxn v1: header v0, then ThrottleTimeMs, ErrorCode; v3+: header v1 (one tagged-fields byte)
    assert decode_error_code(26, 1, _head(7, ("i", 0), ("h", 51))) == 51
    assert decode_error_code(26, 4, _head(7, ("i", 100), ("h", 47), tagged=True)) == 47
    # the same bytes read at the wrong version give a different answer: the version matters
    assert decode_error_code(26, 4, _head(7, ("i", 0), ("h", 51))) != 51
    assert decode_error_code(22, 2, _head(1, ("i", 0), ("h", 90), tagged=True)) == 90  # flexible from v2


def test_layouts_that_changed_by_version_are_read_at_each_version() -> None:
    # FindCoordinator v0: no throttle time; v1-3: throttle then error; v4+: errors per key (not decoded)
    assert decode_error_code(10, 0, _head(3, ("h", 15))) == 15
    assert decode_error_code(10, 1, _head(3, ("i", 0), ("h", 16))) == 16
    assert decode_error_code(10, 4, _head(3, ("i", 0), ("h", 16), tagged=True)) is None
    # AddPartitionsToTxn has a top-level error code from v4 only
    assert decode_error_code(24, 3, _head(3, ("i", 0), ("h", 48), tagged=True)) is None
    assert decode_error_code(24, 4, _head(3, ("i", 0), ("h", 48), tagged=True)) == 48
    # ApiVersions always answers with header v0 (KIP-511), even at its flexible versions
    assert decode_error_code(18, 3, _head(3, ("h", 35))) == 35


def test_what_cannot_be_decoded_is_none_not_a_guess() -> None:
    ok = _head(7, ("i", 0), ("h", 0))
    assert decode_error_code(26, 1, ok) == 0
    assert decode_error_code(0, 9, ok) is None  # Produce: errors per partition
    assert decode_error_code(27, 1, ok) is None  # WriteTxnMarkers likewise
    assert decode_error_code(26, 6, ok) is None  # above the highest version read from Kafka
    assert decode_error_code(26, 1, ok[:9]) is None  # too short
    assert decode_error_code(26, 3, struct.pack(">ib", 7, 1) + b"\x00" * 20) is None  # tagged fields present


def test_error_names_are_kafka_s() -> None:
    assert [error_name(code) for code in (0, 47, 48, 51, 90)] == [
        "NONE",
        "INVALID_PRODUCER_EPOCH",
        "INVALID_TXN_STATE",
        "CONCURRENT_TRANSACTIONS",
        "PRODUCER_FENCED",
    ]
    assert error_name(4242) == "error 4242"


def _partition_answer(
    flexible: bool, topic: bytes, error: int, throttle: bool = False, outer: bytes | None = None
) -> bytes:
    """A response whose errors are per partition: [ThrottleTimeMs] [topic name, [index, error, ...]], with
    `outer` the fields before it in one entry of an outer array (WriteTxnMarkers: the producer id)."""
    head = struct.pack(">i", 7) + (b"\x00" if flexible else b"") + (struct.pack(">i", 0) if throttle else b"")
    if outer is not None:
        head += (bytes([2]) if flexible else struct.pack(">i", 1)) + outer
    if flexible:  # compact arrays and strings: an unsigned varint of length + 1
        head += bytes([2, len(topic) + 1]) + topic + bytes([2])
    else:
        head += struct.pack(">ih", 1, len(topic)) + topic + struct.pack(">i", 1)
    return (head + struct.pack(">ih", 0, error) + b"\x00" * 16)[:64]  # the proxy keeps 64 bytes


@pytest.mark.parametrize(("version", "flexible"), [(3, False), (8, False), (9, True), (11, True)])
def test_a_produce_answer_gives_its_first_partition_s_error(version: int, flexible: bool) -> None:
    """A late Produce answered INVALID_TXN_STATE (48) is refused by the partition's verification (KIP-890
    part 1); NONE would mean its records were appended."""
    head = _partition_answer(flexible, b"kchaos", 48)
    assert decode_first_partition_error(API_KEYS["Produce"], version, head) == 48
    assert decode_error_code(API_KEYS["Produce"], version, head) is None  # no top-level error there


def test_add_partitions_before_v4_reads_past_its_throttle_time_and_v4_has_a_top_level_error() -> None:
    v3 = _partition_answer(True, b"kchaos", 51, throttle=True)  # CONCURRENT_TRANSACTIONS
    assert decode_first_partition_error(API_KEYS["AddPartitionsToTxn"], 3, v3) == 51
    v1 = _partition_answer(False, b"kchaos", 51, throttle=True)
    assert decode_first_partition_error(API_KEYS["AddPartitionsToTxn"], 1, v1) == 51
    assert decode_first_partition_error(API_KEYS["AddPartitionsToTxn"], 4, v3) is None


@pytest.mark.parametrize(
    ("version", "topic"), [(1, b"kchaos"), (1, b"__consumer_offsets"), (0, b"__consumer_offsets")]
)
def test_a_marker_answer_gives_its_first_producer_s_first_partition_s_error(
    version: int, topic: bytes
) -> None:
    """A stale WriteTxnMarkers answered TRANSACTION_COORDINATOR_FENCED (52): the leader kept a later
    coordinator's epoch for the producer. The topic array is inside the per-producer entry, after its id."""
    head = _partition_answer(version >= 1, topic, 52, outer=struct.pack(">q", 4242))
    assert decode_first_partition_error(API_KEYS["WriteTxnMarkers"], version, head) == 52
    assert decode_first_partition_error(API_KEYS["WriteTxnMarkers"], 3, head) is None  # not read yet


def test_a_marker_answer_v2_recorded_from_4_3_1_is_read_as_fenced() -> None:
    """Recorded from a 4.3.1 leader (kchaos run --scenario txn-markers-held): the late marker of a killed
    coordinator, answered TRANSACTION_COORDINATOR_FENCED (52) for producer id 2, topic kchaos, partition 1."""
    head = bytes.fromhex("000000530002000000000000000002076b6368616f730200000001003400000000")
    assert decode_first_partition_error(API_KEYS["WriteTxnMarkers"], 2, head) == 52


def test_a_first_partition_past_the_kept_bytes_or_none_at_all_is_not_a_guess() -> None:
    long_name = _partition_answer(
        True, b"a-topic-name-longer-than-the-64-bytes-of-its-answer-the-proxy-keeps", 48
    )
    assert decode_first_partition_error(API_KEYS["Produce"], 11, long_name) is None
    empty = struct.pack(">i", 7) + b"\x00" + bytes([1]) + b"\x00" * 20  # no topics
    assert decode_first_partition_error(API_KEYS["Produce"], 11, empty) is None
    assert decode_first_partition_error(API_KEYS["EndTxn"], 1, empty) is None


def test_a_produce_answer_from_v13_names_its_topic_by_id_and_still_gives_its_first_error() -> None:
    """Recorded from a 4.3.1 broker: Produce v13 answered a late produce INVALID_PRODUCER_EPOCH (47)."""
    head = bytes.fromhex("0000001a00026ef76925eb2548799e5dccaf2030a28e0200000000002fffffff")
    assert decode_first_partition_error(API_KEYS["Produce"], 13, head) == 47
    assert decode_first_partition_error(API_KEYS["Produce"], 12, head) is None  # read as a name: too long
