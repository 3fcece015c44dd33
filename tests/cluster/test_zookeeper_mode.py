"""Whole chaos runs on ZooKeeper-mode clusters: three brokers and one ZooKeeper node, on a release that
runs in either mode (3.9.2) and on ZooKeeper-era ones (0.11.0.3, and 0.10.2.2 without idempotence).

Each run is short, and each test proves what the mode changes: the cluster starts with a ZooKeeper node
whose log is kept beside the brokers', leadership moves when the leader is killed (the broker ZooKeeper
elected as controller notices the dead broker's session expire), and every broker's replica is dumped
and compared in the form its release prints.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterator
from typing import Any

import docker
import pytest

from kchaos.harness.cluster import KafkaCluster
from kchaos.harness.image import ensure_base, ensure_kafka_image
from kchaos.model.run_files import RunDir
from kchaos.runner.outcome import RunOutcome
from kchaos.runner.pytest_plugin import ChaosRun
from tests.cluster.conftest import assert_no_leftovers, nemesis_events

pytestmark = pytest.mark.cluster

ZOOKEEPER_MODE = {"metadata": "zookeeper", "acks": "all", "replication_factor": 3, "min_insync_replicas": 2}
#: One fault after a short quiet start, and writes to the new leader after it.
ONE_KILL = {"nemesis": "kill:target=leader", "fault_interval": 5.0, "fault_duration": 10.0, "duration": 30.0}
QUIET = {"nemesis": "none", "duration": 30.0}
#: The controller cut off from ZooKeeper, then ZooKeeper killed, with sessions of 6 s (the default before
#: 2.5) so the first fault's effect comes within its 15 s; 3 to 18 s and 21 to 36 s, then the tail.
ZOOKEEPER_FAULTS = {
    "nemesis": "cut-zookeeper:target=controller,kill:target=zookeeper",
    "fault_interval": 3.0,
    "fault_duration": 15.0,
    "duration": 46.0,
    "broker_config": {"zookeeper.session.timeout.ms": "6000"},
}
#: Longer than zookeeper.session.timeout.ms (18 s from 2.5): the isolated leader's session expires.
ISOLATED_LEADER = {
    "nemesis": "isolate:target=leader",
    "fault_interval": 5.0,
    "fault_duration": 25.0,
    "duration": 45.0,
}


@pytest.fixture(autouse=True)
def nothing_left_behind() -> Iterator[None]:
    yield
    assert_no_leftovers()


def manifest(outcome: RunOutcome) -> dict[str, Any]:
    return dict(json.loads(RunDir(outcome.run_dir).replicas_manifest.read_text(encoding="utf-8")))


def assert_zookeeper_run(outcome: RunOutcome, dump_format: str) -> None:
    """A ZooKeeper-mode run: recorded as one, its ZooKeeper's log kept, every replica dumped and compared."""
    files = RunDir(outcome.run_dir)
    assert json.loads(files.config.read_text(encoding="utf-8"))["metadata"] == "zookeeper"
    assert b"binding to port" in (files.logs / "zookeeper.log").read_bytes()
    dumped = manifest(outcome)
    assert dumped["failed"] == {}, dumped["failed"]
    assert dumped["dump_formats"] == {"1": dump_format, "2": dump_format, "3": dump_format}
    assert {replica["broker"] for replica in dumped["replicas"]} == {1, 2, 3}
    assert outcome.count("replica-divergence") == 0
    assert outcome.count("lost-write") == 0


def assert_leadership_moved(outcome: RunOutcome, fault: str = "kill") -> None:
    events = nemesis_events(outcome)
    stops = events[(events["f"] == fault) & (events["value"] == "stop")]
    assert len(stops) == 1, events
    # Set only once the other brokers agreed on a new leader while the killed one was down.
    assert stops["detail"].iloc[0]["effect_seen_after_s"] is not None, stops["detail"].iloc[0]


@pytest.mark.nightly  # CI's ZooKeeper-mode runs: KIP-101's sequence on 0.10.2.2 (test_kafka_history.py)
@pytest.mark.chaos(kafka_version="3.9.2", **ZOOKEEPER_MODE)
def test_on_3_9_in_zookeeper_mode_leadership_moves_when_the_leader_is_killed(chaos_run: ChaosRun) -> None:
    outcome = chaos_run(**ONE_KILL)

    assert outcome.verdict == "ok", outcome.describe()
    assert_leadership_moved(outcome)
    assert outcome.results["summary"]["sends_acknowledged"] > 1000
    assert_zookeeper_run(outcome, "batches")


