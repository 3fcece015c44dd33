"""A ZooKeeper-era release from the image kchaos builds: Kafka 0.10.2.2 (Scala 2.11, with jaxb-api on Java 17)
and its ZooKeeper, started by the image's own entrypoint, written to and read back with confluent-kafka,
its log printed by its own DumpLogSegments. The first floor under running whole chaos runs on old
releases: the image, the ZooKeeper role and a ZooKeeper-mode broker, and what the harness asks of them.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator

import docker
import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kchaos.harness.image import ensure_kafka_image
from kchaos.harness.kafka_node import free_port
from kchaos.harness.labels import labels_for
from kchaos.harness.leaders import DescribedPartitions
from kchaos.harness.partition_describe import DescribeUnsupported, describe_partitions
from kchaos.harness.replicas import DUMP_TOOLS
from kchaos.model.releases import Release
from kchaos.model.waiting import wait_until

pytestmark = pytest.mark.cluster

OLD_RELEASE = "0.10.2.2"
TOPIC = "kchaos-old"


class OldBroker:
    """One ZooKeeper and one ZooKeeper-mode broker on a network of their own; `bootstrap` on loopback."""

    def __init__(self, client: docker.DockerClient, image: str) -> None:
        run_id = f"old-{uuid.uuid4().hex[:8]}"
        labels = labels_for(run_id)
        self.port = free_port()
        self.bootstrap = f"127.0.0.1:{self.port}"
        self.network = client.networks.create(f"kchaos-{run_id}", labels=labels)
        self.zookeeper = client.containers.run(
            image, detach=True, name=f"kchaos-{run_id}-zk", labels=labels, network=self.network.name,
            environment={"KCHAOS_ROLE": "zookeeper"},
        )  # fmt: skip
        self.network.disconnect(self.zookeeper)
        self.network.connect(self.zookeeper, aliases=["zookeeper"])
        # The controller reaches brokers by their inter-broker listener (named listeners: KIP-103, 0.10.2).
        self.broker = client.containers.run(
            image, detach=True, name=f"kchaos-{run_id}-b1", labels=labels, network=self.network.name,
            ports={"9092/tcp": ("127.0.0.1", self.port)},
            environment={
                "KAFKA_BROKER_ID": "1",
                "KAFKA_ZOOKEEPER_CONNECT": "zookeeper:2181",
                "KAFKA_LISTENERS": "INTERNAL://:9091,EXTERNAL://:9092",
                "KAFKA_ADVERTISED_LISTENERS": f"INTERNAL://{run_id}-b1:9091,EXTERNAL://{self.bootstrap}",
                "KAFKA_LISTENER_SECURITY_PROTOCOL_MAP": "INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT",
                "KAFKA_INTER_BROKER_LISTENER_NAME": "INTERNAL",
                "KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR": "1",
                "KAFKA_HEAP_OPTS": "-Xmx256m",
            },
        )  # fmt: skip
        self.network.disconnect(self.broker)
        self.network.connect(self.broker, aliases=[f"{run_id}-b1"])

    def run_tool(self, *args: str) -> str:
        result = self.broker.exec_run(["kafka-class", *args], demux=True)
        stdout, stderr = result.output
        assert result.exit_code == 0, (stdout or b"") + (stderr or b"")
        return (stdout or b"").decode()

    def remove(self) -> None:
        for container in (self.broker, self.zookeeper):
            container.remove(force=True)
        self.network.remove()


@pytest.fixture(scope="module")
def old_broker() -> Iterator[OldBroker]:
    client = docker.from_env()
    node = OldBroker(client, ensure_kafka_image(OLD_RELEASE, client))
    try:
        admin = AdminClient({"bootstrap.servers": node.bootstrap, "log_level": 0})

        def topic_created() -> bool:
            try:
                admin.create_topics([NewTopic(TOPIC, 1, 1)])[TOPIC].result(10)
            except Exception as exc:
                return "already exists" in str(exc)
            return True

        wait_until(topic_created, 90, "the 0.10.2.2 broker to create a topic")
        yield node
    finally:
        node.remove()


def test_the_release_is_built_from_its_scala_211_jars_with_jaxb() -> None:
    release = Release.parse(OLD_RELEASE)
    assert (release.scala_artifact, release.needs_jaxb, release.metadata_modes) == (
        "kafka_2.11", True, ("zookeeper",))  # fmt: skip
    libs = (
        docker.from_env()
        .containers.run(f"kchaos/kafka:{OLD_RELEASE}", entrypoint=["ls", "/opt/kafka/libs"], remove=True)
        .decode()
    )
    assert "kafka_2.11-0.10.2.2.jar" in libs and "jaxb-api" in libs and "zookeeper-3.4.9.jar" in libs


def test_confluent_kafka_writes_and_reads_a_zookeeper_mode_broker(old_broker: OldBroker) -> None:
    producer = Producer({"bootstrap.servers": old_broker.bootstrap, "acks": "all", "log_level": 0})
    acked: list[int] = []
    for n in range(50):
        producer.produce(TOPIC, f"v{n}".encode(), on_delivery=lambda err, msg: acked.append(msg.offset()))
    assert producer.flush(30) == 0
    assert sorted(acked) == list(range(50))
    consumer = Consumer({"bootstrap.servers": old_broker.bootstrap, "group.id": "kchaos-old",
                         "enable.auto.commit": False, "log_level": 0})  # fmt: skip
    consumer.assign([TopicPartition(TOPIC, 0, 0)])
    values: list[str] = []
    deadline = time.monotonic() + 30
    while len(values) < 50 and time.monotonic() < deadline:
        message = consumer.poll(1.0)
        if message is not None and message.error() is None:
            values.append(message.value().decode())
    consumer.close()
    assert values == [f"v{n}" for n in range(50)]

    # Its log printer is the Scala one, and prints each record with its payload.
    dump = old_broker.run_tool(DUMP_TOOLS[1], "--print-data-log", "--files",
                               f"/var/lib/kafka/data/{TOPIC}-0/00000000000000000000.log")  # fmt: skip
    assert "offset: 0 position: 0 CreateTime: " in dump and "payload: v0" in dump, dump[:500]


def test_a_release_without_eligible_leader_replicas_is_described_through_librdkafka(
    old_broker: OldBroker,
) -> None:
    """0.10.2 has no DescribeTopicPartitions: the ApiVersions answer says so, and the leader watcher then
    takes leadership from librdkafka's metadata, with no ELR."""
    with pytest.raises(DescribeUnsupported):
        describe_partitions(old_broker.bootstrap, TOPIC)
    source = DescribedPartitions(old_broker.bootstrap, TOPIC)
    (only,) = source.leadership().values()
    assert (only.leader, only.isr, only.elr, only.replicas) == (1, (1,), (), (1,))
    assert source.fallback is not None
