"""The SSH node backend without machines: the addresses `--nodes` takes, what the configuration refuses
before anything runs, the environment a node on a machine starts with, and a node's process and files
driven by `SshNode` through a session that runs its commands in a local shell instead of over SSH (the
same commands, on a stand-in broker). The runs on machines are tests/cluster/test_ssh_nodes.py.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
from pathlib import Path, PurePosixPath

import pytest

from kchaos.harness import ssh_install, ssh_leftovers
from kchaos.harness.cluster_shape import ClusterShape
from kchaos.harness.node_env import kafka_env
from kchaos.harness.ssh_node import KILLED_STATUS, SshNode
from kchaos.harness.ssh_session import SshLogin
from kchaos.model.config import ConfigError, load_config
from kchaos.model.ssh_address import SshAddress, nodes_from, parse_ssh_address
from kchaos.model.waiting import wait_until

THREE = "ssh://root@10.0.0.1,ssh://ops@10.0.0.2:2222,ssh://ops@[fd00::3]"


def refusal(**values: object) -> str:
    with pytest.raises(ConfigError) as caught:
        load_config(**values)
    return str(caught.value)


def test_addresses_name_a_user_a_host_and_a_port() -> None:
    assert parse_ssh_address("ssh://root@10.0.0.1") == SshAddress("root", "10.0.0.1", 22)
    assert parse_ssh_address("ssh://ops@kafka-1.example:2222") == SshAddress("ops", "kafka-1.example", 2222)
    v6 = parse_ssh_address("ssh://ops@[fd00::3]:23")
    assert (v6.host, v6.bare_host, v6.port) == ("[fd00::3]", "fd00::3", 23)
    assert str(parse_ssh_address("ssh://root@h")) == "ssh://root@h:22"


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("root@10.0.0.1", "is not ssh://USER@HOST[:PORT]"),
        ("ssh://10.0.0.1", "name the user to log in as"),
        ("ssh://root@", "is no host name or address"),
        ("ssh://root@h:0", "the port must be from 1 to 65535"),
        ("ssh://root@h:\uff12\uff12", "the port must be from 1 to 65535"),  # full-width digits
        ("ssh://root@h h", "is no host name or address"),
        ("ssh://-x@h", "name the user to log in as"),
    ],
)
def test_a_bad_address_is_refused_with_the_form(text: str, says: str) -> None:
    with pytest.raises(ValueError) as caught:
        parse_ssh_address(text)
    assert says in str(caught.value)


def test_nodes_come_from_a_list_or_a_file_each_machine_once(tmp_path: Path) -> None:
    assert [str(a) for a in nodes_from(THREE.split(","))][1] == "ssh://ops@10.0.0.2:2222"
    listed = tmp_path / "nodes"
    listed.write_text("# staging\nssh://root@10.0.0.1  # the first\n\nssh://root@10.0.0.2\n")
    assert [a.host for a in nodes_from([str(listed)])] == ["10.0.0.1", "10.0.0.2"]
    with pytest.raises(ValueError, match="named twice"):
        nodes_from(["ssh://root@h", "ssh://ops@h:22"])
    with pytest.raises(ValueError, match="neither an address"):
        nodes_from([str(tmp_path / "missing")])
    with pytest.raises(ValueError, match="give 1 to 64 machines, not 65"):
        nodes_from([f"ssh://root@10.0.1.{n}" for n in range(65)])


def test_the_brokers_are_the_machines_the_other_roles_leave() -> None:
    config = load_config(nodes=THREE)
    assert config.brokers == 3 and len(config.nodes) == 3
    config = load_config(nodes=THREE, spare_brokers=1, replication_factor=2, min_insync_replicas=1)
    assert (config.brokers, config.spare_brokers) == (2, 1)
    assert load_config(nodes=THREE, nemesis="kill,isolate:target=leader,power-loss").nodes


@pytest.mark.parametrize(
    ("values", "says"),
    [
        ({"ssh_key": "/etc/hostname"}, "ssh_key: --ssh-key is for machines reached over SSH; add --nodes"),
        ({"accept_new_host_keys": True}, "accept_new_host_keys: --accept-new-host-keys is for machines"),
        ({"nodes": THREE, "ssh_key": "/no/such/key"}, "'/no/such/key' is not a file"),
        ({"nodes": THREE, "known_hosts": "/no/such/dir/known_hosts"}, "'/no/such/dir' does not exist"),
        ({"nodes": THREE, "brokers": 2}, "nodes: 3 machines for 2 brokers"),
        (
            {"nodes": THREE, "metadata": "zookeeper", "kafka_version": "3.9.2"},
            "metadata: SSH nodes run KRaft clusters only",
        ),
        ({"nodes": THREE, "nemesis": "latency"}, "nemesis: latency is not built for SSH nodes yet"),
        ({"nodes": THREE, "nemesis": "isolate:target=clients"}, "cuts client processes off by their address"),
        ({"nodes": THREE, "nemesis": "hold"}, "is not built for SSH nodes yet (it needs kchaos's request"),
    ],
)
def test_what_ssh_nodes_cannot_do_is_refused_before_anything_starts(
    values: dict[str, object], says: str
) -> None:
    assert says in refusal(**values)


SERVICE = {"bootstrap": "10.0.0.1:9092", "nodes": THREE, "kafka_home": "/opt/kafka", "service": "kafka"}


def test_a_cluster_the_machines_run_as_a_service_is_faulted_with_the_default_faults() -> None:
    config = load_config(**SERVICE)
    assert config.nemesis == ("kill:target=leader", "isolate:target=leader")
    assert load_config(**SERVICE, nemesis="pause,one-way,rolling-restart").kafka_home == "/opt/kafka"


@pytest.mark.parametrize(
    ("values", "says"),
    [
        ({**SERVICE, "nemesis": "power-loss"}, "nemesis: power-loss needs kchaos's own installation"),
        ({**SERVICE, "nemesis": "cut-clients"}, "on --service brokers give only bridge, churn-members"),
        ({**SERVICE, "nemesis": "one-way:port=inter-broker"}, "nemesis: one-way:port=inter-broker needs"),
        ({**SERVICE, "fault_log": "/tmp/faults.log"}, "fault_log: with --nodes kchaos applies and records"),
        (
            {**SERVICE, "scenario": "acks-1-failover"},
            "scenario: acks-1-failover drives its faults by a cluster",
        ),
        ({**SERVICE, "brokers": 5}, "brokers: --brokers shapes a cluster kchaos starts"),
        (
            {**SERVICE, "service": None},
            "kafka_home: --kafka-home and --service name an installation together",
        ),
        ({**SERVICE, "kafka_home": "opt/kafka"}, "'opt/kafka' is not an absolute path"),
        ({**SERVICE, "service": "kafka service"}, "'kafka service' is not a systemd unit name"),
        ({**SERVICE, "kafka_home": None, "service": None}, "name its installation with --kafka-home DIR"),
        ({"nodes": THREE, "kafka_home": "/opt/kafka", "service": "kafka"}, "add its --bootstrap HOST:PORT"),
        ({"kafka_home": "/opt/kafka", "service": "kafka"}, "kafka_home: --kafka-home is for machines"),
    ],
)
def test_what_a_service_cluster_cannot_do_is_refused_before_anything_starts(
    values: dict[str, object], says: str
) -> None:
    assert says in refusal(**values)


def test_a_node_on_a_machine_is_told_the_machines_addresses() -> None:
    hosts = {1: "10.0.0.1", 2: "10.0.0.2", 3: "10.0.0.3"}
    env = kafka_env(ClusterShape(), 2, 9092, "id", host=hosts.__getitem__, client_host="10.0.0.2")
    assert env["KAFKA_ADVERTISED_LISTENERS"] == "CLIENT://10.0.0.2:9092,INTERNAL://10.0.0.2:19092"
    assert env["KAFKA_CONTROLLER_QUORUM_VOTERS"] == "1@10.0.0.1:9093,2@10.0.0.2:9093,3@10.0.0.3:9093"


class LocalSession:
    """`SshSession`'s commands, run in a local shell: the node's own code, on this host."""

    address = SshAddress("root", "localhost")

    def run_status(
        self, command: str, stdin: bytes | None = None, timeout: float = 60
    ) -> tuple[int, str, str]:
        done = subprocess.run(["sh", "-c", command], input=stdin or b"", capture_output=True, timeout=timeout)
        return done.returncode, done.stdout.decode(), done.stderr.decode()

    def run_bytes(self, command: str, stdin: bytes | None = None, timeout: float = 60) -> bytes:
        done = subprocess.run(["sh", "-c", command], input=stdin or b"", capture_output=True, timeout=timeout)
        if done.returncode != 0:
            from kchaos.harness.cluster_error import ClusterError

            raise ClusterError(f"{command} failed ({done.returncode}): {done.stderr.decode()}")
        return done.stdout

    def run(self, command: str, stdin: bytes | None = None, timeout: float = 60) -> str:
        return self.run_bytes(command, stdin, timeout).decode()


@pytest.fixture
def node(tmp_path: Path) -> SshNode:
    """A node whose 'broker' says it started, then sleeps (or exits with $STAND_IN_EXIT)."""
    bin_dir = tmp_path / "kafka" / "bin"
    bin_dir.mkdir(parents=True)
    entrypoint = bin_dir / "entrypoint.sh"
    entrypoint.write_text(
        '#!/bin/sh\necho "started with state $KCHAOS_STATE_DIR"\n'
        'if [ -n "${STAND_IN_EXIT:-}" ]; then exit "$STAND_IN_EXIT"; fi\nexec sleep 300\n'
    )
    entrypoint.chmod(0o755)
    (tmp_path / "state").mkdir()
    return SshNode(1, "localhost", LocalSession(), PurePosixPath(str(tmp_path)), {})  # type: ignore[arg-type]


def process_state(node: SshNode) -> str:
    pid = (Path(str(node.directory)) / "broker.pid").read_text().strip()
    return subprocess.run(["ps", "-o", "stat=", "-g", pid], capture_output=True, text=True).stdout


def test_a_node_s_broker_is_killed_frozen_thawed_and_restarted_as_one_process_group(node: SshNode) -> None:
    node.start()
    try:
        assert node.state == "running" and node.exit_code() is None
        wait_until(lambda: b"started" in node.logs(), 10, "the stand-in to start")
        assert f"state {node.state_dir}" in node.logs().decode()
        node.pause()
        assert process_state(node) and all(s.startswith("T") for s in process_state(node).split())
        node.restart()
        assert not any(s.startswith("T") for s in process_state(node).split())
        time.sleep(1.5)  # the first start's line is older than MARK_SLACK when the kill is noted
        before = time.time()
        node.kill()
        assert node.state == "killed" and node.exit_code() == KILLED_STATUS
        node.restart()
        assert node.exit_code() is None
        wait_until(lambda: node.logs().count(b"started") == 2, 10, "the second start")
        assert node.logs(since=before).count(b"started") == 1, "only what it wrote from the kill on"
        node.terminate(timeout=5)
        assert node.state == "stopped" and node.exit_code() is not None
    finally:
        node.kill()


def test_a_broker_that_ends_on_its_own_reports_its_status(node: SshNode) -> None:
    node.env = {"STAND_IN_EXIT": "3"}
    node.start()
    wait_until(lambda: node.exit_code() is not None, 10, "the stand-in to exit")
    assert node.exit_code() == 3


def test_a_node_s_files_are_read_replaced_in_place_and_put_whole(node: SshNode) -> None:
    path = node.state_dir / "segment.log"
    Path(str(path)).write_bytes(b"original")
    os.utime(str(path), (1_000_000, 1_000_000))
    node.replace_file(path, b"damaged!")
    assert node.read_file(path) == b"damaged!" and os.stat(str(path)).st_mtime == 1_000_000
    node.put_file(node.state_dir / "clock-shift", b"1 0 5000 0\n")
    assert node.read_file(node.state_dir / "clock-shift") == b"1 0 5000 0\n"
    assert not list(Path(str(node.state_dir)).glob("*.kchaos-new"))
    assert node.has_files(PurePosixPath("bin/entrypoint.sh")) and not node.has_files(
        PurePosixPath("lib/x.so")
    )
    with pytest.raises(Exception, match="no file"):
        node.read_file(node.state_dir / "missing")


def test_uninstall_kills_the_run_s_broker_and_removes_its_directory(
    node: SshNode, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ssh_install, "ROOT", PurePosixPath(str(tmp_path.parent)))
    node.start()
    pid = (tmp_path / "broker.pid").read_text().strip()
    ssh_install.uninstall(LocalSession(), tmp_path.name)  # type: ignore[arg-type]
    assert not tmp_path.exists()

    def gone() -> bool:  # left unreaped, a killed process's state is Z
        states = subprocess.run(["ps", "-o", "stat=", "-g", pid], capture_output=True, text=True).stdout
        return all(state.startswith("Z") for state in states.split())

    wait_until(gone, 10, "the broker's process group to be gone")


def test_a_machine_of_another_architecture_is_refused_naming_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ssh_install.platform, "machine", lambda: "aarch64")
    missing = ssh_install.missing_on(LocalSession())  # type: ignore[arg-type]
    assert any("a aarch64 CPU" in line for line in missing), missing


def test_a_machine_where_a_node_s_port_is_taken_is_refused_naming_the_port() -> None:
    with socket.socket() as taken:
        try:
            taken.bind(("127.0.0.1", 19092))
        except OSError:
            pytest.skip("port 19092 is in use on this host already")
        taken.listen()
        missing = ssh_install.missing_on(LocalSession())  # type: ignore[arg-type]
    assert "port 19092 in use" in missing, missing


def test_a_record_stays_until_its_machines_are_clean_and_a_live_run_s_is_left_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ssh_leftovers, "RECORDS", tmp_path)
    unreachable = (parse_ssh_address("ssh://root@127.0.0.1:1"),)
    ssh_leftovers.record("mine", unreachable, SshLogin(known_hosts=tmp_path / "known_hosts"))
    assert json.loads((tmp_path / "mine.json").read_text())["pid"] == os.getpid()
    assert ssh_leftovers.clean_abandoned() == []  # this process runs: not abandoned
    dead = subprocess.run(["sh", "-c", "echo $$"], capture_output=True, text=True).stdout.strip()
    entry = json.loads((tmp_path / "mine.json").read_text()) | {"pid": int(dead)}
    (tmp_path / "mine.json").write_text(json.dumps(entry))
    assert ssh_leftovers.clean_abandoned() == []  # abandoned, but its machine cannot be reached
    assert (tmp_path / "mine.json").exists(), "kept for the next try"
    ssh_leftovers.forget("mine")
    assert not (tmp_path / "mine.json").exists()
