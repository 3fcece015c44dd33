"""The steps the fault-effect tests share: begin a fault and require it applied, wait for its effect and
its heal, ask the nodes who leads and who is in sync, and keep writes flowing while a test runs. Kept apart
from the tests so the test module reads as the list of effects it checks."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Producer

from kchaos.harness.cluster import KafkaCluster
from kchaos.harness.metadata import MetadataView
from kchaos.model.waiting import wait_for, wait_until
from kchaos.nemesis.fault import Fault
from kchaos.nemesis.schedule import Nemesis
from kchaos.runner.pytest_plugin import TOPIC as PLUGIN_TOPIC

TOPIC = PLUGIN_TOPIC
PARTITION = 0
EFFECT_TIMEOUT = 90.0
HEAL_TIMEOUT = 180.0
#: Broker settings that shorten Kafka's failure timers for a module's cluster: shorter tests, same logic. A
#: follower that stops fetching leaves the ISR after 5 s instead of 30 s, and a KRaft broker that stops
#: heartbeating (a second apart instead of two) is fenced after 4 s instead of 9 s. ZooKeeper-mode brokers
#: (the nightly's 2.6.3) ignore the KRaft settings and keep ZooKeeper's session.
QUICK_TIMERS = {
    "replica.lag.time.max.ms": "5000",
    "broker.heartbeat.interval.ms": "1000",
    "broker.session.timeout.ms": "4000",
}
#: `QUICK_TIMERS` as `kchaos run` flags, for tests that run the installed command.
QUICK_TIMER_FLAGS = [
    part for key, value in QUICK_TIMERS.items() for part in ("--broker-config", f"{key}={value}")
]


@contextlib.contextmanager
def steady_writes(cluster: KafkaCluster) -> Iterator[None]:
    """Steady acks=1 writes to every partition while the block runs.

    A follower whose end offset equals the leader's counts as caught up however long it is silent, so an
    ISR shrinks only while the leader's log grows: cut links have no visible effect on an idle topic.
    """
    stop = threading.Event()

    def write() -> None:
        producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "1", "log_level": 0,
                             "message.timeout.ms": 5000, "linger.ms": 5})  # fmt: skip
        sent = 0
        while not stop.is_set():
            with contextlib.suppress(BufferError):  # a full queue while a leader is down: skip the write
                producer.produce(TOPIC, value=b"x", partition=sent % 3)
            sent += 1
            producer.poll(0.02)
        producer.flush(5)

    thread = threading.Thread(target=write, name="background-writes", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(15)


def begin(nemesis: Nemesis, spec: str) -> Fault:
    fault = nemesis.begin(spec)
    assert fault is not None, f"{spec} was skipped: {nemesis.skipped}"
    return fault


def wait_effect(fault: Fault) -> None:
    wait_until(fault.effect_reached, EFFECT_TIMEOUT, f"{fault.key}: {fault.describe()}")


def end(nemesis: Nemesis, fault: Fault) -> dict[str, Any] | None:
    """Ends `fault`; what its stop row records (its record's detail), None if it had already ended."""
    ended = nemesis.end(fault)
    return None if ended is None else ended.to_detail()


def heal(nemesis: Nemesis, fault: Fault) -> None:
    nemesis.end(fault)
    wait_until(fault.healed, HEAL_TIMEOUT, f"healing after {fault.key}")


def leader(cluster: KafkaCluster, among: list[int] | None = None) -> int:
    """The leader the answering nodes agree on right now; -1 if they disagree or none answers."""
    return cluster.metadata.leader_of(TOPIC, PARTITION, among=among)


def agreed_leader(cluster: KafkaCluster) -> int:
    """The leader once the nodes agree on one, as that agreeing answer: a single read can hear no node's
    own answer and say -1, and so can a second read right after one that agreed."""
    return wait_for(lambda: leader(cluster), lambda node: node >= 0, 30, "the nodes to agree on a leader")


def view(cluster: KafkaCluster, node: int) -> MetadataView:
    """What `node` believes; polled, as a broker that just came back may need a moment to answer."""
    seen: list[MetadataView] = []

    def answered() -> bool:
        found = cluster.metadata.view_from(node, TOPIC)
        if found is not None:
            seen.append(found)
        return found is not None

    wait_until(answered, 30, f"node {node} to answer a metadata request")
    return seen[-1]


def isr(cluster: KafkaCluster, node: int) -> tuple[int, ...]:
    return view(cluster, node).partitions[PARTITION].isr


def others(cluster: KafkaCluster, nodes: tuple[int, ...]) -> list[int]:
    return [n for n in cluster.nodes if n not in nodes]


def shrunk_to(cluster: KafkaCluster, leader_id: int) -> bool:
    """Every other node reports the ISR of partition 0 as the leader alone.

    Asked of the others, not the leader: in ZooKeeper mode a controller among the followers reaches the
    leader over the inter-broker listener that cut-replication cuts, so the leader's own view stays stale.
    """
    return all(isr(cluster, node) == (leader_id,) for node in others(cluster, (leader_id,)))


def zookeeper_mode(cluster: KafkaCluster) -> bool:
    return cluster.metadata_mode == "zookeeper"


def leader_apart_from_the_controller(cluster: KafkaCluster, nemesis: Nemesis) -> int:
    """The leader of partition 0, once it is not the ZooKeeper-mode controller (with KRaft, at once).

    Measured on 2.8.2: when the killed leader is also the controller, the other leaders' ISR shrinks are
    on their way to it as it dies, and those partitions never take the restarted broker back into their
    ISR (two of three for nine minutes). Stopping the controller first (a controlled shutdown) moves the
    controller away cleanly, so the test kills only a leader.
    """
    for _ in range(3):
        old = agreed_leader(cluster)
        if not zookeeper_mode(cluster) or old != cluster.metadata.active_controller():
            return old
        move = begin(nemesis, "stop:target=controller")
        wait_effect(move)
        heal(nemesis, move)
    pytest.fail("partition 0 stayed led by the controller after moving the controller three times")
