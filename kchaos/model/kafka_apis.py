"""The Kafka request APIs by name and key, and the error code a response's first bytes carry: the vocabulary
of request-level faults, on the kchaos side.

The request proxy (kchaos/compose/proxy/) speaks only numbers: it selects requests by `api_key` and records
each answer's first 64 bytes after its size (`response_head`), because it runs where kchaos is not
installed. This module turns a user's API name into the key a rule sends, and a recorded head back into an
error code and its name, so a history row can say "EndTxn answered CONCURRENT_TRANSACTIONS".

Facts, not guesses, read from apache/kafka at commit 1eb7644349cb (October 2024): each key from
clients/src/main/resources/common/message/<Name>Request.json (`apiKey`); each response layout from
<Name>Response.json (its first fields, their `versions`, `flexibleVersions`, and the highest of
`validVersions`); the response header rule from generator/.../ApiMessageTypeGenerator.java (response header
v1, which adds a tagged-fields section after the correlation id, for a flexible version; ApiVersions always
v0, KIP-511); the error codes from clients/.../common/protocol/Errors.java. A version above the highest
read there is not decoded: a later Kafka may have changed the layout, and None is better than a wrong code.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Final

#: Request API name (Kafka's message name without `Request`) -> api_key. KRaft's replication Fetch is Fetch.
API_KEYS: Final[dict[str, int]] = {
    "Produce": 0,
    "Fetch": 1,
    "ListOffsets": 2,
    "Metadata": 3,
    "LeaderAndIsr": 4,
    "StopReplica": 5,
    "UpdateMetadata": 6,
    "ControlledShutdown": 7,
    "OffsetCommit": 8,
    "OffsetFetch": 9,
    "FindCoordinator": 10,
    "JoinGroup": 11,
    "Heartbeat": 12,
    "LeaveGroup": 13,
    "SyncGroup": 14,
    "ApiVersions": 18,
    "InitProducerId": 22,
    "AddPartitionsToTxn": 24,
    "AddOffsetsToTxn": 25,
    "EndTxn": 26,
    "WriteTxnMarkers": 27,
    "TxnOffsetCommit": 28,
    "Vote": 52,
    "BeginQuorumEpoch": 53,
    "EndQuorumEpoch": 54,
    "DescribeQuorum": 55,
    "AlterPartition": 56,
    "FetchSnapshot": 59,
    "DescribeProducers": 61,
    "BrokerRegistration": 62,
    "BrokerHeartbeat": 63,
    "DescribeTransactions": 65,
    "ListTransactions": 66,
    "ConsumerGroupHeartbeat": 68,
}
API_NAMES: Final[dict[int, str]] = {key: name for name, key in API_KEYS.items()}
_BY_LOWER: Final = {name.lower(): name for name in API_KEYS}

#: Errors.java code -> name, for the codes request faults meet (the transaction, coordinator and
#: replication ones); `error_name` says "error N" for the rest rather than guess.
ERROR_NAMES: Final[dict[int, str]] = {
    -1: "UNKNOWN_SERVER_ERROR",
    0: "NONE",
    3: "UNKNOWN_TOPIC_OR_PARTITION",
    5: "LEADER_NOT_AVAILABLE",
    6: "NOT_LEADER_OR_FOLLOWER",
    7: "REQUEST_TIMED_OUT",
    13: "NETWORK_EXCEPTION",
    14: "COORDINATOR_LOAD_IN_PROGRESS",
    15: "COORDINATOR_NOT_AVAILABLE",
    16: "NOT_COORDINATOR",
    19: "NOT_ENOUGH_REPLICAS",
    20: "NOT_ENOUGH_REPLICAS_AFTER_APPEND",
    22: "ILLEGAL_GENERATION",
    25: "UNKNOWN_MEMBER_ID",
    27: "REBALANCE_IN_PROGRESS",
    35: "UNSUPPORTED_VERSION",
    41: "NOT_CONTROLLER",
    42: "INVALID_REQUEST",
    45: "OUT_OF_ORDER_SEQUENCE_NUMBER",
    46: "DUPLICATE_SEQUENCE_NUMBER",
    47: "INVALID_PRODUCER_EPOCH",
    48: "INVALID_TXN_STATE",
    49: "INVALID_PRODUCER_ID_MAPPING",
    50: "INVALID_TRANSACTION_TIMEOUT",
    51: "CONCURRENT_TRANSACTIONS",
    52: "TRANSACTION_COORDINATOR_FENCED",
    53: "TRANSACTIONAL_ID_AUTHORIZATION_FAILED",
    55: "OPERATION_NOT_ATTEMPTED",
    56: "KAFKA_STORAGE_ERROR",
    59: "UNKNOWN_PRODUCER_ID",
    74: "FENCED_LEADER_EPOCH",
    75: "UNKNOWN_LEADER_EPOCH",
    77: "STALE_BROKER_EPOCH",
    89: "THROTTLING_QUOTA_EXCEEDED",
    90: "PRODUCER_FENCED",
    105: "TRANSACTIONAL_ID_NOT_FOUND",
    120: "TRANSACTION_ABORTABLE",
}


@dataclass(frozen=True)
class ResponseLayout:
    """Where a response's top-level error code is, by version: after an int32 ThrottleTimeMs from
    `throttle_from` on, present from `error_from` to `error_to` (inclusive; None: still there at
    `highest`), with a response header v1 from `flexible_from` on (None: header v0 always)."""

    highest: int
    throttle_from: int | None
    error_from: int
    error_to: int | None
    flexible_from: int | None


#: The APIs whose response starts with [ThrottleTimeMs] ErrorCode at some versions (Response.json, above).
#: Produce, WriteTxnMarkers, TxnOffsetCommit, Metadata, ListOffsets and OffsetCommit carry their errors
#: per partition inside arrays, so they are not here and decode to None.
LAYOUTS: Final[dict[int, ResponseLayout]] = {
    API_KEYS["EndTxn"]: ResponseLayout(5, 0, 0, None, 3),
    API_KEYS["InitProducerId"]: ResponseLayout(5, 0, 0, None, 2),
    API_KEYS["AddOffsetsToTxn"]: ResponseLayout(4, 0, 0, None, 3),
    API_KEYS["AddPartitionsToTxn"]: ResponseLayout(5, 0, 4, None, 3),  # v0-3: errors per partition only
    API_KEYS["FindCoordinator"]: ResponseLayout(6, 1, 0, 3, 3),  # v4+: one error per coordinator key
    API_KEYS["Heartbeat"]: ResponseLayout(4, 1, 0, None, 4),
    API_KEYS["JoinGroup"]: ResponseLayout(9, 2, 0, None, 6),
    API_KEYS["SyncGroup"]: ResponseLayout(5, 1, 0, None, 4),
    API_KEYS["LeaveGroup"]: ResponseLayout(5, 1, 0, None, 4),
    API_KEYS["Fetch"]: ResponseLayout(17, 1, 7, None, 12),
    API_KEYS["ControlledShutdown"]: ResponseLayout(3, None, 0, None, 3),
    API_KEYS["StopReplica"]: ResponseLayout(4, None, 0, None, 2),
    API_KEYS["LeaderAndIsr"]: ResponseLayout(7, None, 0, None, 4),
    API_KEYS["UpdateMetadata"]: ResponseLayout(8, None, 0, None, 6),
    API_KEYS["ApiVersions"]: ResponseLayout(4, None, 0, None, None),
    API_KEYS["Vote"]: ResponseLayout(1, None, 0, None, 0),
    API_KEYS["BeginQuorumEpoch"]: ResponseLayout(1, None, 0, None, 1),
    API_KEYS["EndQuorumEpoch"]: ResponseLayout(1, None, 0, None, 1),
    API_KEYS["DescribeQuorum"]: ResponseLayout(2, None, 0, None, 0),
    API_KEYS["AlterPartition"]: ResponseLayout(3, 0, 0, None, 0),
    API_KEYS["FetchSnapshot"]: ResponseLayout(1, 0, 0, None, 0),
    API_KEYS["BrokerRegistration"]: ResponseLayout(4, 0, 0, None, 0),
    API_KEYS["BrokerHeartbeat"]: ResponseLayout(1, 0, 0, None, 0),
    API_KEYS["ConsumerGroupHeartbeat"]: ResponseLayout(1, 0, 0, None, 0),
}

#: The APIs whose response's errors are per partition, in `[topic name, [partition index, error]]` as its
#: first array (after an int32 ThrottleTimeMs when `throttle_from` is set): (throttle_from,
#: flexible_from, highest). Their first partition's error is what a row says of the answer.
PER_PARTITION: Final[dict[int, tuple[int | None, int, int]]] = {
    API_KEYS["Produce"]: (None, 9, 13),  # ThrottleTimeMs comes after the array, from v1
    API_KEYS["AddPartitionsToTxn"]: (0, 3, 3),  # v4+: a top-level error (LAYOUTS)
    # v2 (sent by 4.3.1, newer than the commit read above) answers as v1 does: read from a late marker
    # a 4.3.1 leader answered TRANSACTION_COORDINATOR_FENCED.
    API_KEYS["WriteTxnMarkers"]: (None, 1, 2),
}
#: The APIs whose topic array sits inside a first, outer array: the bytes each outer entry has before it
#: (WriteTxnMarkers: one result per producer, its int64 ProducerId first). The first entry's is read.
OUTER_ENTRY: Final[dict[int, int]] = {API_KEYS["WriteTxnMarkers"]: 8}
#: From which version a per-partition answer names its topic by its 16-byte id, not its name (KIP-516).
TOPIC_ID_FROM: Final[dict[int, int]] = {API_KEYS["Produce"]: 13}
_TOPIC_ID: Final = 16

_INT16: Final = struct.Struct(">h")
_INT32: Final = struct.Struct(">i")
_CORRELATION_ID: Final = 4
_THROTTLE: Final = 4


def parse_api(text: str, field: str) -> int:
    """The api_key of the API a user named, case-insensitively (`endtxn`, `EndTxn`); a ValueError naming
    `field` (the option or key as the user typed it) and every choice otherwise."""
    name = _BY_LOWER.get(text.strip().lower())
    if name is None:
        raise ValueError(f"{field}: unknown Kafka API {text!r}; choose one of {', '.join(API_KEYS)}")
    return API_KEYS[name]


def api_name(api_key: int) -> str:
    """The API's name, or `api N` for a key this module does not name (the proxy may see any key)."""
    return API_NAMES.get(api_key, f"api {api_key}")


