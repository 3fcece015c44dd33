"""One Kafka node, as the harness and the nemesis see it, whatever runs it: the seam between what kchaos does
to a node (crash it, freeze it, cut its network, leave a note for its preloaded libraries, dump its log)
and how that reaches the node.

Two backends stand behind it: containers on the local Docker engine (`kchaos.harness.docker_node`, the
default) and machines reached over SSH (`kchaos.harness.ssh_node`). Every fault, dump and readiness check
is written against this protocol alone, so a fault kind works on both or is refused by name.
"""

from __future__ import annotations

import socket
from collections.abc import Sequence
from contextlib import closing
from pathlib import PurePosixPath
from typing import Literal, Protocol

#: Where a node listens: clients, the other brokers, and a KRaft controller's quorum. In Docker the client
#: port is published on loopback under a port of its own (`DockerNode.client_port`).
CLIENT_PORT = 9092
INTERNAL_PORT = 19092
CONTROLLER_PORT = 9093

NodeState = Literal["created", "running", "killed", "stopped", "paused"]

#: How a node runs a Kafka tool class with the arguments "$@": kchaos's `kafka-class` (on the PATH of its
#: image, or of the installation it made on a machine), else the distribution's `kafka-run-class.sh`.
TOOL_SCRIPT = (
    'if command -v kafka-class >/dev/null; then kafka-class "$@"; '
    'else "${KAFKA_HOME:-/opt/kafka}/bin/kafka-run-class.sh" "$@"; fi'
)


def free_port() -> int:
    """A free loopback port, chosen before start so a restarted node advertises the same address."""
    with closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class KafkaNode(Protocol):
    """One Kafka node (with KRaft a controller too). `state` is what the harness last did to its process;
    `ip` is the address the other nodes reach it at (what an iptables rule names it by)."""

    node_id: int
    hostname: str
    state: NodeState
    ip: str

    @property
    def bootstrap(self) -> str:
        """Where kchaos, as a client, reaches the node's client listener."""
        ...

    @property
    def controller_address(self) -> str:
        """Where the node's KRaft controller listens, as the other nodes reach it (KRaft only)."""
        ...

    @property
    def home(self) -> PurePosixPath:
        """The node's Kafka installation (KAFKA_HOME): its `bin`, `libs` and preloaded `lib`."""
        ...

    @property
    def state_dir(self) -> PurePosixPath:
        """Where the node keeps its log dirs and the notes the preloaded libraries read (entrypoint.sh)."""
        ...

    @property
    def conf_file(self) -> PurePosixPath:
        """The `server.properties` the node's broker started with."""
        ...

    def start(self) -> None:
        """Starts the broker of a node created but never started (a spare joining the cluster)."""

    def kill(self) -> None:
        """SIGKILL the broker: no controlled shutdown, no flush; the page cache survives, as in a crash."""

    def terminate(self, timeout: int = 60) -> None:
        """SIGTERM and wait: a controlled shutdown, in which the broker hands its leaderships over first."""

    def pause(self) -> None:
        """Freezes every process of the broker: alive but silent, like a long GC pause."""

    def restart(self) -> None:
        """Brings the broker back, whatever was done to it."""

    def network_exec(self, command: Sequence[str]) -> str:
        """Runs a command in the node's network namespace with the right to change it (iptables, tc);
        ClusterError with its output when it fails."""
        ...

    def kafka_exec(self, command: Sequence[str]) -> str:
        """Runs a command where the broker's files are; ClusterError with its output when it fails (also
        when the node cannot run it: a broker that exited on its own, in Docker)."""
        ...

    def await_gone(self, path: PurePosixPath, timeout: float, what: str) -> None:
        """Waits until `path` is gone: a note the harness left for the node's start, which removes it once
        it acted on it; WaitTimeout naming `what` otherwise."""

    def has_files(self, *paths: PurePosixPath) -> bool:
        """Whether the node has every one of `paths` (a library or tool a fault needs), a relative one
        under its Kafka home."""
        ...

    def run_tool(self, *args: str) -> str:
        """Runs a Kafka tool class on the node and returns its output."""
        ...

    def run_tool_gzipped(self, *args: str) -> bytes:
        """`run_tool`, its output gzipped on the node (a replica dump prints tens of megabytes)."""
        ...

    def read_file(self, path: PurePosixPath) -> bytes:
        """The bytes of file `path`, also while the broker is down; ClusterError when there is none."""
        ...

    def replace_file(self, path: PurePosixPath, data: bytes) -> None:
        """Rewrites the existing file `path` with `data`, keeping its mode, owner and times: damage to a
        log file that a broker's recovery must not tell from its own by a newer timestamp."""

    def put_file(self, path: PurePosixPath, data: bytes) -> None:
        """Writes `data` as the file `path`, created or replaced whole: a note the harness leaves for a
        library in the broker, which never reads half of it."""

    def logs(self, since: float | None = None) -> bytes:
        """The broker's output, all of it or (`since`, a Unix time) from about then on."""
        ...

    def exit_code(self) -> int | None:
        """The broker process's exit code once it has ended, else None: a start that fails ends within
        seconds, and waiting out a readiness deadline for it would hide why."""
        ...
