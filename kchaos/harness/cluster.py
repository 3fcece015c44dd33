"""A real multi-node Kafka cluster in Docker, started with Testcontainers: KRaft nodes that are each broker
and controller, KRaft brokers beside dedicated controllers (nodes of their own, as production clusters run
the quorum), or brokers with one ZooKeeper node (`kchaos.harness.zookeeper`). Spare brokers can be held
outside the cluster for the membership faults to start.

This is the cluster's lifecycle and its roster: start, count nodes in and out, freeze, save logs, stop.
What it is made of lives beside it, each a concept of its own: one node's containers
(`kchaos.harness.kafka_node`), which ids the cluster has (`kchaos.harness.cluster_shape`), what each node is
told at start (`kchaos.harness.node_env`), and when it is ready for a run (`kchaos.harness.readiness`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path

import docker.errors
from confluent_kafka.admin import AdminClient
from testcontainers.core.network import Network

from kchaos.harness import readiness
from kchaos.harness.cluster_error import ClusterError
from kchaos.harness.cluster_shape import ClusterShape, is_controller_id
from kchaos.harness.docker_node import DockerNode, create_node
from kchaos.harness.kafka_node import INTERNAL_PORT, KafkaNode, free_port
from kchaos.harness.labels import labels_for, sweep
from kchaos.harness.metadata import ClusterMetadata
from kchaos.harness.node_env import kafka_env, new_cluster_id
from kchaos.harness.reaper import reaper_off
from kchaos.harness.request_proxy import EventSink, RequestProxy
from kchaos.harness.watchdog import guard
from kchaos.harness.zookeeper import ZooKeeperNode, start_zookeeper
from kchaos.model.releases import MetadataMode


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
    #: Where each node's request proxy hands its events (`kchaos.harness.request_proxy`); given, every node
    #: starts one in front of its listeners before its Kafka starts, for the request-level faults. None
    #: (no request fault planned): no proxy, and nothing on the wire between clients and brokers.
    proxy_events: EventSink | None = None
    #: The request proxy of each node, when `proxy_events` is given.
    proxies: dict[int, RequestProxy] = field(init=False, default_factory=dict)

    def __post_init__(self) -> None:
        self.metadata = ClusterMetadata(self.nodes, self.metadata_mode, self.controllers)

    @property
    def shape(self) -> ClusterShape:
        """Which node ids the cluster has and what each one is, from its counts."""
        return ClusterShape(
            self.metadata_mode, self.size, self.spare_size, self.controller_size,
            self.spare_controller_size, self.dynamic_quorum,
        )  # fmt: skip

    @property
    def voters(self) -> tuple[int, ...]:
        """The KRaft quorum's voters: the dedicated controllers, or else the first `size` nodes."""
        return self.shape.voters

    @property
    def spare_controller_ids(self) -> tuple[int, ...]:
        """The ids of the spare controllers (`spare_controller_size`), after the voters'."""
        return self.shape.spare_controller_ids

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

    def _members(self, node_id: int) -> dict[int, KafkaNode]:
        """Where member `node_id` is counted: among the dedicated controllers, or the brokers."""
        return self.controllers if is_controller_id(node_id) else self.nodes

    @property
    def bootstrap(self) -> str:
        return ",".join(node.bootstrap for node in self.nodes.values())

    @property
    def name_prefix(self) -> str:
        return f"kchaos-{self.run_id}"

    @property
    def client_network(self) -> str | None:
        """The run's network, which a client container joins (`kchaos.harness.client_cluster`)."""
        if self.network is None:
            raise ClusterError("the cluster is not started, so it has no network for a client to join")
        return str(self.network.name)

    @property
    def client_bootstrap(self) -> str:
        """The brokers as a client on the run's network names them: every node's INTERNAL listener."""
        return ",".join(f"{node.hostname}:{INTERNAL_PORT}" for node in self.nodes.values())

    def start(self, ready_timeout: float = 180.0) -> KafkaCluster:
        """Creates the network and nodes, then waits until the cluster accepts replicated writes."""
        labels = labels_for(self.run_id)
        sweep()  # what crashed runs left behind
        guard.ensure()  # and what this process leaves if it is killed outright
        network = self.network = Network(docker_network_kw={"labels": labels})
        network.name = f"{self.name_prefix}-net"
        network.create()
        cluster_id = new_cluster_id()
        shape = self.shape
        # Drawn like a cluster id: both are Kafka Uuids in URL-safe base64.
        self.directory_ids = {n: new_cluster_id() for n in shape.voters} if self.dynamic_quorum else {}
        try:
            with reaper_off:  # kchaos removes its containers itself, by label
                if self.metadata_mode == "zookeeper":
                    self.zookeeper = start_zookeeper(
                        self.image, self.sidecar_image, network, self.name_prefix, labels, ready_timeout
                    )
                members, spares = shape.members, shape.spares
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
                        self._members(node_id)[node_id] = node
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
        port = free_port()  # chosen before start, so a restarted node advertises the same address
        env = kafka_env(
            self.shape, node_id, port, cluster_id,
            directory_ids=self.directory_ids, heap=self.heap, broker_config=self.broker_config,
        )  # fmt: skip
        return create_node(
            node_id, self.image, self.sidecar_image, self.name_prefix, env, port, labels, network, spare,
            on_sidecar=None if self.proxy_events is None else self._start_proxy,
        )  # fmt: skip

    def _start_proxy(self, node: DockerNode) -> None:
        assert self.proxy_events is not None
        proxy = RequestProxy(node, self.proxy_events)
        self.proxies[node.node_id] = proxy
        proxy.start()

    def node_addresses(self) -> dict[str, int]:
        """Each node's address on the run's network (members and spares, brokers and controllers) to its id:
        what tells a node's connection from a client's."""
        nodes = [*list(self.servers.items()), *list(self.spares.items())]
        return {node.ip: node_id for node_id, node in nodes if node.ip}

    def stop_proxies(self) -> None:
        """Ends every node's request proxy, once each has handed on all its events; idempotent."""
        proxies = list(self.proxies.values())
        with ThreadPoolExecutor(max_workers=max(1, len(proxies)), thread_name_prefix="proxy-stop") as pool:
            list(pool.map(RequestProxy.stop, proxies))

    # --- membership ------------------------------------------------------------------------------

    def join(self, node_id: int) -> KafkaNode:
        """Starts spare `node_id`'s broker (again, if it was a member before) and counts it in the cluster:
        it registers with the controller like any new broker, holding no replica until one is moved to it.
        A spare controller counts among the `controllers` (an observer of the quorum until made a voter)."""
        node = self.spares.pop(node_id)
        if node.state == "created":
            node.start()
        else:
            node.restart()
        self._members(node_id)[node_id] = node
        return node

    def leave(self, node_id: int) -> None:
        """Shuts a drained broker down (SIGTERM, a controlled shutdown) and counts it out of the cluster, a
        spare again: what decommissioning a broker is once no replica is left on it (or a controller once
        it votes no more)."""
        node = self._members(node_id).pop(node_id)
        node.terminate()
        self.spares[node_id] = node

    # --- observing -------------------------------------------------------------------------------

    def admin(self) -> AdminClient:
        return AdminClient({"bootstrap.servers": self.bootstrap, "log_level": 0})

    def wait_ready(self, timeout: float) -> None:
        """Ready: all N brokers registered, and a topic replicated to all of them takes an acks=all write.

        A broker that exits meanwhile fails the start at once, in its own words (`ClusterError`).
        """
        readiness.wait_registered(self.metadata, self.nodes, self.servers.values(), timeout)
        self.create_topic(
            readiness.READY_TOPIC, partitions=1, replication_factor=self.size, min_insync_replicas=self.size
        )
        readiness.wait_writable(self.bootstrap, self.size, timeout)

    def create_topic(
        self,
        topic: str,
        partitions: int,
        replication_factor: int,
        min_insync_replicas: int,
        unclean_leader_election: bool = False,
        timeout: float = 60.0,
        topic_config: Mapping[str, str] | None = None,
        replica_assignment: Mapping[int, Sequence[int]] | None = None,
    ) -> None:
        """Creates `topic` and waits until every broker sees each of its partitions led; with
        `replica_assignment` (partition -> replicas, the preferred leader first), its replicas are placed
        so rather than where Kafka would put them."""
        config = readiness.topic_settings(min_insync_replicas, unclean_leader_election, topic_config)
        admin = self.admin()  # held until the future resolves: a collected client cancels its requests
        readiness.create_topic(
            admin, self.metadata, self.nodes, topic, partitions, replication_factor, config, timeout,
            replica_assignment,
        )  # fmt: skip

    def replica_assignment(self, topic: str) -> dict[int, tuple[int, ...]]:
        """`ClusterMetadata.replica_assignment`: the preferred leader first."""
        return self.metadata.replica_assignment(topic)

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
            with suppress(docker.errors.APIError, ClusterError):  # gone or going: it takes no CPU either
                server.pause()

        servers = self._started_servers()
        with ThreadPoolExecutor(max_workers=max(1, len(servers)), thread_name_prefix="freeze") as pool:
            list(pool.map(frozen, servers))

    def save_logs(self, logs_dir: Path) -> None:
        logs_dir.mkdir(parents=True, exist_ok=True)
        for server in self._started_servers():
            try:
                (logs_dir / f"{server.hostname}.log").write_bytes(server.logs())
            except (docker.errors.APIError, ClusterError, ValueError):
                continue

    def stop(self) -> None:
        """Removes every container and the network; safe to call twice and after a failed start."""
        with suppress(Exception):  # best effort: what it could not hand on is in the events it handed
            self.stop_proxies()
        self.proxies.clear()
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
