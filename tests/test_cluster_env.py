"""What each node's broker is told, in each metadata mode: KRaft nodes form a quorum over a CONTROLLER
listener; ZooKeeper-mode brokers register in ZooKeeper by broker id and have no controller listener, while
both advertise CLIENT on loopback and INTERNAL by their name on the run's network."""

from __future__ import annotations

from kchaos.harness.cluster import KafkaCluster
from kchaos.harness.cluster_shape import ClusterShape
from kchaos.harness.node_env import kafka_env
from kchaos.harness.zookeeper import assignment_in, registered_in


def env_of(mode: str) -> dict[str, str]:
    return kafka_env(ClusterShape(metadata_mode=mode), 2, 31002, "cluster-id")  # type: ignore[arg-type]


def test_a_kraft_node_is_broker_and_controller_of_a_three_voter_quorum() -> None:
    env = env_of("kraft")
    assert env["KAFKA_NODE_ID"] == "2" and env["CLUSTER_ID"] == "cluster-id"
    assert env["KAFKA_PROCESS_ROLES"] == "broker,controller"
    assert env["KAFKA_CONTROLLER_QUORUM_VOTERS"] == "1@kafka-1:9093,2@kafka-2:9093,3@kafka-3:9093"
    assert (
        env["KAFKA_LISTENERS"] == "CLIENT://0.0.0.0:9092,INTERNAL://0.0.0.0:19092,CONTROLLER://0.0.0.0:9093"
    )
    assert (
        env["KAFKA_LISTENER_SECURITY_PROTOCOL_MAP"]
        == "CLIENT:PLAINTEXT,INTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT"
    )
    assert "KAFKA_ZOOKEEPER_CONNECT" not in env and "KAFKA_BROKER_ID" not in env


def test_a_zookeeper_mode_broker_registers_by_id_and_has_no_controller_listener() -> None:
    env = env_of("zookeeper")
    assert (env["KAFKA_BROKER_ID"], env["KAFKA_ZOOKEEPER_CONNECT"]) == ("2", "zookeeper:2181")
    assert env["KAFKA_LISTENERS"] == "CLIENT://0.0.0.0:9092,INTERNAL://0.0.0.0:19092"
    assert env["KAFKA_LISTENER_SECURITY_PROTOCOL_MAP"] == "CLIENT:PLAINTEXT,INTERNAL:PLAINTEXT"
    assert env["KAFKA_INTER_BROKER_LISTENER_NAME"] == "INTERNAL"
    assert not {"CLUSTER_ID", "KAFKA_NODE_ID", "KAFKA_PROCESS_ROLES", "KAFKA_CONTROLLER_QUORUM_VOTERS",
                "KAFKA_CONTROLLER_LISTENER_NAMES"} & set(env)  # fmt: skip


def test_both_modes_advertise_the_client_port_on_loopback_and_internal_by_name() -> None:
    for mode in ("kraft", "zookeeper"):
        assert (
            env_of(mode)["KAFKA_ADVERTISED_LISTENERS"] == "CLIENT://127.0.0.1:31002,INTERNAL://kafka-2:19092"
        )


def test_beside_dedicated_controllers_a_broker_is_a_broker_only_and_a_controller_serves_no_clients() -> None:
    cluster = KafkaCluster(run_id="env", image="unused", sidecar_image="unused", controller_size=3)
    voters = "101@kafka-101:9093,102@kafka-102:9093,103@kafka-103:9093"
    broker = kafka_env(cluster.shape, 2, 31002, "cluster-id")
    assert broker["KAFKA_PROCESS_ROLES"] == "broker" and broker["KAFKA_CONTROLLER_QUORUM_VOTERS"] == voters
    assert broker["KAFKA_LISTENERS"] == "CLIENT://0.0.0.0:9092,INTERNAL://0.0.0.0:19092"
    assert broker["KAFKA_LISTENER_SECURITY_PROTOCOL_MAP"].endswith(",CONTROLLER:PLAINTEXT")  # to reach them
    controller = kafka_env(cluster.shape, 102, 31003, "cluster-id")
    assert (controller["KAFKA_NODE_ID"], controller["KAFKA_PROCESS_ROLES"]) == ("102", "controller")
    assert controller["KAFKA_LISTENERS"] == "CONTROLLER://0.0.0.0:9093"
    assert controller["KAFKA_LISTENER_SECURITY_PROTOCOL_MAP"] == "CONTROLLER:PLAINTEXT"
    assert (
        "KAFKA_ADVERTISED_LISTENERS" not in controller
        and "KAFKA_INTER_BROKER_LISTENER_NAME" not in controller
    )
    assert cluster.voters == (101, 102, 103)


