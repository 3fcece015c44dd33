"""A real multi-node Kafka cluster in Docker, started with Testcontainers: KRaft nodes that are each broker
and controller, KRaft brokers beside dedicated controllers (nodes of their own, as production clusters run
the quorum), or brokers with one ZooKeeper node (`kchaos.harness.zookeeper`). Spare brokers can be held
outside the cluster for the membership faults to start.

Each node is two containers. A small *sidecar* (`kchaos.harness.sidecar`) owns the node's network namespace
(on the run's network under the node's name, the client port published on 127.0.0.1, NET_ADMIN for the
nemesis's iptables rules) and the Kafka container joins it: killing and restarting Kafka keeps the node's
address, port and rules, as a broker crash on a real host would, and the Kafka image needs no network tools.
"""

from __future__ import annotations

import base64
import re
import socket
import uuid
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing, suppress
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Literal

import docker
import docker.errors
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic
from docker.models.containers import Container
from testcontainers.core.container import DockerContainer
from testcontainers.core.network import Network

from kchaos.harness import container_process
from kchaos.harness.cluster_error import ClusterError
from kchaos.harness.labels import labels_for, sweep
from kchaos.harness.metadata import ClusterMetadata
from kchaos.harness.reaper import reaper_off
from kchaos.harness.sidecar import in_namespace_of, network_sidecar, sidecar_ip
from kchaos.harness.watchdog import guard
from kchaos.harness.zookeeper import ZooKeeperNode, start_zookeeper, zookeeper_broker_env
from kchaos.model.fault_targets import FIRST_CONTROLLER_ID
from kchaos.model.releases import MetadataMode
from kchaos.model.waiting import wait_until

CLIENT_PORT = 9092
INTERNAL_PORT = 19092
CONTROLLER_PORT = 9093
READY_TOPIC = "__kchaos_ready"
#: How often a starting cluster is asked whether it is ready: every run waits on these polls before its
#: first write, and a metadata request is cheap next to a broker's start.
READY_POLL_S = 0.2
#: How long a readiness poll waits for one node's metadata answer.
READY_ANSWER_S = 1.0

NodeState = Literal["created", "running", "killed", "stopped", "paused"]


#: How a node runs a Kafka tool class with the arguments "$@": our image's `kafka-class`, else the
#: distribution's `kafka-run-class.sh` (as in apache/kafka).
_TOOL = (
    'if command -v kafka-class >/dev/null; then kafka-class "$@"; '
    'else /opt/kafka/bin/kafka-run-class.sh "$@"; fi'
)

#: A Java stack trace's frame lines ("\tat ...", "... 3 more"), which say where, not what.
STACK_FRAME = re.compile(r"^\s+(at |\.\.\. \d+ more)")


def free_port() -> int:
    """A free loopback port, chosen before start so a restarted node advertises the same address."""
    with closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def new_cluster_id(random_uuid: Callable[[], uuid.UUID] = uuid.uuid4) -> str:
    """A KRaft cluster id as Kafka's own `Uuid.randomUuid` makes them: URL-safe base64 without padding, and
    drawn again while it holds a dash. `kafka-storage format --cluster-id -x...` takes a leading dash for
    an option and refuses to format, so one start in 64 failed (KAFKA-13741); Kafka now rejects any dash
    (KAFKA-20072), which keeps ids easy to copy too."""
    while True:
        cluster_id = base64.urlsafe_b64encode(random_uuid().bytes).decode().rstrip("=")
        if "-" not in cluster_id:
            return cluster_id


#: A broker property name the image's environment contract can carry there and back: lower case, and no
#: two of '.', '_', '-' in a row ("a_.b" and "a._b" would both arrive as "a-b").
_ENV_SAFE_KEY = re.compile(r"[a-z0-9]+(?:[._-][a-z0-9]+)*")


def broker_env_name(key: str) -> str:
    """The `KAFKA_*` variable that carries broker property `key` into the image, under the apache/kafka
    image's contract: '_' becomes '__', '-' becomes '___', '.' becomes '_', then upper case. Underscores
    are doubled first, so the ones a dash or a dot turns into are not doubled again."""
    if not _ENV_SAFE_KEY.fullmatch(key):
        raise ClusterError(
            f"broker property {key!r} cannot be passed through KAFKA_* environment variables: write it "
            "in lower case, with no two of '.', '_', '-' in a row"
        )
    return "KAFKA_" + key.replace("_", "__").replace("-", "___").replace(".", "_").upper()


