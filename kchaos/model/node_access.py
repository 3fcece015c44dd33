"""Machines kchaos reaches over SSH (`--nodes`): which they are, how kchaos logs in and checks their host
keys, and what a run on them cannot do yet.

With `--nodes`, kchaos installs the Kafka release it builds on each machine, under a directory of its own,
runs one node there as a process it owns, applies faults with ordinary tools (signals, iptables, tc, the
same preloaded libraries its images carry), and removes all of it at the end (`kchaos.harness.ssh_cluster`).
These are the settings and their refusals, checked before anything starts; the addresses are parsed by
`kchaos.model.ssh_address`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from pydantic import BeforeValidator, Field, field_validator

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
#: The settings only SSH nodes use, by field: refused without `--nodes`.
SSH_ONLY = ("ssh_key", "known_hosts", "accept_new_host_keys")


class NodeAccessSettings(ClusterAccessSettings):
    """The settings that reach a run's nodes over SSH; see the module's text."""

    nodes: Annotated[tuple[str, ...], BeforeValidator(comma_items)] = Field(
        (),
        description="Run the cluster on your own machines, reached over SSH: ssh://USER@HOST[:PORT],... "
        f"(1 to {MAX_NODES}, each once; port 1-65535, default 22), or the path of a file with one such "
        "address per line (# starts a comment). One Kafka node per machine, in order: the brokers, then "
        "--spare-brokers, then --controllers and --spare-controllers; --brokers defaults to the rest. USER "
        "is root or has passwordless sudo; each machine needs Java (17 for Kafka 4), bash, tar, gzip, "
        "setsid and iptables, the CPU architecture of this host (the fault libraries are built here), "
        "and free ports 9092, 9093 and 19092; one that lacks any is refused, naming it. kchaos installs "
        "the release under /var/tmp/kchaos/RUN_ID and removes it, its process and its iptables rules at "
        "the end, or after a crash (docs/own-machines.md). Refused with --bootstrap and --metadata "
        "zookeeper, and so are the faults not built for SSH nodes yet: the request faults (delay, drop, "
        "hold) and latency, loss and bandwidth. Default: none, the nodes are Docker containers on this "
        "host.",
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
    if settings.bootstrap:
        return (
            "nodes: --nodes installs and runs kchaos's own Kafka on the machines, and --bootstrap names a "
            "cluster already running (faulting its nodes over SSH through their own installation is not "
            "built yet): give one of them"
        )
    if settings.metadata == "zookeeper":
        return (
            "metadata: SSH nodes run KRaft clusters only for now (no ZooKeeper node is installed on them); "
            "use a KRaft release (3.3 or later) and leave --metadata zookeeper out, or run in Docker"
        )
    unbuilt = sorted({text.split(":", 1)[0] for text in requested_faults(settings)} & NOT_OVER_SSH.keys())
    if unbuilt:
        return (
            f"nemesis: {unbuilt[0]} is not built for SSH nodes yet (it {NOT_OVER_SSH[unbuilt[0]]}); leave it "
            "out with --nodes, or run in Docker"
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