def test_a_spare_broker_is_a_broker_only_of_the_combined_nodes_quorum() -> None:
    spare = kafka_env(ClusterShape(spare_size=1), 4, 31004, "cluster-id")
    assert spare["KAFKA_PROCESS_ROLES"] == "broker"
    assert spare["KAFKA_CONTROLLER_QUORUM_VOTERS"] == "1@kafka-1:9093,2@kafka-2:9093,3@kafka-3:9093"
    assert "CONTROLLER://" not in spare["KAFKA_LISTENERS"]


def test_a_spare_controller_knows_the_quorum_only_by_its_bootstrap_servers() -> None:
    """It must start as an observer (the entrypoint formats it with no initial voters), not claim a vote."""
    cluster = KafkaCluster(
        run_id="env", image="unused", sidecar_image="unused", controller_size=3, spare_controller_size=1
    )
    assert cluster.spare_controller_ids == (104,) and cluster.voters == (101, 102, 103)
    spare = kafka_env(cluster.shape, 104, 31104, "cluster-id")
    assert spare["KAFKA_PROCESS_ROLES"] == "controller"
    assert (
        spare["KAFKA_CONTROLLER_QUORUM_BOOTSTRAP_SERVERS"] == "kafka-101:9093,kafka-102:9093,kafka-103:9093"
    )
    assert "KAFKA_CONTROLLER_QUORUM_VOTERS" not in spare and "KCHAOS_INITIAL_CONTROLLERS" not in spare
    voter = kafka_env(cluster.shape, 101, 31101, "cluster-id")
    assert (
        voter["KAFKA_CONTROLLER_QUORUM_VOTERS"] == "101@kafka-101:9093,102@kafka-102:9093,103@kafka-103:9093"
    )


def test_in_a_dynamic_quorum_every_node_bootstraps_and_the_voters_are_formatted_with_the_same_list() -> None:
    combined = ClusterShape(dynamic_quorum=True)
    directory_ids = {1: "dir-one", 2: "dir-two", 3: "dir-three"}
    envs = [kafka_env(combined, n, 31000 + n, "cluster-id", directory_ids=directory_ids) for n in (1, 2, 3)]
    for env in envs:
        assert env["KAFKA_CONTROLLER_QUORUM_BOOTSTRAP_SERVERS"] == "kafka-1:9093,kafka-2:9093,kafka-3:9093"
        assert "KAFKA_CONTROLLER_QUORUM_VOTERS" not in env
        assert env["KCHAOS_INITIAL_CONTROLLERS"] == (
            "1@kafka-1:9093:dir-one,2@kafka-2:9093:dir-two,3@kafka-3:9093:dir-three"
        )
    brokers = ClusterShape(controller_size=3, dynamic_quorum=True)
    directory_ids = {101: "a", 102: "b", 103: "c"}
    broker = kafka_env(brokers, 1, 31001, "cluster-id", directory_ids=directory_ids)
    assert "KCHAOS_INITIAL_CONTROLLERS" not in broker  # no voter


def test_the_replica_assignment_is_read_from_zookeepers_shell_output() -> None:
    printed = (
        "Connecting to 127.0.0.1:2181\n\nWATCHER::\n\nWatchedEvent state:SyncConnected type:None path:null\n"
        '{"version":1,"partitions":{"1":[3,1,2],"0":[2,3,1]}}\ncZxid = 0x6\ndataLength = 52\n'
    )
    assert assignment_in(printed) == {0: (2, 3, 1), 1: (3, 1, 2)}
    assert assignment_in("Node does not exist: /brokers/topics/nope\n") is None


def test_the_registered_brokers_are_read_from_the_shells_listing() -> None:
    """A killed broker's znode stays until its session expires; the fault restarting it waits on this list."""
    printed = (
        "Connecting to 127.0.0.1:2181\n\nWATCHER::\n\nWatchedEvent state:SyncConnected type:None path:null\n"
    )
    assert registered_in(printed + "[1, 3]\n") == frozenset({1, 3})
    assert registered_in(printed + "[]\n") == frozenset()
    assert registered_in("Node does not exist: /brokers/ids\n") is None


def test_the_cluster_starts_its_controllers_then_its_brokers_and_holds_the_spares_back() -> None:
    """The order a seeded fault picks its target from: dedicated controllers first, then brokers by id."""
    shape = ClusterShape(size=3, spare_size=1, controller_size=3, spare_controller_size=1)
    assert shape.members == (101, 102, 103, 1, 2, 3) and shape.spares == (4, 104)
    assert ClusterShape(size=2).members == (1, 2) and ClusterShape(size=2).spares == ()
    assert [shape.roles(n) for n in (1, 4, 101, 104)] == ["broker", "broker", "controller", "controller"]
