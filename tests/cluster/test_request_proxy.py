"""The request proxy on a real broker (4.3.1): one request held, released or dropped while the rest flows.

Cost: one single-node cluster for the module, about 20 s in all. Each step waits for what the proxy or the
broker reports (a request held, its client gone, the answer, the high watermark), never for a time. The
same through a whole `kchaos run` is tests/cluster/test_request_fault_run.py.

- A transactional producer's EndTxn (commit) is held past the application's timeout; the application gives
  up and closes the producer; the proxy still delivers the request on release, the coordinator answers it
  (recorded, decoded) and the transaction the application took for failed is committed: what a stale
  EndTxn arriving after the application moved on does.
- A Produce held is not written until released; a Produce dropped cuts its connection, is never written,
  and the idempotent producer's retry writes the record once.
"""

from __future__ import annotations

import secrets
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

from kchaos.harness.cluster import KafkaCluster
from kchaos.harness.image import ensure_kafka_image, sidecar_image
from kchaos.model.kafka_apis import API_KEYS, decode_error_code
from tests.cluster.conftest import assert_no_leftovers

pytestmark = pytest.mark.cluster

TOPIC = "held"
WAIT_SECONDS = 60.0


class Events:
    """What the proxies reported, in order; `wait_for` blocks until an event matching a test is there."""

    def __init__(self) -> None:
        self.seen: list[Mapping[str, Any]] = []
        self.changed = threading.Condition()

    def __call__(self, node_id: int, event: Mapping[str, Any]) -> None:
        with self.changed:
            self.seen.append(event)
            self.changed.notify_all()

    def wait_for(self, kind: str, **match: Any) -> Mapping[str, Any]:
        def found() -> Mapping[str, Any] | None:
            return next((e for e in self.seen if e["event"] == kind and _matches(e, match)), None)

        with self.changed:
            self.changed.wait_for(lambda: found() is not None, WAIT_SECONDS)
            event = found()
        assert event is not None, f"no {kind} event {match} within {WAIT_SECONDS:g} s; saw {self.seen}"
        return event


def _matches(event: Mapping[str, Any], match: Mapping[str, Any]) -> bool:
    return all(event.get(key) == value for key, value in match.items())


@pytest.fixture(scope="module")
def proxied() -> Iterator[tuple[KafkaCluster, Events]]:
    events = Events()
    cluster = KafkaCluster(
        run_id=f"proxy-{secrets.token_hex(3)}",
        image=ensure_kafka_image("4.3.1"),
        sidecar_image=sidecar_image(),
        size=1,
        proxy_events=events,
    )
    with cluster:
        cluster.create_topic(TOPIC, 1, 1, 1)
        yield cluster, events
    assert_no_leftovers()


def _high_watermark(cluster: KafkaCluster) -> int:
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": uuid.uuid4().hex})
    try:
        return int(consumer.get_watermark_offsets(TopicPartition(TOPIC, 0), timeout=10)[1])
    finally:
        consumer.close()


def _read_committed(cluster: KafkaCluster, expected: int) -> list[bytes]:
    """Every committed record's value, from the start: until `expected` are read, then one poll more, in
    which a record written twice would show."""
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": uuid.uuid4().hex,
                        "isolation.level": "read_committed", "enable.auto.commit": False})  # fmt: skip
    values: list[bytes] = []
    try:
        consumer.assign([TopicPartition(TOPIC, 0, 0)])
        deadline = time.monotonic() + WAIT_SECONDS
        while len(values) < expected and time.monotonic() < deadline:
            message = consumer.poll(1.0)
            if message is not None and message.error() is None:
                values.append(bytes(message.value() or b""))
        extra = consumer.poll(2.0)
        if extra is not None and extra.error() is None:
            values.append(bytes(extra.value() or b""))
    finally:
        consumer.close()
    return values


def _until(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WAIT_SECONDS
    while not condition():
        assert time.monotonic() < deadline, f"{what} did not happen within {WAIT_SECONDS:g} s"
        time.sleep(0.2)


def test_a_held_end_txn_of_a_closed_client_still_reaches_the_coordinator(
    proxied: tuple[KafkaCluster, Events],
) -> None:
    cluster, events = proxied
    proxy = cluster.proxies[1]
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "transactional.id": "held-end-txn",
                         "socket.timeout.ms": 5000, "transaction.timeout.ms": 60000})  # fmt: skip
    producer.init_transactions(30)
    producer.begin_transaction()
    stale = [f"stale-{n}".encode() for n in range(3)]
    for value in stale:
        producer.produce(TOPIC, value)
    producer.flush(30)
    proxy.command("rule", rule="end-txn", action="hold", api_keys=[API_KEYS["EndTxn"]], count=1)
    with pytest.raises(KafkaException):
        producer.commit_transaction(3.0)  # the application's timeout passes while EndTxn is held
    held = events.wait_for("held", rule="end-txn")
    # The application moves on: it closes the producer, and with it the held request's connection.
    del producer
    events.wait_for("client_closed", correlation_id=held["correlation_id"])
    proxy.command("release", rule="end-txn")
    released = events.wait_for("released", correlation_id=held["correlation_id"])
    assert released["client_connected"] is False
    answered = events.wait_for("answered", correlation_id=held["correlation_id"])
    code = decode_error_code(
        API_KEYS["EndTxn"], int(held["api_version"]), bytes.fromhex(answered["response_head"])
    )
    assert code == 0, f"the coordinator answered the late EndTxn with error {code}"
    # The transaction the application gave up on is committed: a read_committed reader sees its records.
    assert _read_committed(cluster, len(stale)) == stale


def test_a_produce_held_waits_and_a_produce_dropped_is_never_written(
    proxied: tuple[KafkaCluster, Events],
) -> None:
    cluster, events = proxied
    proxy = cluster.proxies[1]
    before = _high_watermark(cluster)
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "enable.idempotence": True,
                         "acks": "all", "linger.ms": 0})  # fmt: skip
    acked: list[int] = []
    producer.produce(TOPIC, b"warm-up", on_delivery=lambda err, msg: acked.append(msg.offset()))
    producer.flush(30)  # connected, so the rule meets the record's own Produce

    proxy.command("rule", rule="produce-held", action="hold", api_keys=[API_KEYS["Produce"]], count=1)
    producer.produce(TOPIC, b"held", on_delivery=lambda err, msg: acked.append(msg.offset()))
    producer.poll(0)
    held = events.wait_for("held", rule="produce-held")
    assert _high_watermark(cluster) == before + 1, "a held Produce reached the log"
    proxy.command("release", rule="produce-held")
    events.wait_for("answered", correlation_id=held["correlation_id"])
    producer.flush(30)
    assert len(acked) == 2 and _high_watermark(cluster) == before + 2

    proxy.command("rule", rule="produce-dropped", action="drop", api_keys=[API_KEYS["Produce"]], count=1)
    producer.produce(TOPIC, b"dropped-once", on_delivery=lambda err, msg: acked.append(msg.offset()))
    producer.poll(0)
    events.wait_for("dropped", rule="produce-dropped")
    assert producer.flush(30) == 0, "the producer's retry after the cut was never acknowledged"
    _until(lambda: len(acked) == 3, "the retried record's acknowledgement")
    assert _high_watermark(cluster) == before + 3, "the dropped Produce was written, or its retry twice"
    values = _read_committed(cluster, 6)  # the first test's three, then warm-up, held, dropped-once
    assert values[3:] == [b"warm-up", b"held", b"dropped-once"]
