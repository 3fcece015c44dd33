"""Machines for the SSH backend's tests: containers of kchaos's SSH node image (`sshd` and nothing of
Kafka's), on a Docker network of their own, each reached at its address on it as a user's machine is.

The test sets them up through Docker, as someone racks machines; kchaos reaches them only over SSH. They
are labelled as kchaos's, owned by the test's process, so a test killed half-way leaves them to the next
sweep. `on_machine` reads a machine through Docker, for the test to check what kchaos left there without
asking kchaos.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import docker
import paramiko
from docker.models.containers import Container

from kchaos.harness.labels import HOST_LABEL, PID_LABEL, RUN_LABEL
from kchaos.harness.ssh_node_image import ensure_ssh_node_image
from kchaos.model.run_files import RunDir
from kchaos.model.waiting import wait_until

#: What a container needs to boot systemd here (cgroup v1, no --privileged): its start script's --init, a
#: tmpfs on /run and /run/lock, the host's cgroup tree read-only.
SYSTEMD_CONTAINER: dict[str, object] = {
    "command": ["/usr/local/bin/start-sshd", "--init"],
    "tmpfs": {"/run": "", "/run/lock": ""},
    "volumes": {"/sys/fs/cgroup": {"bind": "/sys/fs/cgroup", "mode": "ro"}},
}


@dataclass(frozen=True)
class Machines:
    """The machines' `ssh://ops@IP` addresses, the key that logs in to them, a known_hosts file that does
    not list them yet, and their containers (for the test's own checks)."""

    addresses: tuple[str, ...]
    key: Path
    known_hosts: Path
    containers: tuple[Container, ...]

    @property
    def nodes_flag(self) -> str:
        return ",".join(self.addresses)

    def login_flags(self) -> list[str]:
        return ["--ssh-key", str(self.key), "--known-hosts", str(self.known_hosts)]


def _answers(ip: str) -> bool:
    try:
        with socket.create_connection((ip, 22), timeout=1) as sock:
            return sock.recv(4).startswith(b"SSH-")
    except OSError:
        return False


@contextlib.contextmanager
def ssh_machines(count: int, directory: Path, init: bool = False) -> Iterator[Machines]:
    """`count` machines, up and answering SSH; removed with their network afterwards. With `init` each
    boots systemd (which runs sshd as a service), to run a Kafka as an operator's service does."""
    client = docker.from_env()
    image = ensure_ssh_node_image(client)
    key = paramiko.RSAKey.generate(2048)
    key_file = directory / "id_rsa"
    key.write_private_key_file(str(key_file))
    name = f"kchaos-sshtest-{uuid.uuid4().hex[:8]}"
    labels = {RUN_LABEL: name, PID_LABEL: str(os.getpid()), HOST_LABEL: socket.gethostname()}
    network = client.networks.create(name, labels=labels)
    containers: list[Container] = []
    try:
        for n in range(1, count + 1):
            containers.append(
                client.containers.run(
                    image, detach=True, name=f"{name}-{n}", hostname=f"machine-{n}", network=name,
                    cap_add=["NET_ADMIN", *(["SYS_ADMIN"] if init else [])], labels=labels,
                    environment={"KCHAOS_AUTHORIZED_KEY": f"{key.get_name()} {key.get_base64()}"},
                    **(SYSTEMD_CONTAINER if init else {}),
                )
            )  # fmt: skip
        ips = []
        for container in containers:
            container.reload()
            ips.append(str(container.attrs["NetworkSettings"]["Networks"][name]["IPAddress"]))
        for ip in ips:
            wait_until(lambda ip=ip: _answers(ip), 30, f"sshd on {ip}")
        yield Machines(
            tuple(f"ssh://ops@{ip}" for ip in ips), key_file, directory / "known_hosts", tuple(containers)
        )
    finally:
        for container in containers:
            with contextlib.suppress(docker.errors.APIError):
                container.remove(force=True)
        with contextlib.suppress(docker.errors.APIError):
            network.remove()


def on_machine(container: Container, command: str) -> str:
    """What `command` prints on the machine, run through Docker (not through kchaos)."""
    result = container.exec_run(["sh", "-c", command])
    output = result.output if isinstance(result.output, bytes) else b""
    return output.decode(errors="replace")


def kchaos_left_on(container: Container) -> list[str]:
    """What of kchaos is on the machine: its directory, an iptables rule of its, a process of its."""
    left = []
    if on_machine(container, "ls -A /var/tmp").strip():
        left.append(f"/var/tmp holds {on_machine(container, 'ls -A /var/tmp').split()}")
    if "kchaos" in on_machine(container, "iptables-save; iptables-save -t nat"):
        left.append("an iptables rule")
    if "java" in on_machine(container, "ps -eo comm"):
        left.append("a java process")
    return left


def docker_calls_on(containers: tuple[Container, ...], since: float, until: float) -> list[str]:
    """Every action Docker recorded on the machines' containers in [since, until]: an exec, a kill, a pause
    or a copy kchaos would have made through Docker."""
    client = docker.from_env()
    ids = {container.id for container in containers}
    events = client.events(since=int(since), until=int(until) + 1, decode=True, filters={"type": "container"})
    return [
        f"{event.get('Action')} {event.get('Actor', {}).get('Attributes', {}).get('name')}"
        for event in events
        if event.get("id") in ids and since * 1e9 <= int(event.get("timeNano", 0)) <= until * 1e9
    ]


@dataclass(frozen=True)
class KillIsolateRun:
    """A finished run with a kill and an isolate that ended `ok` with both applied: its directory, its
    results, and the window it ran in (for `docker_calls_on`)."""

    files: RunDir
    results: dict[str, Any]
    since: float
    until: float


def run_kill_and_isolate(command: list[str], run_dir: Path) -> KillIsolateRun:
    """Runs `command` (a `kchaos run` with --nemesis kill,isolate writing `run_dir`) and checks it ended
    `ok` with both faults applied and the run complete."""
    since = time.time()
    done = subprocess.run(command, capture_output=True, text=True, timeout=400)
    until = time.time()
    print(done.stdout[-3000:], done.stderr[-3000:])
    assert done.returncode == 0
    files = RunDir(run_dir)
    results = json.loads(files.results.read_text(encoding="utf-8"))
    assert results["verdict"] == "ok", results["anomalies"]
    assert results["fault_application"]["applied"] == ["kill#1", "isolate#2"], results["fault_application"]
    assert results["phases"]["complete"], results["phases"]
    return KillIsolateRun(files, results, since, until)