def error_name(code: int) -> str:
    return ERROR_NAMES.get(code, f"error {code}")


def decode_error_code(api_key: int, api_version: int, head: bytes) -> int | None:
    """The top-level error code of a response whose first bytes (after its size: the correlation id first)
    are `head`, or None when this API and version has none there, is not known here, or the head is too
    short or carries tagged header fields whose length this does not read."""
    layout = LAYOUTS.get(api_key)
    if layout is None or not 0 <= api_version <= layout.highest:
        return None
    if api_version < layout.error_from or (layout.error_to is not None and api_version > layout.error_to):
        return None
    offset = _CORRELATION_ID
    if layout.flexible_from is not None and api_version >= layout.flexible_from:
        if len(head) <= offset or head[offset] != 0:  # a non-empty tagged-fields section: not read
            return None
        offset += 1
    if layout.throttle_from is not None and api_version >= layout.throttle_from:
        offset += _THROTTLE
    if len(head) < offset + _INT16.size:
        return None
    (code,) = _INT16.unpack_from(head, offset)
    return int(code)


def _unsigned_varint(head: bytes, offset: int) -> tuple[int, int] | None:
    """An unsigned varint at `offset` and the offset past it; None if `head` ends inside it."""
    value = shift = 0
    while offset < len(head) and shift < 35:
        byte = head[offset]
        offset += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, offset
        shift += 7
    return None


