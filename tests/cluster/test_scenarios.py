"""Whole runs: a seeded random mix of faults under the safe configuration, and "last replica standing".

Last replica standing is Jepsen's 2013 Kafka finding: let the ISR shrink to the leader alone, keep writing
with acks=all, then kill the leader. Whether acknowledged writes survive depends on one setting, unclean
leader election, and the two tests below craft the same fault sequence for both values.
"""

from __future__ import annotations

from typing import Any

import pytest

from harness.history import NEMESIS_PROCESS
from nemesis.schedule import Nemesis
from tests.cluster.conftest import ChaosRun, nemesis_events

pytestmark = pytest.mark.cluster

SAFE = {"acks": "all", "min_insync_replicas": 2, "replication_factor": 3, "unclean_leader_election": False}


def test_seeded_random_mix_of_faults_loses_nothing_under_the_safe_configuration(chaos_run: ChaosRun) -> None:
    outcome = chaos_run(
        **SAFE,
        nemesis="kill:target=random,pause:target=leader,isolate:target=minority,halves,stop:target=controller",
        schedule="random", seed=11, duration=75.0,
        fault_duration=6.0, fault_duration_max=12.0, fault_interval=3.0, fault_interval_max=6.0,
    )  # fmt: skip

    events = nemesis_events(outcome)
    started = events[events["value"] == "start"]
    assert len(started) >= 3, f"only {len(started)} faults ran"
    assert started["f"].nunique() >= 2, "a mix needs more than one kind of fault"
    assert outcome.results["summary"]["sends_acknowledged"] > 1000
    assert outcome.count("lost-write") == 0
    assert outcome.count("inconsistent-offset") == 0
    assert outcome.verdict == "ok"


LAST_REPLICA = {
    "acks": "all", "min_insync_replicas": 1, "replication_factor": 3, "unclean_leader_election": False,
    "duration": 30.0, "broker_config": {"replica.lag.time.max.ms": "8000"},
    # Writes to partition 0 wait out the offline window; a timeout would end the idempotent epoch.
    "message_timeout_ms": 60000,
}  # fmt: skip


def last_replica_standing(unclean: bool, seen: dict[str, Any]) -> Any:
    """The crafted sequence; `seen` collects what the scenario observed, for the test to assert on."""

    def scenario(nemesis: Nemesis) -> None:
        cluster, topic, history = nemesis.cluster, nemesis.topic, nemesis.history
        leader = cluster.leader_of(topic, 0)
        followers = [n for n in cluster.nodes if n != leader]
        seen["leader"] = leader

        def isr() -> tuple[int, ...]:
            view = cluster.view_from(leader, topic)
            return view.partitions[0].isr if view else ()

        def acked_more(count: int) -> Any:
            target = history.count("send", "ok") + count
            return lambda: history.count("send", "ok") >= target

        cut = nemesis.begin("cut-replication")
        assert cut is not None
        seen["isr_shrank_after_s"] = nemesis.await_condition(
            lambda: isr() == (leader,), 90, "ISR = leader alone"
        )
        # Writes the leader alone acknowledges (min.insync.replicas=1 allows it): only it has them.
        nemesis.await_condition(acked_more(600), 60, "writes acknowledged by the leader alone")
        kill = nemesis.begin(f"kill:target={leader}")
        assert kill is not None
        seen["offline_after_s"] = nemesis.await_condition(
            lambda: cluster.leader_of(topic, 0, among=followers) == -1, 90, "partition 0 without a leader"
        )
        if unclean:
            election = nemesis.begin("unclean-election")
            assert election is not None
            nemesis.await_condition(election.effect_reached, 60, "an out-of-sync replica to lead")
            seen["new_leader"] = cluster.leader_of(topic, 0, among=followers)
            nemesis.await_condition(acked_more(600), 60, "writes to the new leader")
            nemesis.end(cut)
            nemesis.end(kill)  # the old leader returns and truncates what only it had
            nemesis.end(election)
        else:
            # Nothing can lead: every write to partition 0 waits or fails until the old leader returns.
            seen["still_offline"] = cluster.leader_of(topic, 0, among=followers) == -1
            nemesis.end(kill)
            seen["back_after_s"] = nemesis.await_condition(
                lambda: cluster.leader_of(topic, 0) == leader, 120, "the old leader to lead again"
            )
            nemesis.end(cut)

    return scenario


def test_last_replica_standing_with_unclean_election_loses_acknowledged_writes(chaos_run: ChaosRun) -> None:
    seen: dict[str, Any] = {}
    outcome = chaos_run(scenario=last_replica_standing(True, seen), **LAST_REPLICA)

    assert seen["isr_shrank_after_s"] is not None and seen["offline_after_s"] is not None
    assert seen["new_leader"] not in (-1, seen["leader"]), "an out-of-sync follower must have been elected"
    assert outcome.count("lost-write") > 0
    assert outcome.verdict_of("lost-write") == "permitted"
    assert outcome.results["anomalies"]["lost-write"]["rule_id"] == "unclean-election"


def test_last_replica_standing_without_unclean_election_waits_and_loses_nothing(chaos_run: ChaosRun) -> None:
    seen: dict[str, Any] = {}
    outcome = chaos_run(scenario=last_replica_standing(False, seen), **LAST_REPLICA)

    assert seen["isr_shrank_after_s"] is not None and seen["offline_after_s"] is not None
    assert seen["still_offline"], "with unclean election off, no out-of-sync replica may lead"
    assert seen["back_after_s"] is not None, "the partition must come back with its old leader"
    events = nemesis_events(outcome)
    assert set(events[events["process"] == NEMESIS_PROCESS]["f"]) == {"cut-replication", "kill"}
    assert outcome.results["summary"]["sends_acknowledged"] > 1000
    assert outcome.count("lost-write") == 0
    assert outcome.verdict == "ok"
