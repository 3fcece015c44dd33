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

#: What the safe configuration must never show, whatever the faults: with leader epochs, replicas agree
#: after healing, and consumers only ever see committed records.
READER_AND_REPLICA_ANOMALIES = (
    "nonmonotonic-send", "poll-skip", "nonmonotonic-poll", "truncated-read", "replica-divergence",
)  # fmt: skip


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
    assert outcome.results["summary"]["records_read_poll"] > 1000, "consumers must read during the run"
    for anomaly in ("lost-write", "inconsistent-offset", *READER_AND_REPLICA_ANOMALIES):
        assert outcome.count(anomaly) == 0, anomaly
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

        def last(f: str) -> int:
            """The offset of the latest acknowledged send (f="send") or read (f="poll") in partition 0."""
            return history.last_offset(f, "ok", topic, 0)

        cut = nemesis.begin("cut-replication")
        assert cut is not None
        seen["isr_shrank_after_s"] = nemesis.await_condition(
            lambda: isr() == (leader,), 90, "ISR = leader alone"
        )
        # Beyond this offset (plus the few records a follower fetched but the leader had not yet acknowledged
        # when the cut began) only the leader holds partition 0: min.insync.replicas=1 lets it acknowledge
        # alone. With the ISR = the leader, those writes are committed at once, so consumers read them too.
        alone_from = last("send") + 100
        nemesis.await_condition(lambda: last("send") > alone_from + 100, 60, "writes the leader alone has")
        nemesis.await_condition(
            lambda: last("poll") > alone_from, 60, "consumers to read leader-alone writes"
        )
        if unclean:
            # A lagging reader: what the leader acknowledges from now on, nobody reads before it is gone.
            assert nemesis.readers is not None
            nemesis.readers.hold()
            unread_from = last("poll") + 1
            nemesis.await_condition(lambda: last("send") > unread_from + 100, 60, "writes no consumer reads")
        kill = nemesis.begin(f"kill:target={leader}")
        assert kill is not None
        seen["offline_after_s"] = nemesis.await_condition(
            lambda: cluster.leader_of(topic, 0, among=followers) == -1, 90, "partition 0 without a leader"
        )
        if unclean:
            old_end = last("send")
            election = nemesis.begin("unclean-election")
            assert election is not None
            nemesis.await_condition(election.effect_reached, 60, "an out-of-sync replica to lead")
            seen["new_leader"] = cluster.leader_of(topic, 0, among=followers)
            # Past the old leader's last acknowledged offset, every write it alone had lies below the final
            # read's end: absent there, it is a loss the checker can see (`lost-write`), not `unseen`.
            nemesis.await_condition(
                lambda: last("send") > old_end, 90, "new leader's writes past the old end"
            )
            nemesis.end(cut)
            nemesis.end(kill)  # the old leader returns and truncates what only it had
            nemesis.end(election)
            nemesis.readers.release()
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
    # Consumers read the leader-alone writes (committed: the ISR was the leader) before they vanished.
    assert outcome.count("truncated-read") > 0
    assert outcome.verdict_of("truncated-read") == "permitted"
    # Truncation on the old leader's return makes the replicas agree again: loss, not divergence.
    assert outcome.count("replica-divergence") == 0


def test_last_replica_standing_without_unclean_election_waits_and_loses_nothing(chaos_run: ChaosRun) -> None:
    seen: dict[str, Any] = {}
    outcome = chaos_run(scenario=last_replica_standing(False, seen), **LAST_REPLICA)

    assert seen["isr_shrank_after_s"] is not None and seen["offline_after_s"] is not None
    assert seen["still_offline"], "with unclean election off, no out-of-sync replica may lead"
    assert seen["back_after_s"] is not None, "the partition must come back with its old leader"
    events = nemesis_events(outcome)
    assert set(events[events["process"] == NEMESIS_PROCESS]["f"]) == {"cut-replication", "kill"}
    assert outcome.results["summary"]["sends_acknowledged"] > 1000
    for anomaly in ("lost-write", *READER_AND_REPLICA_ANOMALIES):
        assert outcome.count(anomaly) == 0, anomaly
    assert outcome.verdict == "ok"