@dataclass
class KafkaNode:
    """One Kafka node (with KRaft a controller too). `state` is what the harness last did to its process."""

    node_id: int
    hostname: str
    client_port: int
    sidecar: DockerContainer
    kafka: DockerContainer
    state: NodeState = "created"
    ip: str = ""

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.client_port}"

    @property
    def controller_address(self) -> str:
        """Where the node's KRaft controller listens, from inside the cluster's network (KRaft only)."""
        return f"{self.hostname}:{CONTROLLER_PORT}"

    def _kafka_container(self) -> Container:
        return self.kafka.get_wrapped_container()

    def kill(self) -> None:
        """SIGKILL the broker: no controlled shutdown, no flush; the page cache survives, as in a crash."""
        container_process.kill(self.kafka)
        self.state = "killed"

    def terminate(self, timeout: int = 60) -> None:
        """SIGTERM and wait: a controlled shutdown, in which the broker hands its leaderships over first."""
        container_process.terminate(self.kafka, timeout)
        self.state = "stopped"

    def pause(self) -> None:
        """Freezes every process of the broker (cgroup freezer): alive but silent, like a long GC pause."""
        container_process.pause(self.kafka)
        self.state = "paused"

    def restart(self) -> None:
        """Brings the broker back, whatever was done to it; a restarted log is intact, so Kafka recovers."""
        container_process.resume(self.kafka)
        self.state = "running"

    def sidecar_exec(self, command: Sequence[str]) -> str:
        """Runs a command in the node's network namespace (with NET_ADMIN); raises with its output."""
        result = self.sidecar.get_wrapped_container().exec_run(list(command))
        raw = result.output if isinstance(result.output, bytes) else b""
        output = raw.decode(errors="replace")
        if result.exit_code != 0:
            raise ClusterError(
                f"node {self.node_id}: {' '.join(command)} failed ({result.exit_code}): {output}"
            )
        return output

    def kafka_exec(self, command: Sequence[str]) -> str:
        """Runs a command in the Kafka container, whose filesystem holds the logs; raises with its output
        (ClusterError, also when the container is not running: a broker that exited on its own)."""
        return self._kafka_exec_bytes(command).decode(errors="replace")

    def _kafka_exec_bytes(self, command: Sequence[str]) -> bytes:
        try:
            result = self._kafka_container().exec_run(list(command))
        except docker.errors.APIError as error:
            raise ClusterError(f"node {self.node_id}: {' '.join(command)} could not run: {error}") from None
        output = result.output if isinstance(result.output, bytes) else b""
        if result.exit_code != 0:
            said = output.decode(errors="replace")[-800:]
            raise ClusterError(
                f"node {self.node_id}: {' '.join(command)} failed ({result.exit_code}): {said}"
            )
        return output

    def has_files(self, *paths: PurePosixPath) -> bool:
        """Whether the node's image carries every one of `paths` (a library or tool a fault needs: images
        kchaos builds do, a `--kafka-image` from elsewhere does not)."""
        command = ["test", "-e", str(paths[0])]
        for path in paths[1:]:
            command += ["-a", "-e", str(path)]
        try:
            self.kafka_exec(command)
        except ClusterError:
            return False
        return True

    def run_tool(self, *args: str) -> str:
        """Runs a Kafka tool class inside this node (our image's `kafka-class`, else the distribution's
        `kafka-run-class.sh` as in apache/kafka) and returns its output."""
        return self.kafka_exec(["sh", "-c", _TOOL, "sh", *args])

    def run_tool_gzipped(self, *args: str) -> bytes:
        """`run_tool` for a tool that prints a lot: its output is gzipped inside the container (its error
        output, when it fails, comes back as it is). A replica dump of half a million records prints 68 MB;
        three nodes streaming theirs through the engine at once took close to a minute, one alone 5 s."""
        script = (
            f"{_TOOL} > /tmp/kchaos-tool.out 2> /tmp/kchaos-tool.err; status=$?; "
            'if [ "$status" -ne 0 ]; then cat /tmp/kchaos-tool.out /tmp/kchaos-tool.err; '
            'rm -f /tmp/kchaos-tool.out /tmp/kchaos-tool.err; exit "$status"; fi; '
            "gzip -1 -c /tmp/kchaos-tool.out; status=$?; rm -f /tmp/kchaos-tool.out /tmp/kchaos-tool.err; "
            'exit "$status"'
        )
        return self._kafka_exec_bytes(["sh", "-c", script, "sh", *args])

    def logs(self, since: float | None = None) -> bytes:
        """The broker's output, all of it or (`since`, a Unix time) what it wrote from then on: a container
        restarted keeps the output of its earlier lives."""
        if since is None:
            return bytes(self._kafka_container().logs())
        return bytes(self._kafka_container().logs(since=int(since)))

    def exit_code(self) -> int | None:
        """The broker process's exit code if its container has stopped on its own, else None.

        Only meaningful while the harness has not stopped it: a start that fails (storage that will not
        format, a bad setting) ends the container within seconds, and waiting out a readiness deadline for
        it would hide why.
        """
        return container_process.exit_code(self.kafka)


