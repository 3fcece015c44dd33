"""A client process in a container of its own on a run's Docker network, its stdout read line by line as
it is written.

A client that is its own process can die, be paused or be cut off without the harness going with it, as an
application's client does; what it printed before it died is what it did. Its container carries the run's
labels (kchaos/harness/labels.py), exactly as the cluster's do, so the run's own teardown, its watchdog,
the next run's sweep and `kchaos clean` remove it like any node. It reaches the brokers on their INTERNAL
listener (`kafka-N:19092`), by their names on the run's network, as the brokers reach each other; a cluster
kchaos did not start, on the host's network at the addresses its brokers advertise
(`kchaos.harness.client_cluster`).

Its stdout goes to a file of the host, bind-mounted into the container, which the harness reads as it
grows: not through the engine's log stream, which cost the engine about 6 µs of CPU a send (a JSON record
written, then read back and decoded for the follower) on the two cores the brokers and the clients share.
"""

from __future__ import annotations

import contextlib
import ctypes
import re
import shutil
import tempfile
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import docker
import docker.errors
import requests
from docker.models.containers import Container

from kchaos.harness.client_cluster import ClientCluster
from kchaos.harness.cluster_error import ClusterError
from kchaos.harness.labels import (
    CLIENT_LABEL,
    CLIENT_STDOUT_MOUNT,
    RUN_LABEL,
    STDOUT_DIR_PREFIX,
    labels_for,
)

#: What ends a line of a client's stdout: a newline, or the ASCII record separator
#: (`ClientContainer.batches`).
LINE_ENDS = re.compile(b"[\n\x1e]")
#: How long the reader of a client's stdout sleeps when the file has not grown, and how often, at most, it
#: then asks the engine whether the process has ended.
IDLE_SLEEP_S = 0.005
STATE_EVERY_S = 0.25
#: Docker's words for a container whose process may still write.
LIVE_STATES = frozenset({"created", "running", "paused", "restarting"})
#: How much of a client's stdout file is read between two givings back of the read part's disk blocks
#: (`release_read`): a run of an hour at 10,000 sends a second writes about 7 GB there.
RELEASE_EVERY_BYTES = 64 << 20
#: fallocate(2)'s mode for giving blocks back without changing the file's size (the writer's offset).
_PUNCH_HOLE = 0x02 | 0x01  # FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE
_libc = ctypes.CDLL(None, use_errno=True)
_libc.fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int64, ctypes.c_int64]


def release_read(fd: int, upto: int) -> bool:
    """Gives the disk blocks of the first `upto` bytes of file `fd` back to the file system: they are read
    and recorded, and the process writing on at its own offset never sees the hole. False where the file
    system cannot punch holes; the file then keeps its blocks until its container is removed."""
    return int(_libc.fallocate(fd, _PUNCH_HOLE, 0, upto)) == 0


def split_lines(chunks: Iterable[bytes]) -> Iterator[list[str]]:
    """The complete lines of each chunk of a client's stdout, in order, as one list (never empty).

    A line ends with a newline or with the ASCII record separator (`LINE_ENDS`); empty lines are skipped. A
    worker that writes many lines at once ends them with the separator and the write with one newline (it
    kept the engine's log stream at one JSON record a write when stdout went through it). A last line
    without its end was being written when the process died: it is not yielded, as a line cut short says
    nothing for certain."""
    pending = b""
    for chunk in chunks:
        pending += chunk
        *complete, pending = LINE_ENDS.split(pending)
        batch = [raw.decode(errors="replace") for raw in complete if raw]
        if batch:
            yield batch


