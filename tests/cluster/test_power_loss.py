"""Power loss on a real cluster: the sync journal sees Kafka's fsyncs, and a cut loses exactly the unsynced.

The deterministic part of the fault's promise, shown without a workload or a checker: records a test
wrote and had acknowledged (acks=all) are read back, or not, after the fault healed. Which configuration
keeps them is Kafka's documented behaviour (Design > Persistence: the log is not fsynced by default;
broker config `log.flush.interval.messages`, topic config `flush.messages`). One cluster serves the module.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.cimpl import NewTopic

from kchaos.harness import power_cut
from kchaos.harness.cluster import KafkaCluster
from kchaos.model.history import HistoryWriter
from kchaos.model.run_files import RunDir
from kchaos.nemesis.schedule import Nemesis
from kchaos.runner.pytest_plugin import ClusterFactory
from tests.cluster.fault_steps import QUICK_TIMERS, end

pytestmark = pytest.mark.cluster

UNSYNCED = "unsynced"
SYNCED = "synced"
#: Synced on every append too, with the least segment size Kafka 4 accepts (1 MiB), so writes roll segments.
ROLLED = "rolled"
JOURNAL = "/var/lib/kafka/sync-journal"
HEAL_TIMEOUT = 180.0


@pytest.fixture(scope="module")
def cluster(kafka_cluster_factory: ClusterFactory) -> Iterator[KafkaCluster]:
    with kafka_cluster_factory.started(
        "power-loss", topic=UNSYNCED, partitions=1, broker_config=QUICK_TIMERS
    ) as started:
        admin = started.admin()
        futures = admin.create_topics(
            [NewTopic(SYNCED, 1, 3, config={"min.insync.replicas": "2", "flush.messages": "1"})]
        )
        futures[SYNCED].result(60)
        rolled_config = {"min.insync.replicas": "2", "flush.messages": "1", "segment.bytes": str(1 << 20)}
        admin.create_topics([NewTopic(ROLLED, 1, 3, config=rolled_config)])[ROLLED].result(60)
        yield started


def write(
    cluster: KafkaCluster, topic: str, count: int, one_by_one: bool = False, size: int = 0
) -> list[int]:
    """Writes `count` records (padded to `size` bytes) with acks=all; returns the offsets acknowledged."""
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all", "log_level": 0})
    offsets: list[int] = []

    def delivered(err: object, msg: object) -> None:
        if err is None:
            offsets.append(msg.offset())  # type: ignore[attr-defined]

    for n in range(count):
        value = f"{topic}-{n}".encode().ljust(size, b".")
        producer.produce(topic, value=value, partition=0, on_delivery=delivered)
        if one_by_one:
            producer.flush(30)
    producer.flush(30)
    return offsets


def end_offset(cluster: KafkaCluster, topic: str) -> int:
    consumer = Consumer(
        {"bootstrap.servers": cluster.bootstrap, "group.id": "power-loss-test", "log_level": 0}
    )
    try:
        return int(consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)[1])
    finally:
        consumer.close()


def power_loss(cluster: KafkaCluster, target: str, tmp_path: Path, *options: str) -> dict[str, Any]:
    """Applies and heals one power loss; returns its stop row's detail (with what each node dropped)."""
    history = HistoryWriter(RunDir(tmp_path), cluster.run_id)
    nemesis = Nemesis(cluster, history, UNSYNCED, 0, [], seed=1)
    fault = nemesis.begin(":".join([f"power-loss:target={target}", *options]))
    assert fault is not None, nemesis.skipped
    detail = end(nemesis, fault)
    assert detail is not None
    history.finish()
    cluster.metadata.await_recovery(UNSYNCED, HEAL_TIMEOUT, "the cluster to recover")
    cluster.metadata.await_recovery(SYNCED, HEAL_TIMEOUT, "the synced topic to recover")
    cluster.metadata.await_recovery(ROLLED, HEAL_TIMEOUT, "the rolling topic to recover")
    return {**detail, "nodes": list(fault.nodes)}


def test_the_journal_sees_one_fsync_per_append_when_the_topic_flushes_every_message(
    cluster: KafkaCluster,
) -> None:
    appends = 30
    assert len(write(cluster, SYNCED, appends, one_by_one=True)) == appends
    segment = f"/var/lib/kafka/data/{SYNCED}-0/00000000000000000000.log"
    for node in cluster.nodes.values():
        journal = node.kafka_exec(["cat", JOURNAL]).splitlines()
        sizes = [int(line.split()[2]) for line in journal if line.startswith(f"fsync {segment} ")]
        # Every replica syncs each append (the leader on append, followers on each fetch that brings one),
        # so the segment's synced size steps through at least one distinct size per record.
        assert len(set(sizes)) >= appends, (node.node_id, sizes)
        assert sizes == sorted(sizes)


def test_power_loss_of_every_replica_drops_what_was_never_synced(
    cluster: KafkaCluster, tmp_path: Path
) -> None:
    before = end_offset(cluster, UNSYNCED)
    acknowledged = write(cluster, UNSYNCED, 200)
    assert len(acknowledged) == 200

    detail = power_loss(cluster, "all", tmp_path)

    assert sorted(detail["nodes"]) == sorted(cluster.nodes)
    # Nothing in the unsynced topic's active segment was ever fsynced: every replica lost the records.
    assert end_offset(cluster, UNSYNCED) <= before
    for node_id, dropped in detail["dropped"].items():
        log = dropped["logs"][f"{UNSYNCED}-0"]
        assert log["records"] >= 200, (node_id, log)
        assert log["last_offset"] >= max(acknowledged), (node_id, log)


