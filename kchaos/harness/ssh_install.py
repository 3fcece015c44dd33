"""What kchaos puts on a machine it reaches over SSH, and how it takes all of it away again.

kchaos installs the release it builds: the `/opt/kafka` of its own image for that release (the jars from
Maven Central, the entrypoint, the fault libraries compiled on this host), copied out of the local image and
unpacked under `/var/tmp/kchaos/<run id>/` on the machine, with the broker's state and output beside it.
Nothing else of the machine is written: no package, no service, no file outside that directory, and
iptables rules only with a comment naming the run (`kchaos.nemesis.netfilter`), which removal deletes by
that comment. Removal kills the run's broker, deletes its rules and the directory, and leaves the machine
as it found it.

Before installing, the machine is checked for what a node needs (bash, Java, tar and gzip, the CPU
architecture the fault libraries were compiled for), and refused with what is missing.
"""

from __future__ import annotations

import io
import platform
import shlex
import tarfile
from pathlib import PurePosixPath

import docker

from kchaos.harness.cluster_error import ClusterError
from kchaos.harness.kafka_node import CLIENT_PORT, CONTROLLER_PORT, INTERNAL_PORT
from kchaos.harness.reaper import reaper_off
from kchaos.harness.ssh_session import SshSession

#: Where every run's directory lives on a machine.
ROOT = PurePosixPath("/var/tmp/kchaos")
#: The installation inside kchaos's Kafka image that is copied to each machine.
IMAGE_HOME = "/opt/kafka"
#: The entrypoint that starts a node, and the image's class-data archive, as the archive names them.
ENTRYPOINT = "kafka/bin/entrypoint.sh"
CLASS_ARCHIVE = "kafka/kafka.jsa"
#: The ports a node listens on (clients, replication, the quorum), which must be free on the machine.
PORTS = (CLIENT_PORT, INTERNAL_PORT, CONTROLLER_PORT)
#: Machine names `uname -m` gives for this host's architecture, which the fault libraries are built for.
_ARCHITECTURES = {"x86_64": {"x86_64", "amd64"}, "aarch64": {"aarch64", "arm64"}}


def run_directory(run_id: str) -> PurePosixPath:
    return ROOT / run_id


def kafka_archive(image: str, client: docker.DockerClient | None = None) -> bytes:
    """The image's Kafka installation as a tar archive whose one top directory is `kafka/`, without the
    image's class-data archive: it names the image's paths, so a JVM on a machine could not map it, and it
    is half the installation's bytes."""
    client = client or docker.from_env()
    with reaper_off:
        container = client.containers.create(image, entrypoint=["true"])
    try:
        chunks, _ = container.get_archive(IMAGE_HOME)
        archive = b"".join(chunks)
    finally:
        container.remove(force=True)
    kept = io.BytesIO()
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar, tarfile.open(fileobj=kept, mode="w") as out:
        members = tar.getmembers()
        if ENTRYPOINT not in {member.name for member in members}:
            raise ClusterError(
                f"kafka_image: {image} has no {ENTRYPOINT} (not an image kchaos builds), and SSH nodes run "
                "the installation of kchaos's own image: leave --kafka-image out"
            )
        for member in members:
            if member.name != CLASS_ARCHIVE:
                out.addfile(member, tar.extractfile(member) if member.isfile() else None)
    return kept.getvalue()


def missing_on(session: SshSession) -> list[str]:
    """What the machine lacks for a node of kchaos's, in words naming each (empty: nothing)."""
    # The listening ports, from the kernel's own tables (no ss or netstat needed), as 4 hex digits each.
    listening = (
        'awk \'$4 == "0A" { split($2, a, ":"); print a[2] }\' /proc/net/tcp /proc/net/tcp6 2>/dev/null'
    )
    ports = " ".join(f"{port}:{port:04X}" for port in PORTS)
    script = (
        "for t in bash java tar gzip setsid ps iptables iptables-save; do "
        'command -v "$t" >/dev/null 2>&1 || echo "no $t on the PATH"; done; '
        f"taken=$({listening}); for p in {ports}; do "
        'case " $(echo $taken) " in *" ${p#*:} "*) echo "port ${p%:*} in use";; esac; done; '
        "uname -m"
    )
    lines = session.run(script).splitlines()
    machine = lines.pop().strip() if lines else ""
    missing = [line.strip() for line in lines if line.strip()]
    ours = platform.machine()
    if machine not in _ARCHITECTURES.get(ours, {ours}):
        missing.append(
            f"a {ours} CPU (it is {machine or 'unknown'}; the fault libraries are built for {ours})"
        )
    return missing


def install(session: SshSession, run_id: str, archive: bytes) -> PurePosixPath:
    """Unpacks `archive` under the run's directory on the machine; returns the directory. ClusterError
    naming the machine when something is missing or the directory is taken."""
    missing = missing_on(session)
    if missing:
        raise ClusterError(f"nodes: {session.address} cannot run a node: {'; '.join(missing)}")
    directory = run_directory(run_id)
    quoted = shlex.quote(str(directory))
    status, _, _ = session.run_status(f"test -e {quoted}")
    if status == 0:
        raise ClusterError(
            f"nodes: {session.address} already has {directory} (a run of this id is there, or one that "
            "crashed): run `kchaos clean`, or give another --run-id"
        )
    session.run(f"mkdir -p {quoted}/state && tar -x -f - -C {quoted}", stdin=archive)
    return directory


def uninstall(session: SshSession, run_id: str, service: str | None = None) -> None:
    """Kills the run's broker (or, for a broker the machine runs as `service`, thaws and starts it again),
    deletes the iptables rules tagged with the run and the run's directory, and the root directory too if
    no other run's is left in it."""
    directory = shlex.quote(str(run_directory(run_id)))
    tag = shlex.quote(f"kchaos:{run_id}:")
    restore = ""
    if service is not None:
        unit = shlex.quote(service)
        restore = f"systemctl kill --signal=SIGCONT {unit} 2>/dev/null; systemctl start {unit}; "
    script = restore + (
        f'p=$(cat {directory}/broker.pid 2>/dev/null) && kill -KILL "-$p" 2>/dev/null; '
        f"for table in filter nat; do iptables-save -t $table 2>/dev/null | grep -F -- {tag} "
        "| sed 's/^-A /-D /' | while read -r rule; do eval \"iptables -w -t $table $rule\"; done; done; "
        f"rm -rf {directory}; rmdir {shlex.quote(str(ROOT))} 2>/dev/null; true"
    )
    session.run(script)


def leftovers_on(session: SshSession, run_id: str) -> list[str]:
    """What of run `run_id` is still on the machine (its directory, a process, a rule), for tests and
    `kchaos clean` to report."""
    directory = shlex.quote(str(run_directory(run_id)))
    tag = shlex.quote(f"kchaos:{run_id}:")
    script = (
        f"test -e {directory} && echo directory; "
        f"iptables-save 2>/dev/null | grep -qF -- {tag} && echo iptables-rule; "
        # '[/]' matches '/' but not this command line's own '[/]', so pgrep does not find itself.
        f"pgrep -f {shlex.quote('[/]' + str(run_directory(run_id))[1:])} >/dev/null && echo process; true"
    )
    return session.run(script).split()