@pytest.mark.nightly  # also in the nightly's fault effects on 2.6.3; CI: KIP-101 on 0.10.2.2
@pytest.mark.chaos(kafka_version="3.9.2", **ZOOKEEPER_MODE)
def test_on_3_9_in_zookeeper_mode_an_isolated_leader_loses_zookeeper_too_and_is_replaced(
    chaos_run: ChaosRun,
) -> None:
    """Cut off from the other brokers and from ZooKeeper, the leader's session expires and the controller
    elects another; the writes it took meanwhile cannot reach min.insync.replicas, so none is lost."""
    outcome = chaos_run(**ISOLATED_LEADER)

    assert outcome.verdict == "ok", outcome.describe()
    assert_leadership_moved(outcome, "isolate")
    assert_zookeeper_run(outcome, "batches")


@pytest.mark.nightly  # the fix was shown by a whole 2.8.2 run (docs/faults.md, lost directory entries)
@pytest.mark.chaos(kafka_version="3.9.2", **ZOOKEEPER_MODE)
def test_on_3_9_every_broker_killed_comes_back_once_zookeeper_has_expired_their_sessions(
    chaos_run: ChaosRun,
) -> None:
    """Every broker SIGKILLed for 10 s, less than the 18 s ZooKeeper session: restarted at once, each would
    find its old registration and exit ("node already exists"). The restart waits until ZooKeeper has
    dropped them, and the run ends whole."""
    outcome = chaos_run(nemesis="kill:target=all", fault_interval=5.0, fault_duration=10.0, duration=30.0)

    assert outcome.verdict == "ok", outcome.describe()
    events = nemesis_events(outcome)
    stop = events[(events["value"] == "stop") & (events["f"] == "kill")].iloc[0]
    assert stop["detail"]["registrations_expired"] is True, stop["detail"]
    assert_zookeeper_run(outcome, "batches")


# Nightly: CI runs whole ZooKeeper-mode runs under faults in tests/chaos/test_kafka_history.py (KIP-101's
# sequence on 0.10.2.2), and ZooKeeper-mode brokers with the confluent-kafka client in test_old_releases.py.
@pytest.mark.nightly
@pytest.mark.chaos(kafka_version="3.9.2", **ZOOKEEPER_MODE)
def test_on_3_9_the_controller_cut_off_from_zookeeper_and_zookeeper_killed_lose_nothing(
    chaos_run: ChaosRun,
) -> None:
    """ZooKeeper's own faults in a whole run: the controller loses ZooKeeper (another broker is elected and
    fences it), then ZooKeeper itself dies while the brokers keep serving. Neither may lose a write."""
    outcome = chaos_run(**ZOOKEEPER_FAULTS)

    assert outcome.verdict == "ok", outcome.describe()
    events = nemesis_events(outcome)
    stops = events[events["value"] == "stop"]
    assert [(row["f"], row["detail"]["kind"]) for _, row in stops.iterrows()] == [
        ("cut-zookeeper", "partition"),
        ("kill", "zookeeper"),
    ]
    for (
        _,
        row,
    ) in stops.iterrows():  # each effect seen: the old controller fenced; ZooKeeper gone, brokers serving
        assert row["detail"]["effect_seen_after_s"] is not None, row["detail"]
    assert outcome.results["summary"]["sends_acknowledged"] > 1000
    assert_zookeeper_run(outcome, "batches")


@pytest.mark.nightly  # like KIP-101's scenario on 0.11 (test_kafka_history.py)
@pytest.mark.chaos(kafka_version="0.11.0.3", **ZOOKEEPER_MODE)
def test_on_0_11_leadership_moves_when_the_leader_is_killed_and_replicas_agree(chaos_run: ChaosRun) -> None:
    outcome = chaos_run(**ONE_KILL)

    assert outcome.verdict == "ok", outcome.describe()
    assert_leadership_moved(outcome)
    assert outcome.results["summary"]["sends_acknowledged"] > 1000
    assert_zookeeper_run(outcome, "batches-then-records")


@pytest.mark.nightly  # 0.10.2 runs whole scenarios in test_kafka_history.py on every CI run
@pytest.mark.chaos(kafka_version="0.10.2.2", idempotence=False, **ZOOKEEPER_MODE)
def test_on_0_10_2_without_idempotence_the_run_is_whole_and_its_replicas_agree(chaos_run: ChaosRun) -> None:
    outcome = chaos_run(**QUIET)

    assert outcome.verdict == "ok", outcome.describe()
    assert outcome.results["summary"]["sends_acknowledged"] > 1000
    assert_zookeeper_run(outcome, "records")


def test_the_controller_target_is_the_broker_zookeeper_elected() -> None:
    """No quorum to ask in ZooKeeper mode: the controller a metadata answer names is the broker whose own
    log says ZooKeeper elected it."""
    client = docker.from_env()
    cluster = KafkaCluster(
        run_id=f"zk-controller-{secrets.token_hex(3)}",
        image=ensure_kafka_image("3.9.2", client),
        sidecar_image=ensure_base(client),
        metadata_mode="zookeeper",
    )
    with cluster:
        assert cluster.zookeeper is not None and cluster.zookeeper.answers()
        controller = cluster.metadata.active_controller()
        assert (
            f"{controller} successfully elected as the controller".encode()
            in cluster.nodes[controller].logs()
        )
