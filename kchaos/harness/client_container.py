"""A client process in a container of its own on a run's Docker network, its stdout read line by line as
it is written.

A client that is its own process can die, be paused or be cut off without the harness going with it, as an
application's client does; what it printed before it died is what it did. Its container carries the run's
labels (kchaos/harness/labels.py), exactly as the cluster's do, so the run's own teardown, its watchdog,
the next run's sweep and `kchaos clean` remove it like any node. It reaches the brokers on their INTERNAL
listener (`kafka-N:19092`), by their names on the run's network, as the brokers reach each other.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import docker
import docker.errors
import requests
from docker.models.containers import Container

from kchaos.harness.cluster import INTERNAL_PORT, KafkaCluster
from kchaos.harness.cluster_error import ClusterError
from kchaos.harness.labels import CLIENT_LABEL, RUN_LABEL, labels_for

#: What ends a line of a client's stdout: a newline, or the ASCII record separator
#: (`ClientContainer.batches`).
LINE_ENDS = re.compile(b"[\n\x1e]")


def internal_bootstrap(cluster: KafkaCluster) -> str:
    """The cluster's brokers as a client on the run's network names them: every node's INTERNAL listener."""
    return ",".join(f"{node.hostname}:{INTERNAL_PORT}" for node in cluster.nodes.values())


@dataclass
class ClientContainer:
    """One started client container; `name` is its process name, its hostname on the run's network."""

    name: str
    container: Container
    _stream: Iterator[bytes] | None = field(default=None, repr=False)

    def batches(self) -> Iterator[list[str]]:
        """Its stdout as it is written, from its first line until the process ends: the complete lines of
        each read, in order, as one list (never empty), so a recorder can take them together.

        A line ends with a newline or with the ASCII record separator (`LINE_ENDS`); empty lines are
        skipped. A worker that writes many lines at once ends them with the separator and the write with one
        newline: the engine's log stream costs a JSON record and a write per newline, and at two lines a
        send, one each, it took a core from the brokers and the worker. A last line without its end was
        being written when the process died: it is not yielded, as a line cut short says nothing for
        certain."""
        stream = self.container.logs(stdout=True, stderr=False, stream=True, follow=True)
        self._stream = stream
        pending = b""
        try:
            for chunk in stream:
                pending += chunk
                *complete, pending = LINE_ENDS.split(pending)
                batch = [raw.decode(errors="replace") for raw in complete if raw]
                if batch:
                    yield batch
        except (requests.RequestException, docker.errors.APIError, OSError, ValueError):
            return  # the stream was closed (`close`), or the engine dropped it: the process's story ends here

    def terminate(self) -> None:
        """SIGTERM: the process stops on its own terms (a client drains what it has in flight). Thawed
        first: a run stopped while a fault froze the client would otherwise wait out the drain for a
        process that cannot even see the signal."""
        self.unpause()
        self.signal("SIGTERM")

    def kill(self) -> None:
        """SIGKILL: the process ends at once."""
        self.signal("SIGKILL")

    def signal(self, signal: str) -> None:
        """Sends `signal` (`SIGUSR1`, ...) to the process, through the container's init. Lost, silently,
        when the container does not run (ended or removed), so a caller that needs it to arrive sends it
        again until the process says it did. The engine thaws a frozen (paused) container to deliver a
        signal, so a caller must not signal one a fault froze."""
        with contextlib.suppress(docker.errors.APIError):
            self.container.kill(signal=signal)

    def pause(self) -> None:
        """Freezes every process of the container (the cgroup freezer): its sockets stay open, nothing
        answers or sends, as in a stop-the-world pause of an application's JVM."""
        self.container.pause()

    def unpause(self) -> None:
        """Thaws a paused container; one not paused any more (thawed, ended, removed) is left as it is."""
        with contextlib.suppress(docker.errors.APIError):
            self.container.unpause()

    def state(self) -> str:
        """Docker's word for it now: `running`, `paused`, `exited`, ...; `removed` once it is gone."""
        try:
            self.container.reload()
        except docker.errors.NotFound:
            return "removed"
        return str(self.container.status)

    def ip(self, network: str) -> str:
        """Its address on `network`, the run's network: what a broker's rules name to cut it off."""
        self.container.reload()
        return str(self.container.attrs["NetworkSettings"]["Networks"][network]["IPAddress"])

    def exit_code(self, timeout: float) -> int | None:
        """The process's exit code once it has ended, waiting up to `timeout` seconds; None if it runs on."""
        try:
            return int(self.container.wait(timeout=timeout)["StatusCode"])
        except (requests.RequestException, docker.errors.APIError):
            return None

    def stderr(self) -> bytes:
        """What the process wrote to stderr (a client's own logging)."""
        try:
            return bytes(self.container.logs(stdout=False, stderr=True))
        except docker.errors.APIError:
            return b""

    def close(self) -> None:
        """Stops reading its stdout: `batches` ends."""
        close = getattr(self._stream, "close", None)
        if close is not None:
            close()

    def remove(self) -> None:
        """Removes the container, running or not."""
        with contextlib.suppress(docker.errors.NotFound):
            self.container.remove(force=True, v=True)


def start_client(
    cluster: KafkaCluster, image: str, name: str, command: Sequence[str], main: str | None = None
) -> ClientContainer:
    """Starts `image` with `command` as client `name` on the cluster's network, under the run's labels;
    `main`: another of the image's Java workers than its entrypoint's, by class name (the entrypoint's JVM
    command with its last word, the main class, replaced)."""
    if cluster.network is None:
        raise ClusterError(f"client {name}: the cluster is not started, so it has no network to join")
    engine = docker.from_env()
    entrypoint = None
    if main is not None:
        entrypoint = [*engine.images.get(image).attrs["Config"]["Entrypoint"][:-1], main]
    container = engine.containers.run(
        image, list(command), name=f"{cluster.name_prefix}-{name}", hostname=name,
        network=cluster.network.name, labels={**labels_for(cluster.run_id), CLIENT_LABEL: name}, detach=True,
        init=True, entrypoint=entrypoint,
    )  # fmt: skip
    return ClientContainer(name, container)


def run_clients(cluster: KafkaCluster) -> dict[str, ClientContainer]:
    """The run's client containers that have not ended (running or paused), by process name: whatever
    started them, they carry the run's labels and their name (`start_client`), so a fault finds them here."""
    found = docker.from_env().containers.list(
        all=True,
        filters={"label": [f"{RUN_LABEL}={cluster.run_id}", CLIENT_LABEL], "status": ["running", "paused"]},
    )
    return {container.labels[CLIENT_LABEL]: ClientContainer(container.labels[CLIENT_LABEL], container)
            for container in found}  # fmt: skip
