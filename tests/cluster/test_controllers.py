"""Dedicated KRaft controllers (`--controllers`): the quorum on nodes of its own, as production clusters run
it, so a fault of the quorum hits no broker.

One cluster of three brokers and three controllers (and a spare controller outside the quorum) serves the
module, with acks=1 writes flowing all along.
What is asserted is what Kafka shows: who leads the quorum (asked of the controllers), who leads the test
partition and which brokers the others count registered.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from confluent_kafka import Producer

from kchaos.harness.cluster import KafkaCluster
from kchaos.model.fault_targets import FIRST_CONTROLLER_ID
from kchaos.model.quorum_mode import UPGRADE_SINCE
from kchaos.model.releases import Release
from kchaos.nemesis.schedule import Nemesis
from kchaos.runner.pytest_plugin import ClusterFactory
from tests.cluster.fault_steps import TOPIC, agreed_leader, begin, heal, steady_writes, wait_effect

pytestmark = pytest.mark.cluster

CONTROLLERS = (FIRST_CONTROLLER_ID, FIRST_CONTROLLER_ID + 1, FIRST_CONTROLLER_ID + 2)
SPARE_CONTROLLER = FIRST_CONTROLLER_ID + 3


@pytest.fixture(scope="module")
def kafka_cluster(kafka_cluster_factory: ClusterFactory) -> Iterator[KafkaCluster]:
    """Static, as most clusters run, where the release can make it dynamic for the voter faults (4.1 on);
    formed dynamic before that (3.9, 4.0)."""
    release = Release.parse(kafka_cluster_factory.options.kafka_version).parts[:2]
    with kafka_cluster_factory.started(
        "controllers", controllers=3, spare_controllers=1, dynamic_quorum=release < UPGRADE_SINCE
    ) as cluster:
        yield cluster


@pytest.fixture(scope="module", autouse=True)
def background_writes(kafka_cluster: KafkaCluster) -> Iterator[None]:
    with steady_writes(kafka_cluster):
        yield


def acknowledged_write(cluster: KafkaCluster) -> bool:
    """One acks=all write to the test topic, acknowledged within 10 s."""
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all", "log_level": 0,
                         "message.timeout.ms": 10000})  # fmt: skip
    outcome: list[object] = []
    producer.produce(TOPIC, b"x", partition=0, on_delivery=lambda err, _msg: outcome.append(err))
    producer.flush(15)
    return outcome == [None]


def test_the_brokers_are_brokers_only_and_the_quorum_is_led_by_a_controller(
    kafka_cluster: KafkaCluster,
) -> None:
    cluster = kafka_cluster
    assert set(cluster.controllers) == set(CONTROLLERS) and cluster.voters == CONTROLLERS
    assert cluster.metadata.active_controller() in CONTROLLERS
    for view in cluster.metadata.views(TOPIC):
        assert view.brokers == {1, 2, 3}, view  # the controllers serve no client


def test_killing_the_quorum_leader_elects_another_controller_and_moves_no_partition(
    kafka_cluster: KafkaCluster, nemesis: Nemesis
) -> None:
    cluster = kafka_cluster
    leader = agreed_leader(cluster)
    fault = begin(nemesis, "kill:target=controller")
    (killed,) = fault.nodes
    assert killed in CONTROLLERS
    wait_effect(fault)
    assert cluster.metadata.active_controller(exclude=[killed]) in set(CONTROLLERS) - {killed}
    assert agreed_leader(cluster) == leader  # no broker went anywhere
    assert acknowledged_write(cluster)
    heal(nemesis, fault)


def test_an_isolated_quorum_leader_is_replaced(kafka_cluster: KafkaCluster, nemesis: Nemesis) -> None:
    fault = begin(nemesis, "isolate:target=controller")
    (isolated,) = fault.nodes
    assert isolated in CONTROLLERS
    wait_effect(fault)
    assert kafka_cluster.metadata.active_controller(exclude=[isolated]) != isolated
    assert acknowledged_write(kafka_cluster)
    heal(nemesis, fault)


def test_with_every_controller_down_the_brokers_keep_serving_what_they_lead(
    kafka_cluster: KafkaCluster, nemesis: Nemesis
) -> None:
    """No quorum: nobody can fence a broker or elect a leader, but the leaders keep taking acks=all writes
    with their ISR whole; healing restarts the controllers and the quorum elects a leader again."""
    fault = begin(nemesis, "kill:target=controllers")
    assert fault.nodes == CONTROLLERS
    assert all(kafka_cluster.controllers[n].state == "killed" for n in CONTROLLERS)
    assert acknowledged_write(kafka_cluster)
    heal(nemesis, fault)
    assert kafka_cluster.metadata.active_controller() in CONTROLLERS


def test_a_voter_removed_from_the_quorum_observes_until_it_is_added_back(
    kafka_cluster: KafkaCluster, nemesis: Nemesis
) -> None:
    """KIP-853 on a quorum started static: the fault makes it dynamic (kraft.version=1), removes the quorum
    leader, which resigns and goes on as an observer, and adds it back on stop. A release that cannot make
    a static quorum dynamic skips the fault in the tool's words."""
    fault = nemesis.begin("remove-voter")
    if fault is None:
        assert "cannot make its static quorum dynamic" in nemesis.skipped[-1], nemesis.skipped
        pytest.skip(nemesis.skipped[-1])
    (removed,) = fault.nodes
    assert removed in CONTROLLERS
    wait_effect(fault)
    voters, observers = fault._members()  # type: ignore[attr-defined]
    assert removed in observers and voters == set(CONTROLLERS) - {removed}
    assert kafka_cluster.metadata.active_controller(exclude=[removed]) in voters
    assert acknowledged_write(kafka_cluster)
    heal(nemesis, fault)
    assert fault._members()[0] == set(CONTROLLERS)  # type: ignore[attr-defined]


def test_a_spare_controller_added_to_the_quorum_votes_until_it_is_taken_out_again(
    kafka_cluster: KafkaCluster, nemesis: Nemesis
) -> None:
    """KIP-853 growing the quorum: the spare controller, which knows the quorum only by its bootstrap
    servers, starts as an observer; add-controller makes it a fourth voter while writes go on. On stop
    remove-controller takes it out and it shuts down, a spare again, the quorum back to the three."""
    fault = nemesis.begin("add-voter")
    if fault is None:
        assert "cannot make its static quorum dynamic" in nemesis.skipped[-1], nemesis.skipped
        pytest.skip(nemesis.skipped[-1])
    assert fault.nodes == (SPARE_CONTROLLER,)
    wait_effect(fault)
    voters, observers = fault._members()  # type: ignore[attr-defined]
    assert voters == {*CONTROLLERS, SPARE_CONTROLLER} and SPARE_CONTROLLER not in observers
    assert acknowledged_write(kafka_cluster)
    heal(nemesis, fault)
    assert fault._members()[0] == set(CONTROLLERS)  # type: ignore[attr-defined]
    assert SPARE_CONTROLLER in kafka_cluster.spares and SPARE_CONTROLLER not in kafka_cluster.controllers