def _length(head: bytes, offset: int, flexible: bool, width: struct.Struct) -> tuple[int, int] | None:
    """An array's or string's length at `offset` (a compact varint of length + 1 when `flexible`, else an
    int32 or int16 `width`) and the offset past it; None if `head` ends first or it is null."""
    if flexible:
        read = _unsigned_varint(head, offset)
        return None if read is None or read[0] == 0 else (read[0] - 1, read[1])
    if len(head) < offset + width.size:
        return None
    (length,) = width.unpack_from(head, offset)
    return None if length < 0 else (int(length), offset + width.size)


def decode_first_partition_error(api_key: int, api_version: int, head: bytes) -> int | None:
    """The error code of the first partition of the first topic in a response whose errors are per
    partition (`PER_PARTITION`: Produce, WriteTxnMarkers, AddPartitionsToTxn before v4), or None when the
    API is not one of those, the response names no partition, or `head` ends before the error (a long
    topic name)."""
    layout = PER_PARTITION.get(api_key)
    if layout is None or not 0 <= api_version <= layout[2]:
        return None
    throttle_from, flexible_from, _ = layout
    flexible = api_version >= flexible_from
    offset = _CORRELATION_ID
    if flexible:
        if len(head) <= offset or head[offset] != 0:  # a non-empty tagged-fields section: not read
            return None
        offset += 1
    if throttle_from is not None and api_version >= throttle_from:
        offset += _THROTTLE
    if api_key in OUTER_ENTRY:
        entries = _length(head, offset, flexible, _INT32)
        if entries is None or not entries[0]:
            return None
        offset = entries[1] + OUTER_ENTRY[api_key]
    topics = _length(head, offset, flexible, _INT32)
    if topics is None or not topics[0]:
        return None
    if api_version >= TOPIC_ID_FROM.get(api_key, api_version + 1):
        past_topic = topics[1] + _TOPIC_ID
    else:
        name = _length(head, topics[1], flexible, _INT16)
        if name is None:
            return None
        past_topic = name[1] + name[0]
    partitions = _length(head, past_topic, flexible, _INT32)
    if partitions is None or not partitions[0]:
        return None
    offset = partitions[1] + _INT32.size  # past the partition's index
    if len(head) < offset + _INT16.size:
        return None
    (code,) = _INT16.unpack_from(head, offset)
    return int(code)
