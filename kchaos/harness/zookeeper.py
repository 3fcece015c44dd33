"""ZooKeeper mode: the brokers keep their metadata in one ZooKeeper node instead of a KRaft quorum.

Releases before 3.3 run only this way and 3.3 to 3.9 can (`kchaos.model.releases`). The ZooKeeper node is a
node like the brokers: a sidecar on the run's network under the name `zookeeper`, which a fault can later cut
off, and in its namespace the same Kafka image started with KCHAOS_ROLE=zookeeper (the image's entrypoint
runs a standalone ZooKeeper from the release's own jars). Every container carries the run's labels, so
`kchaos clean` and the cluster's own stop remove it with the brokers.

A broker registers there under its `broker.id`. The controller is whichever broker wins ZooKeeper's
election, not a node of its own, and it reaches the other brokers by their inter-broker listener: so
brokers have no CONTROLLER listener, and each advertises INTERNAL by its name on the run's network.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import ClassVar

import docker.errors
from testcontainers.core.container import DockerContainer
from testcontainers.core.network import Network

from kchaos.harness import container_process
from kchaos.harness.cluster_error import ClusterError
from kchaos.harness.sidecar import in_namespace_of, network_sidecar, sidecar_ip
from kchaos.model.waiting import wait_until

ZOOKEEPER_HOSTNAME = "zookeeper"
ZOOKEEPER_PORT = 2181
#: ZooKeeper's own health check: a server that serves answers `imok` (whitelisted by the image's config).
_RUOK = f"exec 3<>/dev/tcp/127.0.0.1/{ZOOKEEPER_PORT} && printf ruok >&3 && timeout 2 cat <&3"


def zookeeper_broker_env(node_id: int) -> dict[str, str]:
    """What makes a broker of the image run in ZooKeeper mode: its id, and where ZooKeeper is.

    With `zookeeper.connect` set, the entrypoint formats no KRaft storage; the broker writes its own
    meta.properties on the first start.
    """
    return {
        "KAFKA_BROKER_ID": str(node_id),
        "KAFKA_ZOOKEEPER_CONNECT": f"{ZOOKEEPER_HOSTNAME}:{ZOOKEEPER_PORT}",
    }


def assignment_in(output: str) -> dict[int, tuple[int, ...]] | None:
    """The replica assignment in what ZooKeeper's shell printed for a topic's znode (its data is the line
    `{"version":1,"partitions":{"0":[2,3,1],...}}`, among the shell's own lines), None if none is there."""
    for line in output.splitlines():
        if line.startswith("{") and '"partitions"' in line:
            partitions = json.loads(line)["partitions"]
            return {int(key): tuple(int(n) for n in replicas) for key, replicas in partitions.items()}
    return None


def registered_in(output: str) -> frozenset[int] | None:
    """The broker ids in what ZooKeeper's shell printed for `ls /brokers/ids` (its answer is the line
    `[1, 2, 3]` among the shell's own lines), None if no such line is there."""
    for line in reversed(output.splitlines()):
        line = line.strip()
        if line.startswith("[") and line.endswith("]"):
            inside = line[1:-1].strip()
            if all(part.strip().isdigit() for part in inside.split(",") if inside):
                return frozenset(int(part) for part in inside.split(",") if inside)
    return None


@dataclass
class ZooKeeperNode:
    """The one ZooKeeper of a ZooKeeper-mode cluster: its sidecar, its server, its address on the network."""

    sidecar: DockerContainer
    server: DockerContainer
    ip: str = ""
    hostname: ClassVar[str] = ZOOKEEPER_HOSTNAME

    def answers(self) -> bool:
        """ZooKeeper serves: it answers its `ruok` health check with `imok` (not while killed or frozen)."""
        if container_process.reloaded(self.server).status != "running":
            return False
        try:
            result = self.server.get_wrapped_container().exec_run(["bash", "-c", _RUOK])
        except docker.errors.APIError:  # paused or gone between the status and the exec
            return False
        output = result.output if isinstance(result.output, bytes) else b""
        return result.exit_code == 0 and b"imok" in output

    def replica_assignment(self, topic: str) -> dict[int, tuple[int, ...]]:
        """Each partition's replicas in assignment order, as ZooKeeper holds them (`/brokers/topics/<topic>`).

        The controller elects the first live in-sync replica in this order, and only ZooKeeper keeps it:
        brokers before 0.11 answer metadata with each partition's replicas as a set, in id order.
        """
        output = self._shell("get", f"/brokers/topics/{topic}")
        assignment = assignment_in(output)
        if assignment is None:
            raise ClusterError(f"ZooKeeper holds no assignment for topic {topic}: {output[-500:]}")
        return assignment

    def registered_brokers(self) -> frozenset[int]:
        """The brokers registered in ZooKeeper (`/brokers/ids`): each znode is ephemeral, so a SIGKILLed
        broker's stays until its session expires (`zookeeper.session.timeout.ms`), and a broker started
        again before then finds it and exits ("node already exists")."""
        output = self._shell("ls", "/brokers/ids")
        brokers = registered_in(output)
        if brokers is None:
            raise ClusterError(f"ZooKeeper named no registered brokers: {output[-500:]}")
        return brokers

    def _shell(self, *command: str) -> str:
        """What ZooKeeper's own shell prints for one command, run inside the ZooKeeper container."""
        shell = [
            "kafka-class",
            "org.apache.zookeeper.ZooKeeperMain",
            "-server",
            f"127.0.0.1:{ZOOKEEPER_PORT}",
        ]
        try:
            result = self.server.get_wrapped_container().exec_run([*shell, *command])
        except docker.errors.APIError as error:  # paused or gone
            raise ClusterError(f"ZooKeeper's shell could not run {' '.join(command)}: {error}") from None
        return result.output.decode(errors="replace") if isinstance(result.output, bytes) else ""

    def kill(self) -> None:
        """SIGKILL ZooKeeper: what it had not written to its transaction log is gone; sessions live on in
        the log and expire only if their brokers stay away longer than their timeout once it is back."""
        container_process.kill(self.server)

    def terminate(self) -> None:
        container_process.terminate(self.server)

    def pause(self) -> None:
        container_process.pause(self.server)

    def restart(self) -> None:
        container_process.resume(self.server)

    def exit_code(self) -> int | None:
        """ZooKeeper's exit code if its container stopped on its own, else None."""
        return container_process.exit_code(self.server)

    def logs(self) -> bytes:
        return bytes(self.server.get_wrapped_container().logs())


def start_zookeeper(
    image: str,
    sidecar_image: str,
    network: Network,
    name_prefix: str,
    labels: dict[str, str],
    timeout: float,
) -> ZooKeeperNode:
    """Starts the ZooKeeper node and waits until it serves: a broker that cannot reach ZooKeeper within
    its `zookeeper.connection.timeout.ms` exits, so brokers start only after this returns."""
    sidecar = network_sidecar(
        sidecar_image, f"{name_prefix}-{ZOOKEEPER_HOSTNAME}-net", network, ZOOKEEPER_HOSTNAME, labels
    )
    sidecar.start()
    server = in_namespace_of(image, f"{name_prefix}-{ZOOKEEPER_HOSTNAME}", sidecar, labels).with_env(
        "KCHAOS_ROLE", "zookeeper"
    )
    server.start()
    node = ZooKeeperNode(sidecar, server, sidecar_ip(sidecar, network))
    wait_until(lambda: node.exit_code() is not None or node.answers(), timeout, "ZooKeeper to answer `ruok`")
    code = node.exit_code()
    if code is not None:
        said = [line for line in node.logs().decode(errors="replace").splitlines() if line.strip()]
        raise ClusterError(f"ZooKeeper exited with code {code} while starting: {' | '.join(said[-2:])}")
    return node
