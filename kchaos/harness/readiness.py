"""When a cluster is ready for a run: every broker registered and a replicated write acknowledged, and each
topic the run writes created and led in every broker's view.

A container that is up is not a broker that takes writes: the JVM boots, the storage is formatted, the
broker registers with the controller, and only then does an acks=all write to a topic on every broker
succeed. Every run waits on these polls before its first write, so they are asked often and cheaply, and a
broker that exits meanwhile fails the start at once, in its own words, instead of at the deadline.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping, Sequence

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic

from kchaos.harness.cluster_error import ClusterError
from kchaos.harness.kafka_node import KafkaNode
from kchaos.harness.metadata import ClusterMetadata
from kchaos.model.waiting import wait_until

READY_TOPIC = "__kchaos_ready"
#: How often a starting cluster is asked whether it is ready: every run waits on these polls before its
#: first write, and a metadata request is cheap next to a broker's start.
READY_POLL_S = 0.2
#: How long a readiness poll waits for one node's metadata answer.
READY_ANSWER_S = 1.0

#: A Java stack trace's frame lines ("\tat ...", "... 3 more"), which say where, not what.
STACK_FRAME = re.compile(r"^\s+(at |\.\.\. \d+ more)")


def exited(servers: Iterable[KafkaNode], log_lines: int = 2) -> list[str]:
    """Each node whose broker exited on its own, with its exit code and last log lines (stack frames
    left out: the exception's message, not where it was thrown, says what to fix)."""
    found = []
    for node in servers:
        code = node.exit_code()
        if code is not None:
            lines = node.logs().decode(errors="replace").splitlines()
            said = [line.strip() for line in lines if line.strip() and not STACK_FRAME.match(line)]
            found.append(
                f"{node.hostname} exited with code {code} while starting: " + " | ".join(said[-log_lines:])
            )
    return found


def wait_registered(
    metadata: ClusterMetadata, nodes: Mapping[int, KafkaNode], servers: Iterable[KafkaNode], timeout: float
) -> None:
    """Waits until each of the brokers `nodes` sees all of them registered; raises `ClusterError` as soon
    as one of `servers` (the brokers and dedicated controllers) exits on its own."""
    expected = frozenset(nodes)
    watched = list(servers)

    def registered() -> bool:
        # A second per node: a booting broker refuses or stalls the connection, and the next poll
        # asks again.
        views = metadata.views("__consumer_offsets", list(nodes), timeout=READY_ANSWER_S)
        return len(views) == len(nodes) and all(view.brokers == expected for view in views)

    found: list[str] = []

    def registered_or_exited() -> bool:
        found[:] = exited(watched)
        return bool(found) or registered()

    wait_until(registered_or_exited, timeout, f"all {len(nodes)} brokers registered", READY_POLL_S)
    if found:
        raise ClusterError("; ".join(found))


def wait_writable(bootstrap: str, size: int, timeout: float) -> None:
    """Waits until READY_TOPIC, replicated on all `size` brokers, takes an acks=all write."""

    def writable() -> bool:
        producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "log_level": 0,
                             "message.timeout.ms": 5000})  # fmt: skip
        outcome: list[object] = []
        producer.produce(READY_TOPIC, b"ready", on_delivery=lambda err, _msg: outcome.append(err))
        producer.flush(8)
        return outcome == [None]

    wait_until(writable, timeout, f"an acks=all write to a topic replicated on all {size} brokers")


def topic_settings(
    min_insync_replicas: int, unclean_leader_election: bool, topic_config: Mapping[str, str] | None
) -> dict[str, str]:
    """A run topic's settings: the two the oracle reads, which have flags of their own, then the user's."""
    return {
        "min.insync.replicas": str(min_insync_replicas),
        "unclean.leader.election.enable": str(unclean_leader_election).lower(),
        **(topic_config or {}),
    }


def create_topic(
    admin: AdminClient,
    metadata: ClusterMetadata,
    nodes: Collection[int],
    topic: str,
    partitions: int,
    replication_factor: int,
    config: Mapping[str, str],
    timeout: float,
    replica_assignment: Mapping[int, Sequence[int]] | None = None,
) -> None:
    """Creates `topic` through `admin`, then waits until every broker of `nodes` (their ids) sees all its
    partitions led: a client that asks a broker which has not heard of it yet would fail its first request.
    With `replica_assignment` (partition -> replicas) the replicas are placed so; Kafka takes the
    replication factor from the lists then, and refuses one given beside them."""
    if replica_assignment is None:
        new = NewTopic(topic, partitions, replication_factor, config=dict(config))
    else:
        lists = [list(replicas) for _, replicas in sorted(replica_assignment.items())]
        new = NewTopic(topic, len(lists), replica_assignment=lists, config=dict(config))
    futures = admin.create_topics([new], operation_timeout=timeout)
    futures[topic].result(timeout)

    def led_everywhere() -> bool:
        views = metadata.views(topic, list(nodes))
        return len(views) == len(nodes) and all(
            len(v.partitions) == partitions and all(s.leader >= 0 for s in v.partitions.values())
            for v in views
        )

    wait_until(led_everywhere, timeout, f"topic {topic} created and led on every node's view", READY_POLL_S)
