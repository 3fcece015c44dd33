"""`kchaos run --bootstrap` against a cluster kchaos did not start: the project's docker-compose file,
started beside it as a user would start theirs, with a fault applied by the test's "own tooling"
(`docker pause` of one broker) and written to a `--fault-log` while the run goes.

The run reaches the cluster only as a client (its librdkafka processes on the host's network, at the
addresses the brokers advertise), ends with a verdict, shows the paused broker on its timeline from the
log, says why replica divergence is not checked, and leaves the cluster as it found it: no topic, no group,
no container of its own. The compose project is labelled as kchaos's (owner: this test process), so a test
killed half-way leaves it to the next sweep.

Cost: about 55 s: the compose cluster's start (8 s), the 10 s run with its check (about 30 s), the two tests
below it (a topic the cluster already has is refused; a run killed outright leaves its topic to its
watchdog, which deletes it: about 5 s each), `down` (6 s). The default run this pays for is nightly now
(tests/cluster/test_default_run.py). The pieces without Kafka (refusals, the log's lines, the follower,
the unchecked divergence, the watchdog's side) are tests/test_existing_cluster.py and
tests/test_watchdog.py.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import docker
import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kchaos.harness.existing_cluster import NO_NODE_ACCESS
from kchaos.harness.labels import HOST_LABEL, PID_LABEL, RUN_LABEL, STDOUT_DIR_PREFIX
from kchaos.model.package_data import package_dir
from kchaos.model.run_files import RunDir
from kchaos.model.waiting import wait_until

pytestmark = pytest.mark.cluster

KCHAOS = str(Path(sys.executable).parent / "kchaos")
BOOTSTRAP = "127.0.0.1:29091,127.0.0.1:29092,127.0.0.1:29093"
PROJECT = "kchaos-bootstrap-test"
#: The broker the test's own tooling pauses, and its container.
PAUSED = 2
PAUSED_CONTAINER = f"{PROJECT}_kafka-{PAUSED}_1"
RUN_ID = "boot"


def compose(*args: str, override: Path) -> None:
    compose_file = package_dir("kchaos.compose")
    assert compose_file is not None
    command = ["docker-compose", "-f", str(compose_file / "docker-compose.yml"), "-f", str(override)]
    subprocess.run([*command, "-p", PROJECT, *args], check=True, capture_output=True, timeout=300)


@pytest.fixture(scope="module")
def compose_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The compose cluster, up and with all three brokers registered; removed with its network after."""
    labels = {RUN_LABEL: PROJECT, PID_LABEL: str(os.getpid()), HOST_LABEL: socket.gethostname()}
    override = tmp_path_factory.mktemp("compose") / "labels.yml"
    services = {f"kafka-{n}": {"labels": labels} for n in (1, 2, 3)}
    override.write_text(json.dumps({"version": "2.4", "services": services,
                                    "networks": {"default": {"labels": labels}}}))  # fmt: skip
    try:
        compose("up", "-d", override=override)

        def registered() -> bool:
            try:
                metadata = AdminClient({"bootstrap.servers": BOOTSTRAP, "log_level": 0}).list_topics(
                    timeout=3
                )
            except Exception:  # not answering yet
                return False
            return len(metadata.brokers) == 3 and metadata.controller_id >= 0

        wait_until(registered, 120, "the compose cluster's three brokers to register")
        yield BOOTSTRAP
    finally:
        compose("down", "-v", "--timeout", "5", override=override)


