"""Brokers join and leave a real cluster under writes (`add-broker`, `remove-broker`), and healing puts
the cluster back as the fault found it.

One cluster of three nodes and one spare serves the module, with acks=1 writes flowing all along. What is
asserted is what Kafka shows: the partitions' replica lists and ISRs as every answering broker describes
them, and which brokers it counts registered.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from kchaos.harness.cluster import KafkaCluster
from kchaos.harness.metadata import PartitionState
from kchaos.nemesis.schedule import Nemesis
from kchaos.runner.pytest_plugin import ClusterFactory
from tests.cluster.fault_steps import TOPIC, begin, heal, steady_writes, wait_effect

pytestmark = pytest.mark.cluster

SPARE = 4


@pytest.fixture(scope="module")
def kafka_cluster(kafka_cluster_factory: ClusterFactory) -> Iterator[KafkaCluster]:
    with kafka_cluster_factory.started("membership", spare_brokers=1) as cluster:
        yield cluster


@pytest.fixture(scope="module", autouse=True)
def background_writes(kafka_cluster: KafkaCluster) -> Iterator[None]:
    with steady_writes(kafka_cluster):
        yield


def topic_states(cluster: KafkaCluster) -> list[dict[int, PartitionState]]:
    """Every answering broker's view of the test topic's partitions."""
    return [view.partitions for view in cluster.metadata.views(TOPIC)]


def test_an_added_broker_takes_a_replica_of_every_partition_and_is_decommissioned_on_heal(
    kafka_cluster: KafkaCluster, nemesis: Nemesis
) -> None:
    cluster = kafka_cluster
    before = {p: s.replicas for p, s in topic_states(cluster)[0].items()}
    assert all(SPARE not in replicas for replicas in before.values())
    fault = begin(nemesis, "add-broker")
    assert fault.nodes == (SPARE,) and SPARE in cluster.nodes and not cluster.spares
    wait_effect(fault)
    for partitions in topic_states(cluster):
        assert len(partitions) == len(before)
        for partition, state in partitions.items():
            assert SPARE in state.replicas and set(state.isr) == set(state.replicas), (partition, state)
            assert len(state.replicas) == len(before[partition])  # moved, not added
    heal(nemesis, fault)
    assert SPARE in cluster.spares and SPARE not in cluster.nodes
    assert fault.unregistered[SPARE] == "unregistered" or cluster.metadata_mode == "zookeeper"  # type: ignore[attr-defined]
    for view in cluster.metadata.views(TOPIC):
        assert SPARE not in view.brokers
        assert {p: s.replicas for p, s in view.partitions.items()} == before
    assert all(SPARE not in state.replicas for state in cluster.metadata.placements().values())


def test_a_removed_broker_is_drained_onto_a_spare_shut_down_and_restored_on_heal(
    kafka_cluster: KafkaCluster, nemesis: Nemesis
) -> None:
    """Three brokers and three replicas everywhere: draining the leader's broker needs the spare, which
    joins and takes every replica the broker held, of every topic (the internal ones too)."""
    cluster = kafka_cluster
    placed = cluster.metadata.placements()
    fault = begin(nemesis, "remove-broker")
    (victim,) = fault.nodes
    held = {p for p, s in placed.items() if victim in s.replicas}
    assert fault.joined == SPARE  # type: ignore[attr-defined]
    wait_effect(fault)
    assert victim not in cluster.nodes and victim in cluster.spares
    after = cluster.metadata.placements()
    assert all(victim not in state.replicas for state in after.values())
    for placement in held:
        assert SPARE in after[placement].replicas, (placement, after[placement])
    for view in cluster.metadata.views(TOPIC):
        assert victim not in view.brokers
    heal(nemesis, fault)
    assert victim in cluster.nodes and SPARE in cluster.spares
    restored = cluster.metadata.placements()
    for placement in held:
        assert restored[placement].replicas == placed[placement].replicas, (placement, restored[placement])
    assert all(SPARE not in state.replicas for state in restored.values())
