"""A Kafka cluster kchaos did not start (`kchaos run --bootstrap`), reached only as its clients reach it.

kchaos has no access to its nodes here: no process to signal, no log directory to dump, no broker log to
save. What a run needs of it is what a client can do: find its brokers (each broker's own address, from
the metadata, so each can be asked what it believes, as `ClusterMetadata` asks a cluster kchaos started),
create the run's topics, read their placement, and at the end delete what the run made (its topics and
its consumer groups), leaving the cluster as it found it. Client processes the run starts run in
containers on the host's network, where the cluster's advertised addresses resolve as they do for kchaos.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path

import docker.errors
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

from kchaos.harness import readiness
from kchaos.harness.cluster_error import ClusterError
from kchaos.harness.labels import sweep
from kchaos.harness.leftover_topics import remove_run_leftovers
from kchaos.harness.metadata import ClusterMetadata
from kchaos.harness.watchdog import guard

log = logging.getLogger(__name__)

#: How long the first contact may take before the run is refused: a cluster that answers no metadata
#: request in this time is not one a run can judge.
CONNECT_TIMEOUT_S = 20.0
#: Why no replica is dumped, in the words the judge reports for the divergence it cannot check.
NO_NODE_ACCESS = (
    "kchaos has no access to the nodes' log directories (a cluster it did not start, --bootstrap without "
    "node access)"
)


@dataclass
class ExistingBroker:
    """One broker of the cluster, by the address it advertises: what `ClusterMetadata` asks it at."""

    node_id: int
    bootstrap: str

    @property
    def controller_address(self) -> str:
        raise ClusterError(f"node {self.node_id}: kchaos reaches no controller of a cluster it did not start")

    @property
    def state(self) -> str:
        """Always `running`: kchaos neither stops nor starts it, so it asks it (one down answers nothing)."""
        return "running"

    def run_tool(self, *args: str) -> str:
        raise ClusterError(f"node {self.node_id}: kchaos cannot run Kafka's tools on a node it cannot reach")

    def kafka_exec(self, command: Sequence[str]) -> str:
        raise ClusterError(f"node {self.node_id}: kchaos cannot run commands on a node it cannot reach")


@dataclass
class ExistingCluster:
    """The cluster `addresses` bootstrap to, for run `run_id`; its brokers are found by `start`."""

    run_id: str
    addresses: tuple[str, ...]
    nodes: dict[int, ExistingBroker] = field(default_factory=dict)
    #: The topics this run created, deleted by `stop` (in order, the run's first).
    created: list[str] = field(default_factory=list)
    #: No network of kchaos's: client processes run on the host's (`client_network`).
    network: None = None

    def __post_init__(self) -> None:
        self.metadata = ClusterMetadata(self.nodes)  # its mode only finds a controller: never asked here

    @property
    def bootstrap(self) -> str:
        return ",".join(self.addresses)

    @property
    def name_prefix(self) -> str:
        return f"kchaos-{self.run_id}"

    @property
    def client_network(self) -> str | None:
        """None: a client container joins the host's network, where the advertised addresses resolve."""
        return None

    @property
    def client_bootstrap(self) -> str:
        return self.bootstrap

    def admin(self) -> AdminClient:
        return AdminClient({"bootstrap.servers": self.bootstrap, "log_level": 0})

    def start(self) -> ExistingCluster:
        """Finds the brokers (the metadata's, each at its advertised address); ClusterError naming
        `--bootstrap` when none answers in `CONNECT_TIMEOUT_S`."""
        try:
            metadata = self.admin().list_topics(timeout=CONNECT_TIMEOUT_S)
        except KafkaException as exc:
            raise ClusterError(
                f"bootstrap: no broker at {self.bootstrap} answered a metadata request in "
                f"{CONNECT_TIMEOUT_S:.0f}s ({exc.args[0]}); check --bootstrap and that this host reaches the "
                "addresses the brokers advertise"
            ) from None
        for broker in metadata.brokers.values():
            self.nodes[broker.id] = ExistingBroker(broker.id, f"{broker.host}:{broker.port}")
        guard.ensure()
        log.info("existing cluster at %s: brokers %s", self.bootstrap, sorted(self.nodes))
        return self

    def refuse_existing(self, topics: Sequence[str]) -> None:
        """ClusterError naming each of `topics` the cluster already has: kchaos writes only to topics it
        created, whose every record it knows."""
        there = set(self.admin().list_topics(timeout=CONNECT_TIMEOUT_S).topics)
        clash = [topic for topic in topics if topic in there]
        if clash:
            raise ClusterError(
                f"topic: the cluster already has {', '.join(clash)}; kchaos writes only to topics it creates "
                "(it judges every record in them): give --topic a name the cluster does not have"
            )

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
        """Creates `topic` as `KafkaCluster.create_topic` does, and remembers it for `stop` to delete."""
        config = readiness.topic_settings(min_insync_replicas, unclean_leader_election, topic_config)
        admin = self.admin()
        self.created.append(topic)
        guard.owe(self.run_id, self.bootstrap, self.created)  # deleted even if this process is SIGKILLed
        readiness.create_topic(
            admin, self.metadata, self.nodes, topic, partitions, replication_factor, config, timeout,
            replica_assignment,
        )  # fmt: skip

    def replica_assignment(self, topic: str) -> dict[int, tuple[int, ...]]:
        """`ClusterMetadata.replica_assignment`: the preferred leader first."""
        return self.metadata.replica_assignment(topic)

    def stop_proxies(self) -> None:
        """No request proxy stands in front of a cluster kchaos did not start."""

    def save_logs(self, logs_dir: Path) -> None:
        """No broker log is within reach; the run's logs say so."""
        logs_dir.mkdir(parents=True, exist_ok=True)
        (logs_dir / "brokers.txt").write_text(f"no broker logs: {NO_NODE_ACCESS}\n")

    def freeze(self) -> None:
        """Nothing of the cluster's is kchaos's to freeze."""

    def stop(self) -> None:
        """Removes the run's client containers, then deletes the topics it created and its consumer groups;
        best effort, each logged, and safe to call twice. The watchdog is told they are gone."""
        with suppress(docker.errors.DockerException):  # no engine: the run's clients were all in-process
            sweep(run_id=self.run_id)
        remove_run_leftovers(self.bootstrap, self.run_id, self.created)
        self.created.clear()
        guard.paid(self.run_id)

    def __enter__(self) -> ExistingCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
