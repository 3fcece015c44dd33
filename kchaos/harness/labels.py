"""The Docker labels every kchaos container and network carries, and the sweep that finds leftovers.

A run that crashes, or is killed with SIGKILL, cannot clean up after itself. Its containers carry the run
id and the harness's pid, so its watchdog (`kchaos.harness.watchdog`) removes them once the harness is gone,
and the next run (or `kchaos clean`) removes whatever belongs to no living harness, without touching a run
that is still going. A client container's stdout file (`kchaos.harness.client_container`) lives in a
directory of the host, which goes with its container: a sweep finds it in the container's mounts.
"""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import docker
import docker.errors
from docker.models.containers import Container

from kchaos.model.host_process import pid_alive

RUN_LABEL = "kchaos"
PID_LABEL = "kchaos.pid"
HOST_LABEL = "kchaos.host"
#: A client container's process name (`producer-0`): how the nemesis finds the client a fault names
#: without asking the workload that started it.
CLIENT_LABEL = "kchaos.client"
#: Where a client's stdout file is mounted inside its container, from a directory of the host's temporary
#: directory named `STDOUT_DIR_PREFIX...` (`kchaos.harness.client_container.start_client`).
CLIENT_STDOUT_MOUNT = "/kchaos/stdout"
STDOUT_DIR_PREFIX = "kchaos-stdout-"


def stdout_dirs(mounts: list[dict[str, str]]) -> list[Path]:
    """The host directories of a client's stdout file among a container's `mounts` (the engine's
    `Mounts`): only what `start_client` made, so a sweep never removes a directory of anyone else's."""
    found = []
    for mount in mounts:
        source = Path(mount.get("Source", ""))
        if (
            mount.get("Destination") == CLIENT_STDOUT_MOUNT
            and source.parent.name.startswith(STDOUT_DIR_PREFIX)
            and source.parent.parent == Path(tempfile.gettempdir())
        ):
            found.append(source.parent)
    return found


def labels_for(run_id: str) -> dict[str, str]:
    return {RUN_LABEL: run_id, PID_LABEL: str(os.getpid()), HOST_LABEL: socket.gethostname()}


def _owner_alive(labels: dict[str, str]) -> bool:
    if labels.get(HOST_LABEL) != socket.gethostname():
        return False
    try:
        pid = int(labels.get(PID_LABEL, ""))
    except ValueError:
        return False
    return pid == os.getpid() or pid_alive(pid)


def sweep(
    client: docker.DockerClient | None = None, everything: bool = False, run_id: str | None = None
) -> list[str]:
    """Removes kchaos containers and networks whose harness is gone (all of them with `everything`, all of
    run `run_id` with it). Returns what was removed."""
    selector = f"{RUN_LABEL}={run_id}" if run_id else RUN_LABEL
    return _remove(
        client or docker.from_env(),
        selector,
        lambda labels: everything or bool(run_id) or not _owner_alive(labels),
    )


def sweep_owner(pid: int, spared: set[str], client: docker.DockerClient | None = None) -> list[str]:
    """Removes the containers and networks harness `pid` of this host started, but those of the runs in
    `spared`: what the watchdog does once that harness died (`kchaos.harness.watchdog`)."""
    host = socket.gethostname()

    def owned(labels: dict[str, str]) -> bool:
        return (
            labels.get(PID_LABEL) == str(pid)
            and labels.get(HOST_LABEL) == host
            and labels.get(RUN_LABEL) not in spared
        )

    return _remove(client or docker.from_env(), f"{PID_LABEL}={pid}", owned)


def _remove(
    client: docker.DockerClient, selector: str, chosen: Callable[[dict[str, str]], bool]
) -> list[str]:
    """Removes the labelled containers, then networks, matching `selector` whose labels are `chosen`.

    Containers go first: a network cannot be removed while a container is attached. Another sweeper (a
    run's watchdog, `kchaos clean`) may be removing the same container at once: Docker then answers 404 or
    409 "removal ... already in progress", and either means it is going, so neither is an error here.
    """
    containers = [
        container
        for container in client.containers.list(all=True, filters={"label": selector}, ignore_removed=True)
        if chosen(container.labels)
    ]
    # All at once: each removal is the engine killing a process and deleting its layer, and a run's dozen
    # containers one after another kept a finished run waiting seconds for its teardown.
    with ThreadPoolExecutor(max_workers=max(1, min(16, len(containers))), thread_name_prefix="sweep") as pool:
        gone = list(pool.map(_remove_container, containers))
    removed = [f"container {c.name}" for c, went in zip(containers, gone, strict=True) if went]
    for network in client.networks.list(filters={"label": selector}):
        if chosen(network.attrs.get("Labels") or {}):
            try:
                network.reload()
                for attached in network.containers:
                    network.disconnect(attached, force=True)
                network.remove()
                removed.append(f"network {network.name}")
            except docker.errors.NotFound:
                pass
    return removed


def _remove_container(container: Container) -> bool:
    """Removes `container` and its client's stdout directory; False when it was gone already (another
    sweeper's), raising only for an error that does not mean it is going."""
    try:
        container.remove(force=True, v=True)
    except docker.errors.NotFound:
        return False
    except docker.errors.APIError as error:
        if not _removal_in_progress(error):
            raise
        return False
    for directory in stdout_dirs(container.attrs.get("Mounts") or []):
        shutil.rmtree(directory, ignore_errors=True)
    return True


def _removal_in_progress(error: docker.errors.APIError) -> bool:
    """Whether Docker refused a removal because another caller is already removing the container."""
    return error.status_code == 409 and "already in progress" in str(error.explanation or "")
