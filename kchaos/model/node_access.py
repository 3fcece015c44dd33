"""Machines kchaos reaches over SSH (`--nodes`): which they are, how kchaos logs in and checks their host
keys, and what a run on them cannot do yet.

With `--nodes`, kchaos installs the Kafka release it builds on each machine, under a directory of its own,
runs one node there as a process it owns, applies faults with ordinary tools (signals, iptables, tc, the
same preloaded libraries its images carry), and removes all of it at the end (`kchaos.harness.ssh_cluster`).
With `--bootstrap`, `--kafka-home` and `--service` too, the machines run a cluster already, as a systemd
service, and kchaos faults that instead, installing nothing (`kchaos.harness.service_cluster`). These are
the settings and their refusals, checked before anything starts; the addresses are parsed by
`kchaos.model.ssh_address`.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated

from pydantic import BeforeValidator, Field, field_validator

from kchaos.model.client_targets import is_client_target
from kchaos.model.cluster_access import ClusterAccessSettings
from kchaos.model.fault_plan import comma_items, requested_faults
from kchaos.model.faults import netem
from kchaos.model.faults.requests import REQUEST_FAULTS
from kchaos.model.ssh_address import MAX_NODES, nodes_from

#: The faults not built for SSH nodes yet, and why: the request proxy runs in Docker beside each node, and
#: tc netem would replace a machine's root qdisc on a device kchaos would have to guess.
NOT_OVER_SSH = {
    **{
        name: "needs kchaos's request proxy in front of each broker, which runs in Docker"
        for name in REQUEST_FAULTS
    },
    **{d.name: "would replace the machine's own root qdisc (tc netem)" for d in netem.DEFINITIONS},
}
#: The faults kchaos applies to a broker the machine runs as a service (`--kafka-home`, `--service`): through
#: the service manager and iptables. The others need kchaos's own installation (its preloaded libraries, its
#: log dir layout, its listeners' ports: power loss, clocks, disks, corruption, replication and client
#: port cuts, reassignment's tool), spare machines, or the controllers' listener.
SERVICE_FAULTS = frozenset(
    ("kill", "stop", "pause", "rolling-restart", "isolate", "halves", "ring", "bridge", "one-way", "min-isr",
     "kill-member", "churn-members")
)  # fmt: skip
#: The settings only SSH nodes use, by field: refused without `--nodes`.
SSH_ONLY = ("ssh_key", "known_hosts", "accept_new_host_keys", "kafka_home", "service")
#: A systemd unit's name, as `systemctl` takes it.
_UNIT = re.compile(r"[A-Za-z0-9:_.@\\-]{1,255}")


class NodeAccessSettings(ClusterAccessSettings):
    """The settings that reach a run's nodes over SSH; see the module's text."""

    nodes: Annotated[tuple[str, ...], BeforeValidator(comma_items)] = Field(
        (),
        description="Run the cluster on your own machines, reached over SSH: ssh://USER@HOST[:PORT],... "
        f"(1 to {MAX_NODES}, each once; port 1-65535, default 22), or the path of a file with one such "
        "address per line (# starts a comment). One Kafka node per machine, in order: the brokers, then "
        "--spare-brokers, then --controllers and --spare-controllers; --brokers defaults to the rest. USER "
        "is root or has passwordless sudo; each machine needs Java (17 for Kafka 4), bash, tar, gzip, ps, "
        "setsid and iptables, the CPU architecture of this host (the fault libraries are built here), "
        "and free ports 9092, 9093 and 19092; one that lacks any is refused, naming it. kchaos installs "
        "the release under /var/tmp/kchaos/RUN_ID and removes it, its process and its iptables rules at "
        "the end, or after a crash (docs/own-machines.md). With --bootstrap, --kafka-home and --service: "
        "the machines a running cluster is on, faulted through its service instead. Refused with "
        "--metadata zookeeper, and so are the faults not built for SSH nodes yet: the request faults "
        "(delay, drop, hold), latency, loss and bandwidth, and isolate:target=clients. Default: none, the "
        "nodes are Docker containers on this host.",
    )
    ssh_key: Path | None = Field(
        None,
        description="With --nodes, the private key kchaos logs in with (it must exist); default: the keys "
        "of your SSH agent and ~/.ssh/id_*.",
    )
    known_hosts: Path | None = Field(
        None,
        description="With --nodes, the known_hosts file each machine's host key is checked against: a "
        "machine whose key is not in it is refused, naming the machine (default ~/.ssh/known_hosts).",
    )
    accept_new_host_keys: bool = Field(
        False,
        description="With --nodes, accept the host key of a machine --known-hosts does not list yet, and "
        "add it there (created if missing), for a first run; a key that differs from the listed one is "
        "still refused. Default: off.",
    )

    kafka_home: str | None = Field(
        None,
        description="With --nodes and --bootstrap: where the Kafka the machines already run is installed "
        "(an absolute path holding bin/kafka-run-class.sh, the same on every machine). kchaos then installs "
        "nothing: it faults that cluster's brokers through --service and iptables, dumps their replicas "
        "with the installation's own tools, and reads the service's journal. Give --service with it.",
    )
    service: str | None = Field(
        None,
        description="With --kafka-home: the systemd unit each machine runs its broker as (e.g. kafka); "
        "kchaos kills, freezes, stops and starts it with systemctl, and starts it again at the end. Only "
        f"these faults apply: {', '.join(sorted(SERVICE_FAULTS))}; one-way not with port=inter-broker.",
    )

    @field_validator("kafka_home")
    @classmethod
    def _kafka_home(cls, value: str | None) -> str | None:
        if value is not None and (not value.startswith("/") or any(c.isspace() for c in value)):
            raise ValueError(
                f"{value!r} is not an absolute path; give the installation's directory, e.g. /opt/kafka"
            )
        return value

    @field_validator("service")
    @classmethod
    def _service(cls, value: str | None) -> str | None:
        if value is not None and not _UNIT.fullmatch(value):
            raise ValueError(
                f"{value!r} is not a systemd unit name; give the unit your broker runs as, e.g. kafka"
            )
        return value

    @field_validator("nodes")
    @classmethod
    def _nodes(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(str(address) for address in nodes_from(value)) if value else ()

    @field_validator("ssh_key")
    @classmethod
    def _ssh_key(cls, value: Path | None) -> Path | None:
        if value is not None and not value.is_file():
            raise ValueError(
                f"{str(value)!r} is not a file; give the private key you log in to the nodes with"
            )
        return value

    @field_validator("known_hosts")
    @classmethod
    def _known_hosts(cls, value: Path | None) -> Path | None:
        if value is not None and not value.parent.is_dir():
            raise ValueError(
                f"{str(value)!r}: its directory {str(value.parent)!r} does not exist; give a known_hosts "
                "file in an existing one"
            )
        return value


def node_access_refusal(settings: NodeAccessSettings, given: set[str]) -> str | None:
    """Why these settings cannot run on the `--nodes` machines (or why an SSH setting needs them), with the
    fix; None when they can. `given`: the fields the user set. With `--nodes` and no `--brokers`, the
    brokers are the machines the other roles leave."""
    if not settings.nodes:
        ssh_only = [name for name in SSH_ONLY if name in given and getattr(settings, name)]
        if ssh_only:
            flag = "--" + ssh_only[0].replace("_", "-")
            return (
                f"{ssh_only[0]}: {flag} is for machines reached over SSH; add --nodes ssh://USER@HOST,... or "
                f"leave {flag} out"
            )
        return None
    if (settings.kafka_home is None) != (settings.service is None):
        given_one = "kafka_home" if settings.kafka_home is not None else "service"
        return (
            f"{given_one}: --kafka-home and --service name an installation together (its directory and the "
            "systemd unit that runs it): give both"
        )
    if settings.bootstrap:
        return _service_refusal(settings)
    if settings.kafka_home is not None:
        return (
            "kafka_home: --kafka-home and --service name the installation of a cluster the machines already "
            "run: add its --bootstrap HOST:PORT,... (or leave them out, and kchaos installs its own Kafka)"
        )
    if settings.metadata == "zookeeper":
        return (
            "metadata: SSH nodes run KRaft clusters only for now (no ZooKeeper node is installed on them); "
            "use a KRaft release (3.3 or later) and leave --metadata zookeeper out, or run in Docker"
        )
    requested = requested_faults(settings)
    unbuilt = sorted({text.split(":", 1)[0] for text in requested} & NOT_OVER_SSH.keys())
    if unbuilt:
        return (
            f"nemesis: {unbuilt[0]} is not built for SSH nodes yet (it {NOT_OVER_SSH[unbuilt[0]]}); leave it "
            "out with --nodes, or run in Docker"
        )
    for text in requested:
        target = re.search(r":target=([^:]+)", text)
        if text.startswith("isolate:") and target is not None and is_client_target(target.group(1)):
            return (
                f"nemesis: {text} cuts client processes off by their address on the run's Docker network, "
                "and with --nodes they run on this host's own network: leave it out with --nodes"
            )
    others = settings.spare_brokers + settings.controllers + settings.spare_controllers
    if "brokers" not in given:
        object.__setattr__(settings, "brokers", len(settings.nodes) - others)
    if settings.brokers < 1 or settings.brokers + others != len(settings.nodes):
        return (
            f"nodes: {len(settings.nodes)} machines for {settings.brokers} brokers, {settings.spare_brokers} "
            f"spare brokers, {settings.controllers} controllers and {settings.spare_controllers} spare "
            "controllers; give one machine per node (leave --brokers out to use every machine the other "
            "roles leave)"
        )
    return None


def _service_refusal(settings: NodeAccessSettings) -> str | None:
    """Why a cluster the machines run as a service cannot be faulted so, with the fix; None when it can."""
    if settings.kafka_home is None:
        return (
            "nodes: with --bootstrap, --nodes reaches the machines a running cluster is on: name its "
            "installation with --kafka-home DIR and its systemd unit with --service NAME (or leave "
            "--bootstrap out, and kchaos installs and runs its own Kafka there)"
        )
    if settings.fault_log is not None:
        return "fault_log: with --nodes kchaos applies and records the faults itself; leave --fault-log out"
    if settings.scenario is not None:
        return (
            f"scenario: {settings.scenario} drives its faults by a cluster kchaos installed (its listeners, "
            "its request proxy, its libraries); on --service brokers give --nemesis instead"
        )
    for text in requested_faults(settings):
        name = text.split(":", 1)[0]
        if name not in SERVICE_FAULTS or (name == "one-way" and "port=inter-broker" in text):
            return (
                f"nemesis: {text} needs kchaos's own installation on the machines (its libraries, its log "
                f"dirs, its listeners' ports), spare machines or the controllers' listener; on --service "
                f"brokers give only {', '.join(sorted(SERVICE_FAULTS))}"
            )
    return None