@dataclass
class KafkaCluster:
    """N Kafka brokers on a network of their own, labelled with the run id: with `metadata_mode` kraft
    combined broker+controller nodes, or brokers beside `controller_size` dedicated controllers; with
    zookeeper brokers and one ZooKeeper node. `nodes` are the brokers (what clients, metadata questions
    and replica dumps address), `controllers` the dedicated controllers, `servers` both."""

    run_id: str
    image: str
    sidecar_image: str
    size: int = 3
    #: Brokers started with the cluster but not yet in it (`--spare-brokers`): each node's sidecar holds its
    #: address from the start, its Kafka container is created, and `join` starts it as a new broker (ids
    #: `size + 1` on). In KRaft a spare is a broker only: it never votes in the quorum (`voters`).
    spare_size: int = 0
    #: Dedicated KRaft controllers (`--controllers`), nodes of their own with ids from FIRST_CONTROLLER_ID;
    #: 0 runs the quorum on the first `size` nodes, each broker and controller.
    controller_size: int = 0
    #: Dedicated controllers started with the cluster but not in its quorum (`--spare-controllers`, beside
    #: `controller_size` voters): ids after the voters'; created like a spare broker, and `join` starts one
    #: knowing the quorum only by its bootstrap servers (KIP-853), an observer until `add-voter` makes it a
    #: voter. `voters` stays the quorum the cluster started with.
    spare_controller_size: int = 0
    #: A dynamic quorum (KIP-853, `--quorum dynamic`): every node knows the quorum by its bootstrap servers,
    #: and the voters' storage is formatted with `--initial-controllers` (each voter's directory id drawn
    #: here, `directory_ids`); False lists the voters in every node's `controller.quorum.voters`.
    dynamic_quorum: bool = False
    heap: str = "256m"
    broker_config: dict[str, str] = field(default_factory=dict)
    logs_dir: Path | None = None
    metadata_mode: MetadataMode = "kraft"
    nodes: dict[int, KafkaNode] = field(default_factory=dict)
    #: The spare nodes outside the cluster now: not started yet, or drained and stopped again (`leave`).
    spares: dict[int, KafkaNode] = field(default_factory=dict)
    #: The dedicated controllers, by node id (empty with combined nodes or ZooKeeper).
    controllers: dict[int, KafkaNode] = field(default_factory=dict)
    network: Network | None = None
    #: The ZooKeeper node, started first, in ZooKeeper mode.
    zookeeper: ZooKeeperNode | None = None
    #: The metadata questions (leaders, in-sync replicas, the active controller), asked of these nodes.
    metadata: ClusterMetadata = field(init=False, repr=False, compare=False)
    #: The directory id each voter of a dynamic quorum is formatted with (its metadata log dir's).
    directory_ids: dict[int, str] = field(init=False, default_factory=dict)

    def __post_init__(self) -> None:
        self.metadata = ClusterMetadata(self.nodes, self.metadata_mode, self.controllers)

    @property
    def voters(self) -> tuple[int, ...]:
        """The KRaft quorum's voters: the dedicated controllers, or else the first `size` nodes."""
        if self.controller_size:
            return tuple(range(FIRST_CONTROLLER_ID, FIRST_CONTROLLER_ID + self.controller_size))
        return tuple(range(1, self.size + 1))

    @property
    def spare_controller_ids(self) -> tuple[int, ...]:
        """The ids of the spare controllers (`spare_controller_size`), after the voters'."""
        first = FIRST_CONTROLLER_ID + self.controller_size
        return tuple(range(first, first + self.spare_controller_size))

    @property
    def servers(self) -> dict[int, KafkaNode]:
        """Every Kafka node in the cluster now, brokers and dedicated controllers: what a cut-off node is
        cut off from."""
        return {**self.nodes, **self.controllers}

    def node(self, node_id: int) -> KafkaNode:
        """The broker, dedicated controller or spare `node_id`."""
        for known in (self.nodes, self.controllers, self.spares):
            if node_id in known:
                return known[node_id]
        raise KeyError(f"no node {node_id}")

    def _roles(self, node_id: int) -> str:
        if node_id >= FIRST_CONTROLLER_ID:
            return "controller"
        return "broker" if self.controller_size or node_id > self.size else "broker,controller"

    @property
    def bootstrap(self) -> str:
        return ",".join(node.bootstrap for node in self.nodes.values())

    @property
    def name_prefix(self) -> str:
        return f"kchaos-{self.run_id}"

    def _metadata_env(self, node_id: int, cluster_id: str) -> dict[str, str]:
        """What the metadata mode sets: a KRaft node's roles and quorum, or a broker's id and ZooKeeper."""
        if self.metadata_mode == "zookeeper":
            return zookeeper_broker_env(node_id)
        quorum = (
            # A node of a dynamic quorum, or a spare controller joining one, knows the voters only as where
            # to ask; the image's entrypoint formats a voter with the initial voters, a spare controller with
            # none (it starts an observer).
            {
                "KAFKA_CONTROLLER_QUORUM_BOOTSTRAP_SERVERS": ",".join(
                    f"kafka-{n}:{CONTROLLER_PORT}" for n in self.voters
                )
            }
            if self.dynamic_quorum or node_id in self.spare_controller_ids
            else {
                "KAFKA_CONTROLLER_QUORUM_VOTERS": ",".join(
                    f"{n}@kafka-{n}:{CONTROLLER_PORT}" for n in self.voters
                )
            }
        )
        if self.dynamic_quorum and node_id in self.voters:
            quorum["KCHAOS_INITIAL_CONTROLLERS"] = ",".join(
                f"{n}@kafka-{n}:{CONTROLLER_PORT}:{self.directory_ids[n]}" for n in self.voters
            )
        return {
            "CLUSTER_ID": cluster_id,
            "KAFKA_NODE_ID": str(node_id),
            "KAFKA_PROCESS_ROLES": self._roles(node_id),
            **quorum,
            "KAFKA_CONTROLLER_LISTENER_NAMES": "CONTROLLER",
        }

    def _kafka_env(self, node_id: int, client_port: int, cluster_id: str) -> dict[str, str]:
        roles = self._roles(node_id) if self.metadata_mode == "kraft" else "broker"
        listeners = {} if roles == "controller" else {"CLIENT": CLIENT_PORT, "INTERNAL": INTERNAL_PORT}
        if "controller" in roles:
            listeners["CONTROLLER"] = CONTROLLER_PORT
        internal_rf = str(min(3, self.size))
        # A broker-only KRaft node (a spare, or beside dedicated controllers) listens on no controller port,
        # yet reaches the quorum's.
        protocols = [*listeners, *(["CONTROLLER"] if self.metadata_mode == "kraft" else [])]
        advertised = (
            {}
            if roles == "controller"  # a controller serves no clients and no replication
            else {
                "KAFKA_ADVERTISED_LISTENERS": f"CLIENT://127.0.0.1:{client_port},"
                f"INTERNAL://kafka-{node_id}:{INTERNAL_PORT}",
                "KAFKA_INTER_BROKER_LISTENER_NAME": "INTERNAL",
            }
        )
        env = {
            **self._metadata_env(node_id, cluster_id),
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
            "KAFKA_HEAP_OPTS": f"-Xms{self.heap} -Xmx{self.heap}",
            # Two cores run the whole cluster: keep the JVMs from sizing thread pools for a bigger machine.
            "KAFKA_JVM_PERFORMANCE_OPTS": "-XX:+UseSerialGC -XX:TieredStopAtLevel=1 "
            "-XX:+ExitOnOutOfMemoryError "
            "-Djava.awt.headless=true -XX:ActiveProcessorCount=2",
            "KAFKA_NUM_NETWORK_THREADS": "2",
            "KAFKA_NUM_IO_THREADS": "2",
            "KAFKA_NUM_RECOVERY_THREADS_PER_DATA_DIR": "1",
        }
        for key, value in self.broker_config.items():
            env[broker_env_name(key)] = value
        return env

    def start(self, ready_timeout: float = 180.0) -> KafkaCluster:
        """Creates the network and nodes, then waits until the cluster accepts replicated writes."""
        labels = labels_for(self.run_id)
        sweep()  # what crashed runs left behind
        guard.ensure()  # and what this process leaves if it is killed outright
        network = self.network = Network(docker_network_kw={"labels": labels})
        network.name = f"{self.name_prefix}-net"
        network.create()
        cluster_id = new_cluster_id()
        # Drawn like a cluster id: both are Kafka Uuids in URL-safe base64.
        self.directory_ids = {n: new_cluster_id() for n in self.voters} if self.dynamic_quorum else {}
        try:
            with reaper_off:  # kchaos removes its containers itself, by label
                if self.metadata_mode == "zookeeper":
                    self.zookeeper = start_zookeeper(
                        self.image, self.sidecar_image, network, self.name_prefix, labels, ready_timeout
                    )
                members = [*(self.voters if self.controller_size else ()), *range(1, self.size + 1)]
                spares = [*range(self.size + 1, self.size + self.spare_size + 1), *self.spare_controller_ids]
                # Every node at once: each start is a few calls to the engine, and Kafka's JVMs boot side
                # by side either way. The nodes are counted in in id order, whichever started first: a
                # seeded fault picks its target from that order.
                with ThreadPoolExecutor(max_workers=len(members) + len(spares)) as pool:
                    started = {
                        node_id: pool.submit(self._start_node, node_id, cluster_id, labels, network, spare)
                        for node_ids, spare in ((members, False), (spares, True))
                        for node_id in node_ids
                    }
                for node_id, each in started.items():
                    node = each.result()
                    if node.state == "created":
                        self.spares[node_id] = node
                    else:
                        (self.controllers if node_id >= FIRST_CONTROLLER_ID else self.nodes)[node_id] = node
            self.wait_ready(ready_timeout)
        except BaseException:
            if self.logs_dir is not None:
                self.save_logs(self.logs_dir)  # why it never became ready is in the brokers' logs
            self.stop()
            raise
        return self

    def _start_node(
        self, node_id: int, cluster_id: str, labels: dict[str, str], network: Network, spare: bool = False
    ) -> KafkaNode:
        """Starts node `node_id` (the caller counts it in); a `spare` only as far as its sidecar, its Kafka
        left for `join`."""
        hostname = f"kafka-{node_id}"
        port = free_port()
        sidecar = network_sidecar(
            self.sidecar_image, f"{self.name_prefix}-{hostname}-net", network, hostname, labels
        )
        # testcontainers binds published ports on every interface; the client port belongs on loopback only.
        sidecar.ports[f"{CLIENT_PORT}/tcp"] = ("127.0.0.1", port)  # type: ignore[assignment]
        sidecar.start()
        kafka = in_namespace_of(self.image, f"{self.name_prefix}-{hostname}", sidecar, labels).with_envs(
            **self._kafka_env(node_id, port, cluster_id)
        )
        node = KafkaNode(node_id, hostname, port, sidecar, kafka)
        node.ip = sidecar_ip(sidecar, network)
        if not spare:
            kafka.start()
            node.state = "running"
        return node

    # --- membership ------------------------------------------------------------------------------

    def join(self, node_id: int) -> KafkaNode:
        """Starts spare `node_id`'s broker (again, if it was a member before) and counts it in the cluster:
        it registers with the controller like any new broker, holding no replica until one is moved to it.
        A spare controller counts among the `controllers` (an observer of the quorum until made a voter)."""
        node = self.spares.pop(node_id)
        if node.state == "created":
            with reaper_off:
                node.kafka.start()
        else:
            node.restart()
        node.state = "running"
        (self.controllers if node_id >= FIRST_CONTROLLER_ID else self.nodes)[node_id] = node
        return node

    def leave(self, node_id: int) -> None:
        """Shuts a drained broker down (SIGTERM, a controlled shutdown) and counts it out of the cluster, a
        spare again: what decommissioning a broker is once no replica is left on it (or a controller once
        it votes no more)."""
        node = (self.controllers if node_id >= FIRST_CONTROLLER_ID else self.nodes).pop(node_id)
        node.terminate()
        self.spares[node_id] = node

    # --- observing -------------------------------------------------------------------------------

    def admin(self) -> AdminClient:
        return AdminClient({"bootstrap.servers": self.bootstrap, "log_level": 0})

    def wait_ready(self, timeout: float) -> None:
        """Ready: all N brokers registered, and a topic replicated to all of them takes an acks=all write.

        A broker that exits meanwhile fails the start at once, in its own words (`ClusterError`).
        """
        expected = frozenset(self.nodes)

        def registered() -> bool:
            # A second per node: a booting broker refuses or stalls the connection, and the next poll
            # asks again.
            views = self.metadata.views("__consumer_offsets", list(self.nodes), timeout=READY_ANSWER_S)
            return len(views) == len(self.nodes) and all(view.brokers == expected for view in views)

        exited: list[str] = []

        def registered_or_exited() -> bool:
            exited[:] = self._exited()
            return bool(exited) or registered()

        wait_until(registered_or_exited, timeout, f"all {self.size} brokers registered", READY_POLL_S)
        if exited:
            raise ClusterError("; ".join(exited))
        self.create_topic(
            READY_TOPIC, partitions=1, replication_factor=self.size, min_insync_replicas=self.size
        )

        def writable() -> bool:
            producer = Producer({"bootstrap.servers": self.bootstrap, "acks": "all", "log_level": 0,
                                 "message.timeout.ms": 5000})  # fmt: skip
            outcome: list[object] = []
            producer.produce(READY_TOPIC, b"ready", on_delivery=lambda err, _msg: outcome.append(err))
            producer.flush(8)
            return outcome == [None]

        wait_until(writable, timeout, f"an acks=all write to a topic replicated on all {self.size} brokers")

    def _exited(self, log_lines: int = 2) -> list[str]:
        """Each node whose broker exited on its own, with its exit code and last log lines (stack frames
        left out: the exception's message, not where it was thrown, says what to fix)."""
        found = []
        for node in self.servers.values():
            code = node.exit_code()
            if code is not None:
                lines = node.logs().decode(errors="replace").splitlines()
                said = [line.strip() for line in lines if line.strip() and not STACK_FRAME.match(line)]
                found.append(
                    f"{node.hostname} exited with code {code} while starting: "
                    + " | ".join(said[-log_lines:])
                )
        return found

    def create_topic(
        self,
        topic: str,
        partitions: int,
        replication_factor: int,
        min_insync_replicas: int,
        unclean_leader_election: bool = False,
        timeout: float = 60.0,
        topic_config: Mapping[str, str] | None = None,
    ) -> None:
        config = {
            "min.insync.replicas": str(min_insync_replicas),
            "unclean.leader.election.enable": str(unclean_leader_election).lower(),
            **(topic_config or {}),
        }
        admin = self.admin()  # held until the future resolves: a collected client cancels its requests
        futures = admin.create_topics(
            [NewTopic(topic, partitions, replication_factor, config=config)], operation_timeout=timeout
        )
        futures[topic].result(timeout)

        def led_everywhere() -> bool:
            views = self.metadata.views(topic, list(self.nodes))
            return len(views) == len(self.nodes) and all(
                len(v.partitions) == partitions and all(s.leader >= 0 for s in v.partitions.values())
                for v in views
            )

        wait_until(
            led_everywhere, timeout, f"topic {topic} created and led on every node's view", READY_POLL_S
        )

    # --- tearing down ----------------------------------------------------------------------------

    def _started_servers(self) -> list[KafkaNode | ZooKeeperNode]:
        ran = [spare for spare in self.spares.values() if spare.state != "created"]
        servers: list[KafkaNode | ZooKeeperNode] = [*self.servers.values(), *ran]
        if self.zookeeper is not None:
            servers.append(self.zookeeper)
        return servers

    def freeze(self) -> None:
        """Freezes every server still running (cgroup freezer), once the run has read and dumped what it
        needs: idle brokers still take a tenth of a core between them, which the check, run next on the
        same two cores, waits for. Best effort; `stop` removes frozen containers like any other."""

        def frozen(server: KafkaNode | ZooKeeperNode) -> None:
            with suppress(docker.errors.APIError):  # gone or going: it takes no CPU either
                server.pause()

        servers = self._started_servers()
        with ThreadPoolExecutor(max_workers=max(1, len(servers)), thread_name_prefix="freeze") as pool:
            list(pool.map(frozen, servers))

    def save_logs(self, logs_dir: Path) -> None:
        logs_dir.mkdir(parents=True, exist_ok=True)
        for server in self._started_servers():
            try:
                (logs_dir / f"{server.hostname}.log").write_bytes(server.logs())
            except (docker.errors.APIError, ValueError):
                continue

    def stop(self) -> None:
        """Removes every container and the network; safe to call twice and after a failed start."""
        sweep(run_id=self.run_id)
        self.nodes.clear()
        self.spares.clear()
        self.controllers.clear()
        self.zookeeper = None
        self.network = None

    def __enter__(self) -> KafkaCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