@dataclass
class ClientContainer:
    """One started client container; `name` is its process name, its hostname on the run's network;
    `stdout`: the host file its process's stdout is written to (`start_client`), None for a container found
    again by its labels (`run_clients`), which a fault only signals."""

    name: str
    container: Container
    stdout: Path | None = None
    _closed: bool = field(default=False, repr=False)

    def batches(self) -> Iterator[list[str]]:
        """Its stdout as it is written, from its first line until the process ends (or `close`): the
        complete lines of each read, in order, as one list (`split_lines`), so a recorder can take them
        together."""
        return split_lines(self._chunks())

    def _chunks(self) -> Iterator[bytes]:
        """What the process writes to its stdout file, as it grows: read until the file has not grown and
        the process has ended (then read once more: its last write may have come after the read), or until
        `close`. A frozen process's file waits for it. What has been read gives its disk blocks back every
        `RELEASE_EVERY_BYTES` (`release_read`)."""
        if self.stdout is None:
            raise ClusterError(
                f"client {self.name}: its stdout was not kept (a container found by its labels)"
            )
        asked = 0.0
        read = released = 0
        punching = True
        with self.stdout.open("r+b", buffering=0) as out:
            while not self._closed:
                chunk = out.read(1 << 20)
                if chunk:
                    read += len(chunk)
                    if punching and read - released >= RELEASE_EVERY_BYTES:
                        punching = release_read(out.fileno(), read)
                        released = read
                    yield chunk
                    continue
                if time.monotonic() - asked >= STATE_EVERY_S:
                    asked = time.monotonic()
                    if self._ended():
                        rest = out.readall()
                        if rest:
                            yield rest
                        return
                time.sleep(IDLE_SLEEP_S)

    def _ended(self) -> bool:
        """Whether the process has ended (or its container is gone); an engine that does not answer now
        says nothing, and the reader asks again."""
        try:
            return self.state() not in LIVE_STATES
        except (requests.RequestException, docker.errors.APIError):
            return False

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
        """Stops reading its stdout: `batches` ends within one idle sleep."""
        self._closed = True

    def remove(self) -> None:
        """Removes the container, running or not, and the host directory of its stdout file."""
        with contextlib.suppress(docker.errors.NotFound):
            self.container.remove(force=True, v=True)
        if self.stdout is not None:
            shutil.rmtree(self.stdout.parent, ignore_errors=True)


def start_client(
    cluster: ClientCluster, image: str, name: str, command: Sequence[str], main: str | None = None
) -> ClientContainer:
    """Starts `image` with `command` as client `name` on the cluster's client network (the host's, for a
    cluster kchaos did not start), under the run's labels; `main`: another of the image's Java workers than
    its entrypoint's, by class name (the entrypoint's JVM command with its last word, the main class,
    replaced)."""
    network = cluster.client_network
    # On the host's network a container keeps the host's name (Docker refuses one of its own there).
    hostname, network_mode = (name, None) if network else (None, "host")
    engine = docker.from_env()
    entrypoint = list(engine.images.get(image).attrs["Config"]["Entrypoint"])
    if main is not None:
        entrypoint[-1] = main
    stdout = Path(tempfile.mkdtemp(prefix=f"{STDOUT_DIR_PREFIX}{name}-")) / "stdout"
    stdout.touch()
    try:
        container = engine.containers.run(
            image, list(command), name=f"{cluster.name_prefix}-{name}", hostname=hostname,
            network=network, network_mode=network_mode,
            labels={**labels_for(cluster.run_id), CLIENT_LABEL: name},
            detach=True, init=True, volumes={str(stdout): {"bind": CLIENT_STDOUT_MOUNT, "mode": "rw"}},
            # The shell only points stdout at the mounted file, then becomes the image's own command.
            entrypoint=["/bin/sh", "-c", f'exec "$0" "$@" >{CLIENT_STDOUT_MOUNT}', *entrypoint],
        )  # fmt: skip
    except BaseException:
        shutil.rmtree(stdout.parent, ignore_errors=True)
        raise
    return ClientContainer(name, container, stdout)


def run_clients(cluster: ClientCluster) -> dict[str, ClientContainer]:
    """The run's client containers that have not ended (running or paused), by process name: whatever
    started them, they carry the run's labels and their name (`start_client`), so a fault finds them here."""
    found = docker.from_env().containers.list(
        all=True,
        filters={"label": [f"{RUN_LABEL}={cluster.run_id}", CLIENT_LABEL], "status": ["running", "paused"]},
    )
    return {container.labels[CLIENT_LABEL]: ClientContainer(container.labels[CLIENT_LABEL], container)
            for container in found}  # fmt: skip
