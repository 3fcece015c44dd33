"""`kchaos run --nodes`: a cluster on machines kchaos reaches only over SSH (tests/cluster/ssh_machines.py:
containers of kchaos's SSH node image, sshd and no Kafka, which the test sets up through Docker as someone
racks machines).

A default run on three of them, logging in as `ops` (passwordless sudo) with a known_hosts file that does
not list them yet (`--accept-new-host-keys` adds them), with a kill and an isolate, ends `ok` with both
faults applied; the killed node's broker log, fetched over SSH, shows it started twice. Docker records no
action on the machines' containers while the run goes (no exec, kill, pause or copy: everything went over
SSH), and afterwards nothing of kchaos is on any machine (its directory, an iptables rule, a process) or
in this host's record of runs owing cleanup. A second run, killed outright (SIGKILL) once its brokers run,
is cleaned from the machines by its watchdog.

Cost: about 88 s: three machines up (1 s), the 20 s run on Kafka's quicker failure timers with its check
(about 67 s), the SIGKILL run's start and its cleanup (about 17 s). Paid for by two tests now nightly: the
replay half of tests/cluster/test_hunt_runs.py (about 50 s; CI still checks the printed command plans the
same schedule) and test_fault_effects.py's rolling restart (20 s). The pieces without machines (the
addresses, the refusals, the commands a node runs) are tests/test_ssh_nodes.py.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import docker
import pytest

from kchaos.harness.labels import RUN_LABEL
from kchaos.harness.ssh_leftovers import RECORDS
from kchaos.model.waiting import wait_until
from tests.cluster.fault_steps import QUICK_TIMER_FLAGS
from tests.cluster.ssh_machines import (
    Machines,
    docker_calls_on,
    kchaos_left_on,
    on_machine,
    run_kill_and_isolate,
    ssh_machines,
)

pytestmark = pytest.mark.cluster

KCHAOS = str(Path(sys.executable).parent / "kchaos")


@pytest.fixture(scope="module")
def machines(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Machines]:
    with ssh_machines(3, tmp_path_factory.mktemp("machines")) as machines:
        yield machines


def test_a_run_on_three_ssh_nodes_ends_ok_with_a_kill_and_an_isolate_and_leaves_nothing(
    machines: Machines, tmp_path: Path
) -> None:
    command = [
        KCHAOS, "run", "--nodes", machines.nodes_flag, *machines.login_flags(), "--accept-new-host-keys",
        "--nemesis", "kill,isolate", "--duration", "20", "--fault-duration", "3", "--fault-interval", "2",
        *QUICK_TIMER_FLAGS, "--runs-dir", str(tmp_path), "--run-id", "ssh",
    ]  # fmt: skip
    run = run_kill_and_isolate(command, tmp_path / "ssh")
    files, results = run.files, run.results
    divergence = results["anomalies"]["replica-divergence"]
    assert divergence["verdict"] == "ok", divergence  # every replica dumped over SSH and compared
    killed = results["faults"][0]["nodes"][0]
    host = machines.addresses[killed - 1].rsplit("@", 1)[1]
    broker_log = (files.logs / f"{host}.log").read_text(encoding="utf-8", errors="replace")
    assert broker_log.count("Kafka Server started") == 2, broker_log[-2000:]
    assert len((machines.known_hosts).read_text().splitlines()) == 3

    assert docker_calls_on(machines.containers, run.since, run.until) == []
    for container in machines.containers:
        assert kchaos_left_on(container) == []
    assert not (RECORDS / "ssh.json").exists()
    assert not docker.from_env().containers.list(all=True, filters={"label": f"{RUN_LABEL}=ssh"})


def test_a_run_on_ssh_nodes_killed_outright_is_cleaned_from_them_by_its_watchdog(
    machines: Machines, tmp_path: Path
) -> None:
    command = [
        KCHAOS, "run", "--nodes", machines.nodes_flag, *machines.login_flags(), "--nemesis", "none",
        "--client", "librdkafka", "--duration", "60", "--runs-dir", str(tmp_path), "--run-id", "sshkilled",
    ]  # fmt: skip
    run = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert run.stdout is not None
    said = []
    for line in run.stdout:
        said.append(line)
        if "writing for 60s" in line:
            break
    assert all("java" in on_machine(c, "ps -eo comm") for c in machines.containers), "".join(said)
    assert (RECORDS / "sshkilled.json").exists()
    run.kill()
    run.wait(30)
    wait_until(
        lambda: all(kchaos_left_on(c) == [] for c in machines.containers), 60,
        "the watchdog to clean the machines",
    )  # fmt: skip
    assert not (RECORDS / "sshkilled.json").exists()