def test_a_run_against_a_cluster_kchaos_did_not_start_judges_it_and_shows_the_users_faults(
    compose_cluster: str, tmp_path: Path
) -> None:
    fault_log = tmp_path / "faults.log"
    command = [
        KCHAOS, "run", "--bootstrap", compose_cluster, "--fault-log", str(fault_log), "--duration", "10",
        "--runs-dir", str(tmp_path), "--run-id", RUN_ID,
    ]  # fmt: skip
    run = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    said: list[str] = []
    writing = threading.Event()

    def read() -> None:
        assert run.stdout is not None
        for line in run.stdout:
            said.append(line)
            if "writing for 10s" in line:
                writing.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    assert writing.wait(180), "".join(said)
    # The user's own tooling: pause broker 2 for 4 s, logging each step as it takes it.
    paused = docker.from_env().containers.get(PAUSED_CONTAINER)
    started = time.time()
    paused.pause()
    fault_log.write_text(f"{started:.3f} start pause-2 kind=pause nodes={PAUSED} docker pause kafka-2\n")
    time.sleep(4)  # the fault's length is the user's choice; nothing here waits on Kafka
    paused.unpause()
    with fault_log.open("a") as fh:
        fh.write(f"{time.time():.3f} stop pause-2\n")
    assert run.wait(300) == 0, "".join(said)
    reader.join(10)
    output = "".join(said)
    print(output[-3000:])

    files = RunDir(tmp_path / RUN_ID)
    results = json.loads(files.results.read_text(encoding="utf-8"))
    assert results["verdict"] == "ok", results["anomalies"]
    assert [(f["key"], f["kind"], f["nodes"]) for f in results["faults"]] == [("pause-2", "pause", [PAUSED])]
    assert results["faults"][0]["stop_wall"] - results["faults"][0]["start_wall"] == pytest.approx(4, abs=1.5)
    assert "docker pause kafka-2 (applied by your tooling" in files.report.read_text(encoding="utf-8")
    divergence = results["anomalies"]["replica-divergence"]
    assert divergence["verdict"] == "unchecked" and NO_NODE_ACCESS in json.dumps(divergence), divergence
    assert results["phases"]["complete"], results["phases"]
    config = json.loads(files.config.read_text(encoding="utf-8"))
    assert config["bootstrap"] == compose_cluster.split(",") and config["kafka_image"] is None

    # As it found it: none of the run's topics or groups, no container or stdout file of its clients.
    admin = AdminClient({"bootstrap.servers": compose_cluster, "log_level": 0})
    assert not [t for t in admin.list_topics(timeout=10).topics if not t.startswith("__")]
    groups = admin.list_consumer_groups().result(30).valid
    assert not [g.group_id for g in groups if RUN_ID in g.group_id]
    assert not docker.from_env().containers.list(all=True, filters={"label": f"{RUN_LABEL}={RUN_ID}"})
    assert not list(Path("/tmp").glob(f"{STDOUT_DIR_PREFIX}*"))


def test_a_topic_the_cluster_already_has_is_refused_before_anything_is_written(
    compose_cluster: str, tmp_path: Path
) -> None:
    """kchaos judges every record of its topics, so it writes only to topics it creates. About 5 s."""
    admin = AdminClient({"bootstrap.servers": compose_cluster, "log_level": 0})
    admin.create_topics([NewTopic("theirs", 1, 3)])["theirs"].result(30)
    try:
        command = [
            KCHAOS, "run", "--bootstrap", compose_cluster, "--topic", "theirs", "--client", "librdkafka",
            "--duration", "5", "--runs-dir", str(tmp_path), "--run-id", "clash",
        ]  # fmt: skip
        done = subprocess.run(command, capture_output=True, text=True, timeout=120)
        assert done.returncode != 0
        assert (
            "the cluster already has theirs; kchaos writes only to topics it creates"
            in done.stdout + done.stderr
        )
        reader = Consumer(
            {"bootstrap.servers": compose_cluster, "group.id": "kchaos-test-clash", "log_level": 0}
        )
        try:
            assert reader.get_watermark_offsets(TopicPartition("theirs", 0), timeout=10) == (0, 0)
        finally:
            reader.close()
    finally:
        admin.delete_topics(["theirs"])["theirs"].result(30)


def test_a_run_killed_outright_leaves_its_topics_to_the_watchdog_which_deletes_them(
    compose_cluster: str, tmp_path: Path
) -> None:
    """SIGKILL runs no code: the topics the run created are deleted by its watchdog once it is gone (the
    in-process client, so there is no container to wait for). About 5 s."""
    command = [
        KCHAOS, "run", "--bootstrap", compose_cluster, "--client", "librdkafka", "--duration", "60",
        "--topic", "killed", "--runs-dir", str(tmp_path), "--run-id", "killed",
    ]  # fmt: skip
    run = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert run.stdout is not None
    for line in run.stdout:
        if "writing for 60s" in line:
            break
    admin = AdminClient({"bootstrap.servers": compose_cluster, "log_level": 0})
    assert "killed" in admin.list_topics(timeout=10).topics
    history = RunDir(tmp_path / "killed").history_staging
    wait_until(lambda: history.stat().st_size > 0, 30, "the run to write rows to its history")
    run.kill()
    run.wait(30)
    written = history.stat().st_size
    wait_until(
        lambda: "killed" not in admin.list_topics(timeout=10).topics, 30, "the watchdog to delete the topic"
    )
    assert history.stat().st_size == written, "the history as the killed run left it"
