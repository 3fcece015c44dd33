"""The same leader faults under two producer configurations, judged against Kafka's documentation.

Kafka promises that a committed message is not lost while one in-sync replica remains alive; with acks=1 a
write is acknowledged before it is committed, so a leader failover may drop it. Each scenario below is
crafted so the fault really bites (the majority elects a new leader while the old one still accepts
writes), and the history is inspected to prove it did.
"""

from __future__ import annotations

import pytest

from tests.cluster.conftest import ChaosRun, nemesis_events

pytestmark = pytest.mark.cluster

# Longer than broker.session.timeout.ms (9 s by default): the isolated leader is fenced and replaced.
ISOLATION = {"nemesis": "isolate-leader", "fault_partition": 0, "fault_interval": 8.0, "fault_duration": 20.0,
             "duration": 45.0, "rate": 200.0, "producers": 2}  # fmt: skip


def assert_leader_moved(outcome_events, fault: str, expected_faults: int = 1) -> None:  # type: ignore[no-untyped-def]
    stops = outcome_events[(outcome_events["f"] == fault) & (outcome_events["value"] == "stop")]
    assert len(stops) >= expected_faults, (
        f"expected {expected_faults} {fault} faults, history has {len(stops)}"
    )
    for detail in stops["detail"]:
        # effect_seen_after_s is set only when the other nodes agreed on a new leader during the fault.
        assert detail["effect_seen_after_s"] is not None, f"{fault} never moved leadership: {detail}"


def test_isolated_leader_with_acks_1_loses_acknowledged_writes(chaos_run: ChaosRun) -> None:
    outcome = chaos_run(acks="1", **ISOLATION)

    assert_leader_moved(nemesis_events(outcome), "isolate")
    assert outcome.count("lost-write") > 0
    assert outcome.verdict_of("lost-write") == "permitted"
    assert outcome.verdict == "permitted"
    assert outcome.report.exists()


def test_isolated_leader_with_acks_all_loses_nothing(chaos_run: ChaosRun) -> None:
    outcome = chaos_run(acks="all", min_insync_replicas=2, replication_factor=3,
                        unclean_leader_election=False, **ISOLATION)  # fmt: skip

    assert_leader_moved(nemesis_events(outcome), "isolate")
    assert outcome.results["summary"]["sends_acknowledged"] > 1000
    assert outcome.count("lost-write") == 0
    assert outcome.count("inconsistent-offset") == 0
    assert outcome.count("unseen") == 0
    assert outcome.verdict == "ok"


def test_leader_killed_repeatedly_with_acks_all_loses_nothing(chaos_run: ChaosRun) -> None:
    outcome = chaos_run(
        acks="all", min_insync_replicas=2, replication_factor=3, unclean_leader_election=False,
        nemesis="kill-leader", fault_interval=5.0, fault_duration=8.0, duration=50.0,
    )  # fmt: skip

    events = nemesis_events(outcome)
    assert_leader_moved(events, "kill", expected_faults=3)
    killed = {node for detail in events["detail"] for node in detail["nodes"]}
    assert killed, "no node was killed"
    assert outcome.results["summary"]["sends_acknowledged"] > 1000
    assert outcome.count("lost-write") == 0
    assert outcome.count("inconsistent-offset") == 0
    assert outcome.verdict == "ok"
