"""The DescribeTopicPartitions client: its decoder on answers built byte by byte from the protocol's schema,
and what it raises for a broker without the API or without an answer. Real brokers (4.3.1 with ELR, 3.9.2
without) answer it in `tests/chaos/test_power_loss_guarantees.py`."""

from __future__ import annotations

import socket
import struct
import threading
from collections.abc import Iterator

import pytest

from kchaos.harness.partition_describe import (
    API_VERSIONS,
    DESCRIBE_TOPIC_PARTITIONS,
    DescribeError,
    DescribeUnsupported,
    PartitionDescription,
    _uvarint,
    describe_partitions,
    describe_request,
    partition_descriptions,
    supported_versions,
)


def compact_ints(values: list[int] | None) -> bytes:
    if values is None:
        return b"\x00"
    return _uvarint(len(values) + 1) + b"".join(struct.pack(">i", v) for v in values)


def compact_str(text: str) -> bytes:
    return _uvarint(len(text) + 1) + text.encode()


def partition(index: int, leader: int, isr: list[int], elr: list[int] | None, error: int = 0) -> bytes:
    return (
        struct.pack(">hiii", error, index, leader, 7)
        + compact_ints([1, 2, 3])
        + compact_ints(isr)
        + compact_ints(elr)
        + compact_ints(None)  # last known ELR
        + compact_ints([])  # offline replicas
        + b"\x00"
    )


def topic(name: str, *partitions: bytes, error: int = 0) -> bytes:
    return (
        struct.pack(">h", error) + compact_str(name) + bytes(16) + b"\x00"
        + _uvarint(len(partitions) + 1) + b"".join(partitions)
        + struct.pack(">i", -(2**31)) + b"\x00"
    )  # fmt: skip


def response(*topics: bytes) -> bytes:
    """A DescribeTopicPartitions v0 body after the correlation id: header tags, throttle, topics, cursor."""
    return b"\x00" + struct.pack(">i", 0) + _uvarint(len(topics) + 1) + b"".join(topics) + b"\xff" + b"\x00"


def test_a_described_partition_carries_its_isr_and_elr() -> None:
    body = response(
        topic("other", partition(0, 3, [3], [1])),
        topic(
            "kchaos",
            partition(0, 1, [1], [3, 2]),
            partition(1, -1, [2, 1, 3], None),
            partition(2, 1, [1], [], error=3),
        ),
    )
    assert partition_descriptions(body, "kchaos") == {
        0: PartitionDescription(0, 1, 7, (1, 2, 3), (1,), (2, 3)),
        1: PartitionDescription(1, -1, 7, (1, 2, 3), (1, 2, 3), ()),  # a null ELR: none eligible
    }  # partition 2 answered an error: not described


def test_a_topic_error_is_raised_and_a_short_answer_is_an_error() -> None:
    with pytest.raises(DescribeError, match="error 3"):
        partition_descriptions(response(topic("kchaos", error=3)), "kchaos")
    with pytest.raises(DescribeError, match="ended early"):
        partition_descriptions(response(topic("kchaos", partition(0, 1, [1], [2])))[:-8], "kchaos")


def test_the_request_names_the_topic_and_no_cursor() -> None:
    request = describe_request("kchaos", 9)
    assert struct.unpack(">hhi", request[:8]) == (DESCRIBE_TOPIC_PARTITIONS, 0, 9)
    assert request.endswith(b"\x02\x07kchaos\x00" + struct.pack(">i", 2000) + b"\xff\x00")


def api_versions_body(*keys: int) -> bytes:
    return struct.pack(">hi", 0, len(keys)) + b"".join(struct.pack(">hhh", k, 0, 3) for k in keys)


def test_api_versions_lists_each_key_with_its_range() -> None:
    assert supported_versions(api_versions_body(0, 75)) == {0: (0, 3), 75: (0, 3)}
    with pytest.raises(DescribeError, match="error 35"):
        supported_versions(struct.pack(">hi", 35, 0))


@pytest.fixture
def old_broker() -> Iterator[str]:
    """A listener that answers ApiVersions as a release before DescribeTopicPartitions would."""
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]

    def serve() -> None:
        conn, _ = server.accept()
        with conn:
            size = struct.unpack(">i", conn.recv(4))[0]
            request = conn.recv(size)
            assert struct.unpack(">h", request[:2])[0] == API_VERSIONS
            correlation = request[4:8]
            body = correlation + api_versions_body(0, 3, 18)
            conn.sendall(struct.pack(">i", len(body)) + body)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield f"127.0.0.1:{port}"
    thread.join(5)
    server.close()


def test_a_release_without_the_api_is_unsupported(old_broker: str) -> None:
    with pytest.raises(DescribeUnsupported):
        describe_partitions(old_broker, "kchaos")


def test_a_broker_that_does_not_answer_is_a_describe_error() -> None:
    with socket.create_server(("127.0.0.1", 0)) as closed:
        port = closed.getsockname()[1]
    with pytest.raises(DescribeError, match="did not answer") as raised:
        describe_partitions(f"127.0.0.1:{port}", "kchaos", timeout=0.5)
    assert not isinstance(raised.value, DescribeUnsupported)
