"""A partition's leader, in-sync replicas and Eligible Leader Replicas, asked of one broker on the wire.

KIP-966 (Kafka 4.0; on by default for new clusters from 4.1) lets the controller elect a replica that left
the ISR while it was below `min.insync.replicas`: such a replica holds every committed record, and is kept
in the partition's Eligible Leader Replicas (ELR). Whether a power loss of the whole ISR may lose
acknowledged writes therefore turns on the ELR too. Brokers tell clients the ELR only through the
DescribeTopicPartitions API (key 75), which librdkafka does not send, so this module speaks that one
request itself: a plain socket, one request per connection, versions checked first with ApiVersions.

A broker whose ApiVersions lists no DescribeTopicPartitions is a release without ELR
(`DescribeUnsupported`): no replica outside its ISR may be elected cleanly there.
"""

from __future__ import annotations

import socket
import struct
from dataclasses import dataclass

API_VERSIONS = 18
DESCRIBE_TOPIC_PARTITIONS = 75
CLIENT_ID = b"kchaos-partition-describe"
#: Responses are small (a topic's partitions); anything larger is a protocol mix-up, not an answer.
MAX_RESPONSE_BYTES = 16 * 1024 * 1024


class DescribeError(Exception):
    """The broker did not answer the question (unreachable, closed the connection, or answered an error)."""


class DescribeUnsupported(DescribeError):
    """The broker's release has no DescribeTopicPartitions API, so no Eligible Leader Replicas."""


@dataclass(frozen=True)
class PartitionDescription:
    """One partition as one broker described it; `leader` is -1 when it has none."""

    partition: int
    leader: int
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    elr: tuple[int, ...]


class _Reader:
    """Reads Kafka's wire types from a response body, front to back."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.at = 0

    def take(self, size: int) -> bytes:
        if self.at + size > len(self.data):
            raise DescribeError("response ended early")
        chunk = self.data[self.at : self.at + size]
        self.at += size
        return chunk

    def int8(self) -> int:
        return int(struct.unpack(">b", self.take(1))[0])

    def int16(self) -> int:
        return int(struct.unpack(">h", self.take(2))[0])

    def int32(self) -> int:
        return int(struct.unpack(">i", self.take(4))[0])

    def uvarint(self) -> int:
        value = shift = 0
        while True:
            byte = self.take(1)[0]
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return value
            shift += 7
            if shift > 28:
                raise DescribeError("varint too long")

    def compact_length(self) -> int:
        """The element count of a compact array or string; -1 for null."""
        return self.uvarint() - 1

    def compact_string(self) -> str | None:
        size = self.compact_length()
        return None if size < 0 else self.take(size).decode()

    def compact_int32s(self) -> tuple[int, ...] | None:
        size = self.compact_length()
        return None if size < 0 else tuple(self.int32() for _ in range(size))

    def tagged_fields(self) -> None:
        for _ in range(self.uvarint()):
            self.uvarint()  # tag
            self.take(self.uvarint())


def _uvarint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _compact_string(text: str) -> bytes:
    raw = text.encode()
    return _uvarint(len(raw) + 1) + raw


def _header(api_key: int, version: int, correlation: int, flexible: bool) -> bytes:
    """Request header v1 (v2 when `flexible`: with an empty tagged-field section)."""
    head = struct.pack(">hhih", api_key, version, correlation, len(CLIENT_ID)) + CLIENT_ID
    return head + (b"\x00" if flexible else b"")


def _exchange(sock: socket.socket, request: bytes, correlation: int) -> bytes:
    """Sends one framed request and returns the response after its correlation id."""
    sock.sendall(struct.pack(">i", len(request)) + request)
    size = struct.unpack(">i", _receive(sock, 4))[0]
    if not 4 <= size <= MAX_RESPONSE_BYTES:
        raise DescribeError(f"response of {size} bytes")
    body = _receive(sock, size)
    if struct.unpack(">i", body[:4])[0] != correlation:
        raise DescribeError("response to another request")
    return body[4:]


def _receive(sock: socket.socket, size: int) -> bytes:
    chunks = bytearray()
    while len(chunks) < size:
        chunk = sock.recv(size - len(chunks))
        if not chunk:
            raise DescribeError("the broker closed the connection")
        chunks += chunk
    return bytes(chunks)


def supported_versions(body: bytes) -> dict[int, tuple[int, int]]:
    """ApiVersions v0's answer: each API key the broker serves, with its lowest and highest version."""
    reader = _Reader(body)
    error = reader.int16()
    if error:
        raise DescribeError(f"ApiVersions answered error {error}")
    versions = {}
    for _ in range(reader.int32()):
        key, low, high = reader.int16(), reader.int16(), reader.int16()
        versions[key] = (low, high)
    return versions


def partition_descriptions(body: bytes, topic: str) -> dict[int, PartitionDescription]:
    """DescribeTopicPartitions v0's answer for `topic` (after the response header's correlation id)."""
    reader = _Reader(body)
    reader.tagged_fields()  # response header v1
    reader.int32()  # throttle time
    found: dict[int, PartitionDescription] = {}
    for _ in range(max(reader.compact_length(), 0)):
        error = reader.int16()
        name = reader.compact_string()
        reader.take(16)  # topic id
        reader.int8()  # is internal
        for _ in range(max(reader.compact_length(), 0)):
            part_error, index = reader.int16(), reader.int32()
            leader, epoch = reader.int32(), reader.int32()
            replicas = reader.compact_int32s() or ()
            isr = reader.compact_int32s() or ()
            elr = reader.compact_int32s() or ()
            reader.compact_int32s()  # last known ELR
            reader.compact_int32s()  # offline replicas
            reader.tagged_fields()
            if name == topic and not part_error:
                found[index] = PartitionDescription(
                    index, leader, epoch, tuple(sorted(replicas)), tuple(sorted(isr)), tuple(sorted(elr))
                )
        reader.int32()  # authorized operations
        reader.tagged_fields()
        if name == topic and error:
            raise DescribeError(f"DescribeTopicPartitions answered error {error} for topic {topic}")
    return found


def describe_request(topic: str, correlation: int) -> bytes:
    """DescribeTopicPartitions v0 for one topic, from its first partition, up to 2000 partitions."""
    body = _uvarint(2) + _compact_string(topic) + b"\x00"  # one topic, no tagged fields
    body += struct.pack(">i", 2000) + struct.pack(">b", -1) + b"\x00"  # no cursor, no tagged fields
    return _header(DESCRIBE_TOPIC_PARTITIONS, 0, correlation, flexible=True) + body


def describe_partitions(address: str, topic: str, timeout: float = 2.0) -> dict[int, PartitionDescription]:
    """`topic`'s partitions as the broker at `address` (host:port) knows them.

    Raises `DescribeUnsupported` when the broker's release has no DescribeTopicPartitions, and
    `DescribeError` when it does not answer."""
    host, _, port = address.rpartition(":")
    try:
        with socket.create_connection((host, int(port)), timeout=timeout) as sock:
            sock.settimeout(timeout)
            versions = supported_versions(_exchange(sock, _header(API_VERSIONS, 0, 1, flexible=False), 1))
            if versions.get(DESCRIBE_TOPIC_PARTITIONS, (-1, -1))[0] != 0:
                raise DescribeUnsupported(f"the broker at {address} has no DescribeTopicPartitions v0")
            return partition_descriptions(_exchange(sock, describe_request(topic, 2), 2), topic)
    except OSError as exc:
        raise DescribeError(f"the broker at {address} did not answer: {exc}") from exc