def test_power_loss_of_every_replica_keeps_what_each_append_synced(
    cluster: KafkaCluster, tmp_path: Path
) -> None:
    acknowledged = write(cluster, SYNCED, 50)
    assert len(acknowledged) == 50

    power_loss(cluster, "all", tmp_path)

    assert end_offset(cluster, SYNCED) > max(acknowledged)


def test_power_loss_of_the_leader_alone_loses_nothing_acknowledged(
    cluster: KafkaCluster, tmp_path: Path
) -> None:
    acknowledged = write(cluster, UNSYNCED, 200)
    assert len(acknowledged) == 200

    detail = power_loss(cluster, "leader", tmp_path)

    assert len(detail["nodes"]) == 1
    # The powered-off leader lost its unsynced tail, but the followers had every acknowledged record:
    # one of them leads now, and the old leader refetches what it lost.
    assert detail["dropped"][str(detail["nodes"][0])]["logs"][f"{UNSYNCED}-0"]["records"] > 0
    assert end_offset(cluster, UNSYNCED) > max(acknowledged)


def read_all(cluster: KafkaCluster, topic: str) -> list[int]:
    """Every offset a consumer checking CRCs reads from the partition's start to its end; raises on an error
    (a corrupt or torn batch served would be one)."""
    settings = {"bootstrap.servers": cluster.bootstrap, "group.id": "power-loss-read", "log_level": 0,
                "check.crcs": True, "enable.auto.commit": False}  # fmt: skip
    consumer = Consumer(settings)
    try:
        low, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
        consumer.assign([TopicPartition(topic, 0, low)])
        offsets: list[int] = []
        deadline = time.monotonic() + 60
        while (not offsets or offsets[-1] < high - 1) and high > low:
            assert time.monotonic() < deadline, f"read {len(offsets)} of {high - low} records in 60 s"
            message = consumer.poll(1.0)
            if message is None:
                continue
            assert message.error() is None, message.error()
            offsets.append(int(message.offset()))  # type: ignore[arg-type]
        return offsets
    finally:
        consumer.close()


# The cut tear nightly (10 s of CI): CI tears the same batch with zeros beside it.
@pytest.mark.parametrize("tear", [pytest.param("cut", marks=pytest.mark.nightly), "zeros"])
def test_a_torn_power_loss_of_every_replica_is_recovered_to_its_last_whole_batch(
    cluster: KafkaCluster, tmp_path: Path, tear: str
) -> None:
    before = end_offset(cluster, UNSYNCED)
    assert len(write(cluster, UNSYNCED, 200)) == 200

    detail = power_loss(cluster, "all", tmp_path, f"tear={tear}")

    for node_id, dropped in detail["dropped"].items():
        # Each replica's active segment ends inside its first unsynced batch (half of it, or zeros)...
        assert dropped["torn_files"] >= 1, (node_id, dropped)
        assert dropped["logs"][f"{UNSYNCED}-0"]["records"] >= 200, (node_id, dropped)
    # ...and Kafka's recovery found the torn batch and truncated before it: the log ends where it was synced,
    # and every record left reads back whole, none of the torn bytes served.
    high = end_offset(cluster, UNSYNCED)
    assert high <= before
    read = read_all(cluster, UNSYNCED)
    assert read == sorted(set(read)) and (not read or read[-1] == high - 1)


def test_lost_directory_entries_take_no_synced_record_once_kafka_syncs_new_segments_directories(
    cluster: KafkaCluster, tmp_path: Path
) -> None:
    """KAFKA-3968 (Kafka 3.0): a new segment's directory is synced when the segment is first flushed, so a
    record fsynced into a segment rolled after the last power loss keeps its name through the next."""
    acknowledged = write(cluster, ROLLED, 24, one_by_one=True, size=100_000)  # 2.4 MB: two rolls
    assert len(acknowledged) == 24
    directory = f"/var/lib/kafka/data/{ROLLED}-0"
    for node in cluster.nodes.values():
        segments = [name for name in node.kafka_exec(["ls", directory]).split() if name.endswith(".log")]
        assert len(segments) >= 3, (node.node_id, segments)
        journal = node.kafka_exec(["cat", JOURNAL]).splitlines()
        assert any(line == f"create {directory}/{segments[-1]} -" for line in journal), node.node_id
        assert f"dirsync {directory} -" in journal, node.node_id

    detail = power_loss(cluster, "all", tmp_path, "dirents=lost")

    lost = {path for dropped in detail["dropped"].values() for path in dropped["lost_entries"]}
    assert not any(path.startswith(f"{directory}/") and path.endswith(".log") for path in lost), lost
    assert end_offset(cluster, ROLLED) > max(acknowledged)


def test_an_image_without_the_sync_journal_skips_the_fault_with_the_reason(
    cluster: KafkaCluster, tmp_path: Path
) -> None:
    node = cluster.nodes[max(cluster.nodes)]
    tool = str(node.home / power_cut.TOOLS[0])
    node.kafka_exec(["mv", tool, f"{tool}.away"])
    try:
        history = HistoryWriter(RunDir(tmp_path), cluster.run_id)
        nemesis = Nemesis(cluster, history, UNSYNCED, 0, [], seed=1)
        assert nemesis.begin(f"power-loss:target={node.node_id}") is None
        history.finish()
    finally:
        node.kafka_exec(["mv", f"{tool}.away", tool])
    assert "has no sync journal" in nemesis.skipped[0]
    assert node.state == "running"
