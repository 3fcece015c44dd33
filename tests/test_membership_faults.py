"""`add-broker` and `remove-broker`: the replica lists a drain asks for, and the runs each is refused for
before anything starts (no spare to add, nowhere to move a drained broker's replicas, a quorum that would
lose its majority, a target of several brokers); and the runs `--controllers` is refused for."""

from __future__ import annotations

import random
import re
from collections.abc import Callable

import pytest

from kchaos.harness.cluster import KafkaCluster
from kchaos.harness.metadata import PartitionState
from kchaos.model.config import ConfigError, load_config
from kchaos.model.fault_spec import parse_spec
from kchaos.nemesis.fault import TargetUnresolved
from kchaos.nemesis.membership import Placement, RemoveBroker, drain_plan
from kchaos.nemesis.quorum import advertised_with_controller, quorum_members


def state(replicas: tuple[int, ...]) -> PartitionState:
    return PartitionState(0, replicas[0], replicas, replicas)


def drawn(seed: int) -> Callable[[Placement, list[int]], int]:
    """A drain's choice of the broker taking each replica, drawn as the fault draws it."""
    rng = random.Random(seed)
    return lambda placement, free: rng.choice(free)


PLACED = {
    ("kchaos", 0): state((1, 2, 3)),
    ("kchaos", 1): state((2, 3, 4)),
    ("__consumer_offsets", 7): state((4, 1, 2)),
    ("other", 0): state((1, 2)),
}


def test_a_drain_moves_every_replica_of_the_node_to_a_member_without_one_in_its_place() -> None:
    plan = drain_plan(PLACED, 4, [1, 2, 3], {}, drawn(1))
    assert plan == {("kchaos", 1): (2, 3, 1), ("__consumer_offsets", 7): (3, 1, 2)}


def test_a_drain_returns_the_partitions_it_was_given_to_their_old_lists() -> None:
    back = {("kchaos", 1): (2, 3, 1)}
    plan = drain_plan(PLACED, 4, [1, 2, 3], back, drawn(1))
    assert plan[("kchaos", 1)] == (2, 3, 1)
    assert plan[("__consumer_offsets", 7)] == (3, 1, 2)


def test_a_partition_with_a_replica_on_every_member_is_left_for_the_caller() -> None:
    plan = drain_plan(PLACED, 1, [1, 2, 3], {}, drawn(1))
    assert plan == {("other", 0): (3, 2), ("__consumer_offsets", 7): (4, 3, 2)}  # not kchaos-0


def test_adding_a_broker_needs_a_spare() -> None:
    with pytest.raises(ConfigError, match=r"add-broker: starts a spare broker .* pass --spare-brokers 1"):
        load_config(nemesis="add-broker", duration=60)
    assert load_config(nemesis="add-broker:replica=leader", spare_brokers=1, duration=60).spare_brokers == 1
    with pytest.raises(ConfigError, match=r"add-broker: replica must be one of follower, leader"):
        load_config(nemesis="add-broker:replica=all", spare_brokers=1, duration=60)


def test_removing_a_broker_needs_somewhere_for_its_replicas() -> None:
    with pytest.raises(ConfigError, match=r"every other broker holds one; pass --spare-brokers 1"):
        load_config(nemesis="remove-broker", duration=60)
    assert load_config(nemesis="remove-broker", spare_brokers=1, duration=60).nemesis == ("remove-broker",)
    # Four brokers, three replicas: the other three take them without a spare.
    assert load_config(nemesis="remove-broker:target=2", brokers=4, duration=60).brokers == 4


def test_removing_a_combined_node_of_a_two_node_quorum_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"leaves the quorum without a majority; use --brokers 3"):
        load_config(
            nemesis="remove-broker", brokers=2, replication_factor=1, min_insync_replicas=1, spare_brokers=1,
            duration=60,
        )  # fmt: skip


@pytest.mark.parametrize("target", ["all", "majority", "1+2"])
def test_a_removal_drains_one_broker(target: str) -> None:
    with pytest.raises(
        ConfigError, match=re.escape(f"remove-broker: target={target} may name several nodes")
    ):
        load_config(nemesis=f"remove-broker:target={target}", spare_brokers=1, duration=60)


def test_spare_brokers_are_bounded() -> None:
    with pytest.raises(ConfigError, match=r"spare"):
        load_config(spare_brokers=4)


def test_dedicated_controllers_are_kraft_only_and_their_ids_are_targets() -> None:
    with pytest.raises(ConfigError, match=r"--metadata zookeeper has no KRaft quorum; use --metadata kraft"):
        load_config(controllers=3, kafka_version="3.9.2", metadata="zookeeper")
    config = load_config(controllers=3, nemesis="kill:target=101,isolate:target=controllers", duration=60)
    assert config.controllers == 3
    with pytest.raises(ConfigError, match=r"names node 101, but the cluster has 3 broker\(s\)"):
        load_config(nemesis="kill:target=101", duration=60)
    with pytest.raises(ConfigError, match=r"controllers are the KRaft quorum's voters, and a ZooKeeper-mode"):
        load_config(
            nemesis="kill:target=controllers", kafka_version="3.9.2", metadata="zookeeper", duration=60
        )


