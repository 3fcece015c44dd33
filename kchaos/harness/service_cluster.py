"""A cluster the machines already run, which kchaos reaches as a client (`--bootstrap`) and over SSH as a
systemd service on each machine (`--nodes`, `--kafka-home DIR --service NAME`): the faults a running
installation allows, applied to the user's own brokers.

kchaos installs and configures nothing there. As with any cluster it did not start
(`kchaos.harness.existing_cluster`, which this one uses for its client's side), it refuses a topic name
the cluster has, creates its topics, and deletes them and its groups at the end. Each broker of the
metadata is matched to the machine its advertised host resolves to; a broker without a machine, a machine
without a broker, or a service that is not running is refused before anything is written. At the end, and
after a crash (the record in `kchaos.harness.ssh_leftovers`), every service is running again, thawed, and
the run's iptables rules and scratch directory are gone.
"""

from __future__ import annotations

import shlex
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import PurePosixPath

import docker.errors

from kchaos.harness import ssh_leftovers
from kchaos.harness.cluster import KafkaCluster
from kchaos.harness.cluster_error import ClusterError
from kchaos.harness.existing_cluster import ExistingCluster
from kchaos.harness.labels import sweep
from kchaos.harness.service_node import DEFAULT_KAFKA_HOME, ServiceNode
from kchaos.harness.ssh_cluster import address_of, opened_sessions, removed_from
from kchaos.harness.ssh_install import run_directory
from kchaos.harness.ssh_session import SshLogin, SshSession
from kchaos.model.ssh_address import SshAddress

#: What a machine needs to have its service faulted.
TOOLS = ("systemctl", "journalctl", "iptables", "iptables-save", "gzip")


@dataclass
class ServiceCluster(KafkaCluster):
    """The cluster `bootstrap_addresses` bootstrap to, its brokers the service `service` (installed at
    `kafka_home`) on `addresses`, logged in to with `login`."""

    addresses: tuple[SshAddress, ...] = ()
    login: SshLogin = field(default_factory=SshLogin)
    bootstrap_addresses: tuple[str, ...] = ()
    kafka_home: PurePosixPath = DEFAULT_KAFKA_HOME
    service: str = "kafka"
    #: Every machine's session, open from `start` to `stop`; `sessions` are the matched brokers'.
    machines: list[SshSession] = field(default_factory=list)
    sessions: dict[int, SshSession] = field(default_factory=dict)

    def __post_init__(self) -> None:
        super().__post_init__()
        self.client_side = ExistingCluster(self.run_id, self.bootstrap_addresses)

    @property
    def client_network(self) -> str | None:
        return None

    @property
    def client_bootstrap(self) -> str:
        return self.client_side.bootstrap

    def start(self, ready_timeout: float = 180.0) -> ServiceCluster:
        """Finds the brokers, logs in to their machines and matches them, checks each service runs."""
        self.client_side.start()
        ssh_leftovers.clean_abandoned()
        ssh_leftovers.record(self.run_id, self.addresses, self.login, self.service)
        try:
            with ThreadPoolExecutor(max_workers=len(self.addresses)) as pool:
                sessions = opened_sessions(pool, dict(enumerate(self.addresses)), self.login)
                self.machines = list(sessions.values())
                by_address = {address_of(a.bare_host): sessions[i] for i, a in enumerate(self.addresses)}
                for session in sessions.values():
                    self._check(session)
            self._match(by_address)
        except BaseException:
            self.stop()
            raise
        self.size = len(self.nodes)
        return self

    def _check(self, session: SshSession) -> None:
        script = "; ".join(f'command -v {t} >/dev/null 2>&1 || echo "no {t} on the PATH"' for t in TOOLS)
        bin_dir = self.kafka_home / "bin"
        runner = " -o ".join(
            f"-x {shlex.quote(str(bin_dir / name))}" for name in ("kafka-run-class.sh", "kafka-class")
        )
        missing = session.run(f"{script}; test {runner} || echo 'no {bin_dir}/kafka-run-class.sh'")
        state = session.run_status(f"systemctl is-active {shlex.quote(self.service)}")[1].strip()
        if state != "active":
            missing += f"\nthe service {self.service} is {state or 'unknown'}, not active"
        if missing.strip():
            raise ClusterError(
                f"nodes: {session.address} cannot be faulted: {'; '.join(missing.split(chr(10)))}"
            )
        session.run(f"mkdir -p {shlex.quote(str(run_directory(self.run_id) / 'state'))}")

    def _match(self, by_address: Mapping[str, SshSession]) -> None:
        """Each broker of the metadata to the machine its advertised host resolves to."""
        for node_id, broker in sorted(self.client_side.nodes.items()):
            host = broker.bootstrap.rpartition(":")[0].strip("[]")
            address = address_of(host)
            session = by_address.get(address)
            if session is None:
                raise ClusterError(
                    f"nodes: broker {node_id} advertises {broker.bootstrap}, and no machine of --nodes is "
                    f"{address}: give every broker's machine in --nodes"
                )
            self.sessions[node_id] = session
            self.nodes[node_id] = ServiceNode(
                node_id, host, session, run_directory(self.run_id), {}, state="running", ip=address,
                service=self.service, kafka_home=self.kafka_home, advertised=broker.bootstrap,
                since=time.time(),
            )  # fmt: skip
        spare = [str(s.address) for s in by_address.values() if s not in self.sessions.values()]
        if spare:
            raise ClusterError(
                f"nodes: {', '.join(spare)} runs no broker of the cluster at {self.client_side.bootstrap}"
            )

    def refuse_existing(self, topics: Sequence[str]) -> None:
        self.client_side.refuse_existing(topics)

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
        self.client_side.create_topic(
            topic, partitions, replication_factor, min_insync_replicas, unclean_leader_election, timeout,
            topic_config, replica_assignment,
        )  # fmt: skip

    def freeze(self) -> None:
        """The brokers are the user's: left running."""

    def stop(self) -> None:
        """Deletes the run's topics and groups, brings every service back (thawed, started), removes the
        run's rules and scratch directory; safe to call twice."""
        with suppress(docker.errors.DockerException):
            sweep(run_id=self.run_id)
        self.client_side.stop()
        sessions, self.machines = self.machines, []
        with ThreadPoolExecutor(max_workers=max(1, len(sessions)), thread_name_prefix="ssh-stop") as pool:
            removed = list(pool.map(lambda s: removed_from(s, self.run_id, self.service), sessions))
        for session in sessions:
            session.close()
        if all(removed):
            ssh_leftovers.forget(self.run_id)
        self.sessions.clear()
        self.nodes.clear()
