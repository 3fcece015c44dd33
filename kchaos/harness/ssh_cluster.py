"""A Kafka cluster on machines kchaos reaches over SSH (`kchaos run --nodes`): the second node backend.

The cluster's roster, readiness, topics and membership are `KafkaCluster`'s; what differs is how its
nodes come to be and go. Instead of a Docker network and two containers per node, kchaos logs in to each
machine (`kchaos.harness.ssh_session`), installs the release there (`kchaos.harness.ssh_install`) and runs
one node on each as a process it owns (`kchaos.harness.ssh_node`); the nodes know each other, and clients
reach them, at the machines' own addresses. Client processes run in containers on this host's network.

Before anything is installed, the run is recorded as owing its machines (`kchaos.harness.ssh_leftovers`),
so a run killed outright is cleaned from them by the watchdog, by the next run, or by `kchaos clean`.
"""

from __future__ import annotations

import socket
from collections.abc import Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import TypeVar

import docker.errors

from kchaos.harness import ssh_leftovers
from kchaos.harness.cluster import KafkaCluster
from kchaos.harness.cluster_error import ClusterError
from kchaos.harness.kafka_node import CLIENT_PORT
from kchaos.harness.labels import sweep
from kchaos.harness.node_env import kafka_env, new_cluster_id
from kchaos.harness.ssh_install import install, kafka_archive, uninstall
from kchaos.harness.ssh_node import SshNode
from kchaos.harness.ssh_session import SshLogin, SshSession
from kchaos.harness.watchdog import guard
from kchaos.model.ssh_address import SshAddress

T = TypeVar("T")


@dataclass
class SshCluster(KafkaCluster):
    """The cluster on `addresses`, one node each in id order (brokers, spare brokers, controllers, spare
    controllers), logged in to with `login`; `image` is the kchaos Kafka image whose installation is
    copied to them."""

    addresses: tuple[SshAddress, ...] = ()
    login: SshLogin = field(default_factory=SshLogin)
    #: Each machine's session, by node id, open from `start` to `stop`.
    sessions: dict[int, SshSession] = field(default_factory=dict)

    @property
    def client_network(self) -> str | None:
        """None: a client container joins this host's network, where the machines' addresses resolve."""
        return None

    @property
    def client_bootstrap(self) -> str:
        return self.bootstrap

    def _placement(self) -> dict[int, SshAddress]:
        ids = sorted((*self.shape.members, *self.shape.spares))
        if len(ids) != len(self.addresses):
            raise ClusterError(
                f"nodes: {len(self.addresses)} machines for {len(ids)} nodes; give one per node"
            )
        return dict(zip(ids, self.addresses, strict=True))

    def start(self, ready_timeout: float = 180.0) -> SshCluster:
        """Logs in to every machine, installs the release and starts the nodes, then waits until the
        cluster accepts replicated writes; on failure removes what it installed and raises."""
        if self.proxy_events is not None:
            raise ClusterError(
                "nemesis: request faults need kchaos's request proxy, which runs only in Docker"
            )
        placement = self._placement()
        ssh_leftovers.clean_abandoned()  # what crashed runs left on machines
        guard.ensure()
        ssh_leftovers.record(self.run_id, tuple(placement.values()), self.login)
        archive = kafka_archive(self.image)
        cluster_id = new_cluster_id()
        shape = self.shape
        self.directory_ids = {n: new_cluster_id() for n in shape.voters} if self.dynamic_quorum else {}
        try:
            with ThreadPoolExecutor(max_workers=len(placement)) as pool:
                self.sessions = opened_sessions(pool, placement, self.login)
                installing = {
                    n: pool.submit(install, session, self.run_id, archive)
                    for n, session in self.sessions.items()
                }
                directories = self._installed(installing)
                nodes = {n: self._node(n, placement, directories[n], cluster_id) for n in placement}
                started = [pool.submit(node.start) for n, node in nodes.items() if n in shape.members]
                for each in started:
                    each.result()
            for node_id, node in nodes.items():
                if node_id in shape.members:
                    self._members(node_id)[node_id] = node
                else:
                    self.spares[node_id] = node
            self.wait_ready(ready_timeout)
        except BaseException:
            if self.logs_dir is not None:
                self.save_logs(self.logs_dir)
            self.stop()
            raise
        return self

    def _installed(self, installing: dict[int, Future[PurePosixPath]]) -> dict[int, PurePosixPath]:
        """Each machine's installation, once all are done; the first refusal is raised after the others
        finished, and only the machines installed on stay in `sessions`, for `stop` to clean: a machine
        refused for a directory of this run id already there keeps it."""
        directories, refusal = settled(installing)
        for node_id in set(self.sessions) - set(directories):
            self.sessions.pop(node_id).close()
        if refusal is not None:
            raise refusal
        return directories

    def _node(
        self, node_id: int, placement: dict[int, SshAddress], directory: PurePosixPath, cluster_id: str
    ) -> SshNode:
        address = placement[node_id]
        env = kafka_env(
            self.shape, node_id, CLIENT_PORT, cluster_id,
            directory_ids=self.directory_ids, heap=self.heap, broker_config=self.broker_config,
            host=lambda n: placement[n].host, client_host=address.host,
        )  # fmt: skip
        node = SshNode(node_id, address.host, self.sessions[node_id], directory, env)
        node.ip = address_of(address.bare_host)
        return node

    def stop(self) -> None:
        """Removes the run's client containers, then everything the run put on each machine; safe to call
        twice and after a failed start."""
        with suppress(docker.errors.DockerException):
            sweep(run_id=self.run_id)
        sessions = list(self.sessions.values())
        with ThreadPoolExecutor(max_workers=max(1, len(sessions)), thread_name_prefix="ssh-stop") as pool:
            removed = list(pool.map(lambda session: removed_from(session, self.run_id), sessions))
        for session in sessions:
            session.close()
        self.sessions.clear()
        if all(removed):  # else the record stays, for the next run or `kchaos clean` to finish
            ssh_leftovers.forget(self.run_id)
        self.nodes.clear()
        self.spares.clear()
        self.controllers.clear()

    def __enter__(self) -> SshCluster:
        return self.start()


def address_of(host: str) -> str:
    """The address `host` resolves to here (itself, for an address), IPv4 or IPv6: what iptables rules and
    the metadata's advertised hosts are matched by."""
    try:
        return str(socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)[0][4][0])
    except OSError:
        return host


def settled(futures: Mapping[int, Future[T]]) -> tuple[dict[int, T], ClusterError | None]:
    """What each machine's step gave, by node id, once every one is done, and the first refusal among
    them: a step is never left running on one machine while another's refusal is raised."""
    done: dict[int, T] = {}
    refusal: ClusterError | None = None
    for node_id, each in futures.items():
        try:
            done[node_id] = each.result()
        except ClusterError as exc:
            refusal = refusal or exc
    return done, refusal


def opened_sessions(
    pool: ThreadPoolExecutor, placement: dict[int, SshAddress], login: SshLogin
) -> dict[int, SshSession]:
    """A session to every machine, or none: the first refusal is raised once the others are closed."""
    opening = {n: pool.submit(SshSession(address, login).open) for n, address in placement.items()}
    opened, refusal = settled(opening)
    if refusal is not None:
        for session in opened.values():
            session.close()
        raise refusal
    return opened


def removed_from(session: SshSession, run_id: str, service: str | None = None) -> bool:
    """Whether the run's installation (or, on a machine whose `service` it faulted, its traces) is gone from
    the session's machine."""
    try:
        uninstall(session, run_id, service)
    except ClusterError:
        return False
    return True