def test_removing_a_broker_beside_dedicated_controllers_leaves_the_quorum_alone() -> None:
    config = load_config(
        nemesis="remove-broker", brokers=2, replication_factor=1, min_insync_replicas=1, spare_brokers=1,
        controllers=3, duration=60,
    )  # fmt: skip
    assert config.nemesis == ("remove-broker",)


def test_the_quorum_s_voters_and_observers_are_read_from_its_status() -> None:
    status = (
        "ClusterId:              2OQaeD4CShmDZnyF9ur9bw\nLeaderId:               101\n"
        'CurrentVoters:          [{"id": 101, "directoryId": "ZSu6", "endpoints": ["CONTROLLER://k:9093"]}, '
        '{"id": 102, "directoryId": "inEM", "endpoints": ["CONTROLLER://kafka-102:9093"]}]\n'
        'CurrentObservers:       [{"id": 1, "directoryId": "0raL"}, {"id": 103, "directoryId": "GSIY"}]\n'
    )
    assert quorum_members(status) == ({101, 102}, {1, 103})
    assert quorum_members("Error: the quorum could not be described\n") == (set(), set())


def test_add_controller_reads_a_configuration_advertising_the_controller_listener() -> None:
    combined = "node.id=2\nadvertised.listeners=CLIENT://127.0.0.1:31002,INTERNAL://kafka-2:19092\nx=y\n"
    assert advertised_with_controller(combined, "kafka-2") == (
        "node.id=2\nadvertised.listeners=CLIENT://127.0.0.1:31002,INTERNAL://kafka-2:19092,"
        "CONTROLLER://kafka-2:9093\nx=y\n"
    )
    dedicated = "node.id=101\nprocess.roles=controller\n"
    assert advertised_with_controller(dedicated, "kafka-101") == (
        "node.id=101\nprocess.roles=controller\nadvertised.listeners=CONTROLLER://kafka-101:9093\n"
    )


def test_removing_a_voter_needs_a_kraft_quorum_of_two() -> None:
    with pytest.raises(ConfigError, match=r"needs a KRaft cluster of 2 voters or more"):
        load_config(nemesis="remove-voter", kafka_version="3.9.2", metadata="zookeeper", duration=60)
    with pytest.raises(ConfigError, match=r"remove-voter: target=all may name several nodes"):
        load_config(nemesis="remove-voter:target=all", duration=60)
    with pytest.raises(ConfigError, match=r"remove-voter needs Kafka 3\.9 or later"):
        load_config(nemesis="remove-voter", kafka_version="3.8.1", duration=60)
    assert load_config(nemesis="remove-voter", controllers=3, duration=60).nemesis == ("remove-voter",)


def test_a_dedicated_controller_is_no_broker_to_remove() -> None:
    cluster = KafkaCluster(run_id="m", image="unused", sidecar_image="unused", controller_size=3)
    cluster.controllers[101] = object()  # type: ignore[assignment]  # a controller the target names
    spec = parse_spec("remove-broker:target=101")
    fault = RemoveBroker(cluster, "kchaos", 0, "remove-broker#1", spec, random.Random(0))
    with pytest.raises(TargetUnresolved, match=r"node 101 is no broker \(a dedicated controller\)"):
        fault.start()
    assert not fault.active


def test_beside_dedicated_controllers_a_broker_is_removed_and_a_controller_unvoted() -> None:
    with pytest.raises(ConfigError, match=r"target=controller is a dedicated controller .* holds no replica"):
        load_config(nemesis="remove-broker:target=controller", controllers=3, spare_brokers=1, duration=60)
    with pytest.raises(ConfigError, match=r"target=leader is a broker, and with --controllers 3 only"):
        load_config(nemesis="remove-voter:target=leader", controllers=3, duration=60)
    assert load_config(nemesis="remove-voter:target=102", controllers=3, duration=60).controllers == 3


def test_growing_the_quorum_needs_a_spare_controller_and_changing_it_a_quorum_that_is_or_can_be_dynamic() -> (
    None
):
    with pytest.raises(
        ConfigError, match=r"add-voter: makes a spare controller a voter.*--spare-controllers 1"
    ):
        load_config(nemesis="add-voter", controllers=3, duration=60)
    with pytest.raises(ConfigError, match=r"spare_controllers: .* add --controllers 3"):
        load_config(spare_controllers=1, duration=60)
    with pytest.raises(
        ConfigError, match=r"cannot make a static one dynamic \(Kafka 4\.1 can\): pass --quorum"
    ):
        load_config(nemesis="remove-voter", kafka_version="3.9.2", controllers=3, duration=60)
    with pytest.raises(ConfigError, match=r"--quorum dynamic needs Kafka 3\.9 or later"):
        load_config(quorum="dynamic", kafka_version="3.8.1", duration=60)
    with pytest.raises(ConfigError, match=r"--metadata zookeeper has none"):
        load_config(quorum="dynamic", kafka_version="3.9.2", metadata="zookeeper", duration=60)
    grown = load_config(
        nemesis="add-voter", kafka_version="3.9.2", quorum="dynamic", controllers=3, spare_controllers=1,
        duration=60,
    )  # fmt: skip
    assert (grown.nemesis, grown.spare_controllers) == (("add-voter",), 1)
    assert (
        load_config(nemesis="remove-voter", controllers=3, duration=60).quorum == "static"
    )  # 4.3.1 upgrades
