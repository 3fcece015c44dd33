"""What each node's Kafka is told when it starts: the `KAFKA_*` environment its image turns into its
configuration, and the cluster id its storage is formatted with.

The image's entrypoint writes `server.properties` from these variables (the apache/kafka image's contract,
which our image keeps: `kchaos/compose/kafka/entrypoint.sh`), so this is where a node's listeners, its
roles in the quorum, its id and the run's broker settings are decided. It is plain text from the
cluster's shape (`kchaos.harness.cluster_shape`), so it is tested without starting a container.
"""

from __future__ import annotations

import base64
import uuid
from collections.abc import Callable, Mapping

from kchaos.harness.cluster_error import ClusterError
from kchaos.harness.cluster_shape import ClusterShape
from kchaos.harness.kafka_node import CLIENT_PORT, CONTROLLER_PORT, INTERNAL_PORT
from kchaos.harness.zookeeper import zookeeper_broker_env
from kchaos.model.kafka_properties import PROPERTY_KEY


def new_cluster_id(random_uuid: Callable[[], uuid.UUID] = uuid.uuid4) -> str:
    """A KRaft cluster id as Kafka's own `Uuid.randomUuid` makes them: URL-safe base64 without padding, and
    drawn again while it holds a dash. `kafka-storage format --cluster-id -x...` takes a leading dash for
    an option and refuses to format, so one start in 64 failed (KAFKA-13741); Kafka now rejects any dash
    (KAFKA-20072), which keeps ids easy to copy too."""
    while True:
        cluster_id = base64.urlsafe_b64encode(random_uuid().bytes).decode().rstrip("=")
        if "-" not in cluster_id:
            return cluster_id


def broker_env_name(key: str) -> str:
    """The `KAFKA_*` variable that carries broker property `key` into the image, under the apache/kafka
    image's contract: '_' becomes '__', '-' becomes '___', '.' becomes '_', then upper case. Underscores
    are doubled first, so the ones a dash or a dot turns into are not doubled again."""
    if not PROPERTY_KEY.fullmatch(key):  # the configuration refused it already
        raise ClusterError(
            f"broker property {key!r} cannot be passed through KAFKA_* environment variables: write it "
            "in lower case, with no two of '.', '_', '-' in a row"
        )
    return "KAFKA_" + key.replace("_", "__").replace("-", "___").replace(".", "_").upper()


def docker_host(node_id: int) -> str:
    """Node `node_id`'s name on the run's Docker network (`kchaos.harness.docker_node`)."""
    return f"kafka-{node_id}"


def metadata_env(
    shape: ClusterShape,
    node_id: int,
    cluster_id: str,
    directory_ids: Mapping[int, str],
    host: Callable[[int], str] = docker_host,
) -> dict[str, str]:
    """What the metadata mode sets: a KRaft node's roles and quorum, or a broker's id and ZooKeeper.
    `directory_ids`: each voter's metadata log dir id, for a dynamic quorum's voters to be formatted with;
    `host`: how the nodes reach node N."""
    if shape.metadata_mode == "zookeeper":
        return zookeeper_broker_env(node_id)
    quorum = (
        # A node of a dynamic quorum, or a spare controller joining one, knows the voters only as where
        # to ask; the image's entrypoint formats a voter with the initial voters, a spare controller with
        # none (it starts an observer).
        {
            "KAFKA_CONTROLLER_QUORUM_BOOTSTRAP_SERVERS": ",".join(
                f"{host(n)}:{CONTROLLER_PORT}" for n in shape.voters
            )
        }
        if shape.dynamic_quorum or node_id in shape.spare_controller_ids
        else {
            "KAFKA_CONTROLLER_QUORUM_VOTERS": ",".join(
                f"{n}@{host(n)}:{CONTROLLER_PORT}" for n in shape.voters
            )
        }
    )
    if shape.dynamic_quorum and node_id in shape.voters:
        quorum["KCHAOS_INITIAL_CONTROLLERS"] = ",".join(
            f"{n}@{host(n)}:{CONTROLLER_PORT}:{directory_ids[n]}" for n in shape.voters
        )
    return {
        "CLUSTER_ID": cluster_id,
        "KAFKA_NODE_ID": str(node_id),
        "KAFKA_PROCESS_ROLES": shape.roles(node_id),
        **quorum,
        "KAFKA_CONTROLLER_LISTENER_NAMES": "CONTROLLER",
    }


def kafka_env(
    shape: ClusterShape,
    node_id: int,
    client_port: int,
    cluster_id: str,
    *,
    directory_ids: Mapping[int, str] | None = None,
    heap: str = "256m",
    broker_config: Mapping[str, str] | None = None,
    host: Callable[[int], str] = docker_host,
    client_host: str = "127.0.0.1",
) -> dict[str, str]:
    """The environment node `node_id` of a cluster of `shape` starts with: its listeners (clients at
    `client_host`:`client_port`, loopback in Docker; the other nodes at `host(n)`), its metadata settings,
    a JVM sized for a shared two-core machine with `heap`, and the run's `broker_config` on top."""
    roles = shape.roles(node_id) if shape.metadata_mode == "kraft" else "broker"
    listeners = {} if roles == "controller" else {"CLIENT": CLIENT_PORT, "INTERNAL": INTERNAL_PORT}
    if "controller" in roles:
        listeners["CONTROLLER"] = CONTROLLER_PORT
    internal_rf = str(min(3, shape.size))
    # A broker-only KRaft node (a spare, or beside dedicated controllers) listens on no controller port,
    # yet reaches the quorum's.
    protocols = [*listeners, *(["CONTROLLER"] if shape.metadata_mode == "kraft" else [])]
    advertised = (
        {}
        if roles == "controller"  # a controller serves no clients and no replication
        else {
            "KAFKA_ADVERTISED_LISTENERS": f"CLIENT://{client_host}:{client_port},"
            f"INTERNAL://{host(node_id)}:{INTERNAL_PORT}",
            "KAFKA_INTER_BROKER_LISTENER_NAME": "INTERNAL",
        }
    )
    env = {
        **metadata_env(shape, node_id, cluster_id, directory_ids or {}, host),
        "KAFKA_LISTENERS": ",".join(f"{name}://0.0.0.0:{port}" for name, port in listeners.items()),
        **advertised,
        "KAFKA_LISTENER_SECURITY_PROTOCOL_MAP": ",".join(
            f"{name}:PLAINTEXT" for name in dict.fromkeys(protocols)
        ),
        "KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR": internal_rf,
        "KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR": internal_rf,
        "KAFKA_TRANSACTION_STATE_LOG_MIN_ISR": "1",
        "KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS": "0",
        "KAFKA_AUTO_CREATE_TOPICS_ENABLE": "false",
        "KAFKA_HEAP_OPTS": f"-Xms{heap} -Xmx{heap}",
        # Two cores run the whole cluster: keep the JVMs from sizing thread pools for a bigger machine.
        "KAFKA_JVM_PERFORMANCE_OPTS": "-XX:+UseSerialGC -XX:TieredStopAtLevel=1 "
        "-XX:+ExitOnOutOfMemoryError "
        "-Djava.awt.headless=true -XX:ActiveProcessorCount=2",
        "KAFKA_NUM_NETWORK_THREADS": "2",
        "KAFKA_NUM_IO_THREADS": "2",
        "KAFKA_NUM_RECOVERY_THREADS_PER_DATA_DIR": "1",
    }
    for key, value in (broker_config or {}).items():
        env[broker_env_name(key)] = value
    return env
