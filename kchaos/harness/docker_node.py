"""One Kafka node of a cluster kchaos runs in Docker: its two containers, how they are created, and what the
harness does to them (the `KafkaNode` surface, `kchaos.harness.kafka_node`).

Each node is two containers. A small *sidecar* (`kchaos.harness.sidecar`) owns the node's network namespace
(on the run's network under the node's name, the client port published on 127.0.0.1, NET_ADMIN for the
nemesis's iptables rules) and the Kafka container joins it: killing and restarting Kafka keeps the node's
address, port and rules, as a broker crash on a real host would, and the Kafka image needs no network tools.

A node of its own, apart from the cluster that counts it in or out (`kchaos.harness.cluster`): a fault acts
on one node, and the modules that reach into one (a power cut, a clock shift, a full disk) need the node,
not the whole cluster.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath

import docker.errors
from docker.models.containers import Container
from testcontainers.core.container import DockerContainer
from testcontainers.core.network import Network

from kchaos.harness import container_files, container_process
from kchaos.harness.cluster_error import ClusterError
from kchaos.harness.kafka_node import CLIENT_PORT, CONTROLLER_PORT, TOOL_SCRIPT, NodeState
from kchaos.harness.reaper import reaper_off
from kchaos.harness.sidecar import in_namespace_of, network_sidecar, sidecar_ip
from kchaos.model.waiting import wait_until

#: Where kchaos's Kafka image keeps Kafka, its state (log dirs, the preloaded libraries' notes) and the
#: configuration its entrypoint writes (kchaos/compose/kafka/entrypoint.sh, Dockerfile).
IMAGE_HOME = PurePosixPath("/opt/kafka")
IMAGE_STATE_DIR = PurePosixPath("/var/lib/kafka")
IMAGE_CONF_FILE = PurePosixPath("/etc/kafka/server.properties")


@dataclass
class DockerNode:
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

    @property
    def home(self) -> PurePosixPath:
        return IMAGE_HOME

    @property
    def state_dir(self) -> PurePosixPath:
        return IMAGE_STATE_DIR

    @property
    def conf_file(self) -> PurePosixPath:
        return IMAGE_CONF_FILE

    def _kafka_container(self) -> Container:
        return self.kafka.get_wrapped_container()

    def start(self) -> None:
        with reaper_off:  # kchaos removes its containers itself, by label
            self.kafka.start()
        self.state = "running"

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

    def network_exec(self, command: Sequence[str]) -> str:
        """Runs a command in the sidecar, which owns the node's network namespace (with NET_ADMIN)."""
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

    def await_gone(self, path: PurePosixPath, timeout: float, what: str) -> None:
        """Waits until `path` is gone from the running Kafka container: a note the harness left for the
        entrypoint (a power cut, a disk swap), which the entrypoint removes once it acted on it, before the
        broker starts; WaitTimeout naming `what` otherwise."""

        def gone() -> bool:
            try:
                self.kafka_exec(["test", "!", "-e", str(path)])
            except ClusterError:
                return False
            return True

        wait_until(gone, timeout, what)

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
        kchaos builds do, a `--kafka-image` from elsewhere does not), a relative one under its Kafka home."""
        command = ["test", "-e", str(self.home / paths[0])]
        for path in paths[1:]:
            command += ["-a", "-e", str(self.home / path)]
        try:
            self.kafka_exec(command)
        except ClusterError:
            return False
        return True

    def run_tool(self, *args: str) -> str:
        """Runs a Kafka tool class inside this node (our image's `kafka-class`, else the distribution's
        `kafka-run-class.sh` as in apache/kafka) and returns its output."""
        return self.kafka_exec(["sh", "-c", TOOL_SCRIPT, "sh", *args])

    def run_tool_gzipped(self, *args: str) -> bytes:
        """`run_tool` for a tool that prints a lot: its output is gzipped inside the container (its error
        output, when it fails, comes back as it is). A replica dump of half a million records prints 68 MB;
        three nodes streaming theirs through the engine at once took close to a minute, one alone 5 s."""
        script = (
            f"{TOOL_SCRIPT} > /tmp/kchaos-tool.out 2> /tmp/kchaos-tool.err; status=$?; "
            'if [ "$status" -ne 0 ]; then cat /tmp/kchaos-tool.out /tmp/kchaos-tool.err; '
            'rm -f /tmp/kchaos-tool.out /tmp/kchaos-tool.err; exit "$status"; fi; '
            "gzip -1 -c /tmp/kchaos-tool.out; status=$?; rm -f /tmp/kchaos-tool.out /tmp/kchaos-tool.err; "
            'exit "$status"'
        )
        return self._kafka_exec_bytes(["sh", "-c", script, "sh", *args])

    def read_file(self, path: PurePosixPath) -> bytes:
        """Through Docker's archive API, which reaches a stopped container too."""
        return container_files.read_file(self._kafka_container(), path)[0]

    def replace_file(self, path: PurePosixPath, data: bytes) -> None:
        container = self._kafka_container()
        _, header = container_files.read_file(container, path)
        container_files.write_file(container, path, data, header)

    def put_file(self, path: PurePosixPath, data: bytes) -> None:
        container_files.put_file(self._kafka_container(), path, data)

    def logs(self, since: float | None = None) -> bytes:
        """The broker's output, all of it or (`since`, a Unix time) what it wrote from then on: a container
        restarted keeps the output of its earlier lives."""
        try:
            if since is None:
                return bytes(self._kafka_container().logs())
            return bytes(self._kafka_container().logs(since=int(since)))
        except docker.errors.APIError as error:
            raise ClusterError(f"node {self.node_id}: its log could not be read: {error}") from None

    def exit_code(self) -> int | None:
        """The broker process's exit code if its container has stopped on its own, else None.

        Only meaningful while the harness has not stopped it: a start that fails (storage that will not
        format, a bad setting) ends the container within seconds, and waiting out a readiness deadline for
        it would hide why.
        """
        return container_process.exit_code(self.kafka)


def create_node(
    node_id: int,
    image: str,
    sidecar_image: str,
    name_prefix: str,
    env: Mapping[str, str],
    client_port: int,
    labels: dict[str, str],
    network: Network,
    spare: bool = False,
    on_sidecar: Callable[[DockerNode], None] | None = None,
) -> DockerNode:
    """Creates node `node_id`'s containers on `network`, its Kafka told `env` and its client port published
    as `client_port`, and starts them; a `spare` only as far as its sidecar, its Kafka left for the cluster
    to start when the spare joins. `on_sidecar` runs once the sidecar (the node's network) is up, before
    Kafka starts: what must be on the node's network before its first connection (the request proxy)."""
    hostname = f"kafka-{node_id}"
    sidecar = network_sidecar(sidecar_image, f"{name_prefix}-{hostname}-net", network, hostname, labels)
    # testcontainers binds published ports on every interface; the client port belongs on loopback only.
    sidecar.ports[f"{CLIENT_PORT}/tcp"] = ("127.0.0.1", client_port)  # type: ignore[assignment]
    sidecar.start()
    kafka = in_namespace_of(image, f"{name_prefix}-{hostname}", sidecar, labels).with_envs(**env)
    node = DockerNode(node_id, hostname, client_port, sidecar, kafka)
    node.ip = sidecar_ip(sidecar, network)
    if on_sidecar is not None:
        on_sidecar(node)
    if not spare:
        kafka.start()
        node.state = "running"
    return node
