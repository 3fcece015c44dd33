"""`kchaos run --bootstrap ... --nodes ... --kafka-home DIR --service NAME`: a cluster the machines already
run as a systemd service, which kchaos did not install, faulted over SSH.

The test is the operator: it boots three machines with systemd (tests/cluster/ssh_machines.py), unpacks a
Kafka under /opt/kafka on each (the installation of kchaos's image, through Docker, as a configuration
tool would), and runs it as `kafka.service` with `Restart=on-failure`, configured by an environment file.
Then kchaos runs against it with a kill and an isolate: the run ends `ok` with both faults applied, the
replicas dumped with the installation's own tools and compared, the brokers' journals saved; the killed
broker's journal shows it started again; Docker records no action on the machines during the run;
afterwards every service is active, the run's topic is gone, and nothing of kchaos is on any machine.

A second run, killed outright while its kill holds a broker down, leaves it to the watchdog, which starts
the service again and removes the run's traces.

Cost: about 80 s (three machines booted, the cluster's start, a 20 s run with its check, the SIGKILLed
run): nightly. CI covers the same faults over SSH on kchaos's own installation
(tests/cluster/test_ssh_nodes.py) and the client's side of a cluster kchaos did not start
(tests/cluster/test_bootstrap.py); the refusals are tests/test_ssh_nodes.py's.
"""

from __future__ import annotations

import io
import subprocess
import sys
import tarfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient

from kchaos.harness.cluster_shape import ClusterShape
from kchaos.harness.node_env import kafka_env, new_cluster_id
from kchaos.harness.ssh_install import kafka_archive
from kchaos.model.waiting import wait_until
from tests.cluster.fault_steps import QUICK_TIMERS
from tests.cluster.ssh_machines import (
    Machines,
    docker_calls_on,
    on_machine,
    run_kill_and_isolate,
    ssh_machines,
)

pytestmark = [pytest.mark.cluster, pytest.mark.nightly]

KCHAOS = str(Path(sys.executable).parent / "kchaos")
UNIT = """[Unit]
Description=Apache Kafka
After=network.target
[Service]
EnvironmentFile=/etc/kafka.env
ExecStart=/opt/kafka/bin/entrypoint.sh
Restart=on-failure
[Install]
WantedBy=multi-user.target
"""


def _ip(machines: Machines, n: int) -> str:
    return machines.addresses[n - 1].rsplit("@", 1)[1]


@pytest.fixture(scope="module")
def service_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Machines, str]]:
    with ssh_machines(3, tmp_path_factory.mktemp("machines"), init=True) as machines:
        archive = kafka_archive("kchaos/kafka:4.3.1")
        cluster_id = new_cluster_id()
        for n, container in enumerate(machines.containers, start=1):
            wait_until(
                lambda c=container: "running" in on_machine(c, "systemctl is-system-running"), 60, "boot"
            )
            container.put_archive("/opt", archive)
            env = kafka_env(
                ClusterShape(), n, 9092, cluster_id, broker_config=QUICK_TIMERS,
                host=lambda m: _ip(machines, m), client_host=_ip(machines, n),
            )  # fmt: skip
            lines = "".join(f"{key}={value}\n" for key, value in {**env, "KAFKA_HOME": "/opt/kafka"}.items())
            files = {"etc/kafka.env": lines, "etc/systemd/system/kafka.service": UNIT}
            payload = io.BytesIO()
            with tarfile.open(fileobj=payload, mode="w") as tar:
                for name, text in files.items():
                    info = tarfile.TarInfo(name)
                    info.size = len(text.encode())
                    tar.addfile(info, io.BytesIO(text.encode()))
            container.put_archive("/", payload.getvalue())
            on_machine(container, "systemctl daemon-reload && systemctl enable --now kafka")
        bootstrap = ",".join(f"{_ip(machines, n)}:9092" for n in (1, 2, 3))

        def registered() -> bool:
            try:
                return len(AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=3).brokers) == 3
            except Exception:  # not answering yet
                return False

        wait_until(registered, 120, "the services' three brokers to register")
        yield machines, bootstrap


def test_a_cluster_the_machines_run_as_a_service_is_faulted_judged_and_left_running(
    service_cluster: tuple[Machines, str], tmp_path: Path
) -> None:
    machines, bootstrap = service_cluster
    command = [
        KCHAOS, "run", "--bootstrap", bootstrap, "--nodes", machines.nodes_flag, *machines.login_flags(),
        "--accept-new-host-keys", "--kafka-home", "/opt/kafka", "--service", "kafka",
        "--nemesis", "kill,isolate", "--duration", "20", "--fault-duration", "3", "--fault-interval", "2",
        "--kafka-version", "4.3.1", "--runs-dir", str(tmp_path), "--run-id", "svc",
    ]  # fmt: skip
    run = run_kill_and_isolate(command, tmp_path / "svc")
    files, results = run.files, run.results
    assert results["anomalies"]["replica-divergence"]["verdict"] == "ok"
    killed = results["faults"][0]["nodes"][0]
    journal = (files.logs / f"{_ip(machines, killed)}.log").read_text(encoding="utf-8", errors="replace")
    # The journal from when the run reached the broker, which had started before: a start in it is the
    # service's start after the kill.
    assert journal.count("Kafka Server started") == 1, journal[-2000:]
    assert "Kafka Server started" in on_machine(machines.containers[killed - 1], "journalctl -u kafka -o cat")

    assert docker_calls_on(machines.containers, run.since, run.until) == []
    for container in machines.containers:
        assert on_machine(container, "systemctl is-active kafka").strip() == "active"
        assert on_machine(container, "test -e /var/tmp/kchaos && echo there") == ""  # its scratch dir
        assert "kchaos" not in on_machine(container, "iptables-save; iptables-save -t nat")
    topics = AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=10).topics
    assert not [t for t in topics if not t.startswith("__")], topics


def test_a_run_killed_outright_during_a_kill_leaves_every_service_running_again(
    service_cluster: tuple[Machines, str], tmp_path: Path
) -> None:
    """SIGKILL while a broker is held down by the fault: the watchdog starts the service again, deletes the
    run's rules and scratch directory (and its topic)."""
    machines, bootstrap = service_cluster
    command = [
        KCHAOS, "run", "--bootstrap", bootstrap, "--nodes", machines.nodes_flag, *machines.login_flags(),
        "--kafka-home", "/opt/kafka", "--service", "kafka", "--nemesis", "kill:target=leader",
        "--duration", "60", "--fault-interval", "1", "--fault-duration", "30", "--client", "librdkafka",
        "--kafka-version", "4.3.1", "--runs-dir", str(tmp_path), "--run-id", "svckilled",
    ]  # fmt: skip
    run = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    down = lambda: any(  # noqa: E731
        on_machine(c, "systemctl is-active kafka").strip() != "active" for c in machines.containers
    )
    wait_until(down, 120, "the fault to hold a broker down")
    run.kill()
    run.wait(30)
    wait_until(lambda: not down(), 60, "the watchdog to start every service again")
    for container in machines.containers:
        assert on_machine(container, "test -e /var/tmp/kchaos && echo there") == ""
        assert "kchaos" not in on_machine(container, "iptables-save; iptables-save -t nat")
