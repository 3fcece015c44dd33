"""Kafka's documented replication guarantees, one test each, against a real three-node KRaft cluster.

Each test is named for what the documentation says, cites where it says it, runs the faults that put
that sentence to the test, proves from the history that the fault really bit (leadership moved, the ISR
shrank), and asserts the outcome the sentence promises. Where the documentation says data *may* be lost,
the fault sequence is crafted so that it *is* lost, and the oracle must call it `permitted`, not a
violation.

Run one with the plugin's options, e.g.
`pytest tests/chaos -k committed_message --kchaos-kafka-version 4.3.1 --kchaos-keep-cluster`.
"""

from __future__ import annotations

import pandas as pd
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from kchaos.model.events import INVOKE, OUTCOMES, SEND, START
from kchaos.model.history_files import history_path
from kchaos.runner.outcome import RunOutcome
from kchaos.runner.pytest_plugin import ChaosRun
from tests.chaos.promises import STALLED_CONTROLLER_TIMEOUT_MS, assert_promise_kept
from tests.cluster.conftest import nemesis_events, scenario_observed

pytestmark = pytest.mark.cluster

#: The durable configuration the documentation's promise is made for.
DURABLE = {"acks": "all", "min_insync_replicas": 2, "replication_factor": 3, "unclean_leader_election": False}

#: Longer than broker.session.timeout.ms (9 s by default): the isolated leader is fenced and replaced
#: while it still accepts writes from clients that reach it.
ISOLATED_LEADER = {"nemesis": "isolate:target=leader", "fault_partition": 0, "fault_interval": 8.0,
                   "fault_duration": 20.0, "duration": 45.0, "rate": 200.0, "producers": 2}  # fmt: skip

#: With leader epochs, replicas agree after healing, and consumers only ever see committed records:
#: none of these may appear under the durable configuration, whatever the faults.
READER_AND_REPLICA_ANOMALIES = (
    "nonmonotonic-send", "poll-skip", "nonmonotonic-poll", "truncated-read", "replica-divergence",
)  # fmt: skip


def assert_leader_moved(events: pd.DataFrame, fault: str, expected_faults: int = 1) -> None:
    stops = events[(events["f"] == fault) & (events["value"] == "stop")]
    assert len(stops) >= expected_faults, (
        f"expected {expected_faults} {fault} faults, history has {len(stops)}"
    )
    for detail in stops["detail"]:
        # effect_seen_after_s is set only when the other nodes agreed on a new leader during the fault.
        assert detail["effect_seen_after_s"] is not None, f"{fault} never moved leadership: {detail}"


@pytest.mark.nightly  # CI holds the same promise with the leader killed once in test_default_run
@pytest.mark.chaos(**DURABLE)
def test_a_committed_message_is_not_lost_as_long_as_one_in_sync_replica_is_alive(chaos_run: ChaosRun) -> None:
    """Kafka documentation, Design > Replicated logs: Kafka guarantees that a committed message will not be
    lost as long as at least one in-sync replica stays alive. The leader is killed again and again; the
    other two replicas are in sync each time."""
    outcome = chaos_run(nemesis="kill:target=leader", fault_interval=5.0, fault_duration=8.0, duration=50.0)

    events = nemesis_events(outcome)
    assert_leader_moved(events, "kill", expected_faults=3)
    assert outcome.results["summary"]["sends_acknowledged"] > 1000
    assert outcome.count("lost-write") == 0
    assert outcome.count("inconsistent-offset") == 0
    assert_promise_kept(outcome)


#: A production-like load: loss windows, ISR shrinks under fetch lag and flush costs grow with it.
#: The kill (6 to 16 s) and the tail after it (10 s) fill the run: 260,000 sends.
HIGH_RATE = {"nemesis": "kill:target=leader", "rate": 10_000.0, "duration": 26.0, "fault_interval": 6.0,
             "fault_duration": 10.0}  # fmt: skip


def assert_every_send_has_one_outcome(outcome: RunOutcome) -> None:
    """Every value invoked was recorded once as invoked and once as acknowledged, failed or indeterminate:
    nothing the workload sent is missing from the history, however fast it sent."""
    table = pq.read_table(history_path(outcome.run_dir), columns=["process", "type", "f", "value"])
    sends = table.filter(pc.equal(table["f"], SEND)).to_pandas()
    sends = sends[sends["process"].str.startswith("producer-")]
    marked = sends.assign(invoked=sends["type"] == INVOKE, ended=sends["type"].isin(OUTCOMES))
    per_value = marked.groupby("value")[["invoked", "ended"]].sum()
    assert len(per_value) == outcome.results["summary"]["sends_invoked"]
    wrong = per_value[(per_value["invoked"] != 1) | (per_value["ended"] != 1)]
    assert wrong.empty, wrong.head(10)


@pytest.mark.nightly  # CI: a killed leader loses nothing acknowledged at the default rate in test_default_run
@pytest.mark.chaos(**DURABLE, **HIGH_RATE)
def test_at_ten_thousand_sends_a_second_a_killed_leader_loses_no_committed_message(
    chaos_run: ChaosRun,
) -> None:
    """Kafka documentation, Design > Replicated logs, as above, at a load where loss windows are wide:
    10,000 sends a second, the leader killed once. The run must reach the rate it asked for (else it
    tested a lighter load than it claims), and the history must still account for every send."""
    outcome = chaos_run()

    rates = outcome.results["rates"]
    print(rates["line"])
    assert not rates["shortfall"], rates["line"]
    assert_leader_moved(nemesis_events(outcome), "kill")
    assert_every_send_has_one_outcome(outcome)
    assert outcome.count("lost-write") == 0
    assert outcome.count("inconsistent-offset") == 0
    assert_promise_kept(outcome)


@pytest.mark.nightly  # CI: the isolated leader fenced in test_fault_effects, and acks=1 isolated below
@pytest.mark.chaos(**DURABLE, **ISOLATED_LEADER)
def test_with_acks_all_a_leader_cut_off_from_its_followers_cannot_acknowledge_alone(
    chaos_run: ChaosRun,
) -> None:
    """Producer config `acks`: with `all` the leader waits for the full set of in-sync replicas, and
    `min.insync.replicas` refuses the write when fewer remain. An isolated leader keeps taking writes from
    clients that still reach it, yet none of them may be acknowledged and then lost."""
    outcome = chaos_run()

    assert_leader_moved(nemesis_events(outcome), "isolate")
    assert outcome.results["summary"]["sends_acknowledged"] > 1000
    assert outcome.count("lost-write") == 0
    assert outcome.count("inconsistent-offset") == 0
    assert outcome.count("unseen") == 0
    assert_promise_kept(outcome)


def test_with_acks_1_a_write_is_lost_if_the_leader_fails_before_its_followers_copy_it(
    chaos_run: ChaosRun,
) -> None:
    """Producer config `acks`: with `1` the leader answers once its own log has the record; should it fail
    before the followers replicate it, the record is lost. Isolating the leader makes that certain: the
    majority elects another leader while the old one keeps acknowledging writes it will truncate."""
    outcome = chaos_run(scenario="acks-1-failover")

    seen = scenario_observed(outcome)
    assert seen["elected_after_s"] is not None, seen
    assert seen["new_leader"] not in (-1, seen["leader"]), seen
    assert outcome.count("lost-write") > 0
    assert outcome.verdict_of("lost-write") == "permitted"
    assert outcome.results["anomalies"]["lost-write"]["rule_id"] == "acks-1-failover"
    assert outcome.verdict == "permitted"
    assert outcome.report.exists()


@pytest.mark.nightly  # CI: KIP-101's unclean-election scenario on 0.10.2.2 (test_kafka_history)
def test_unclean_leader_election_may_lose_committed_messages(chaos_run: ChaosRun) -> None:
    """Topic config `unclean.leader.election.enable`: replicas outside the ISR may be elected leader as a
    last resort, which may lose data. Crafted: the ISR shrinks to the leader alone (min.insync.replicas=1
    lets it acknowledge alone), the leader dies, an out-of-sync follower is elected."""
    outcome = chaos_run(scenario="unclean-after-isr-shrink")
    seen = scenario_observed(outcome)

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


@pytest.mark.nightly  # CI keeps under 40 minutes; the same promise at a leader kill: ten_thousand above
def test_without_unclean_election_a_partition_waits_for_an_in_sync_replica_and_loses_nothing(
    chaos_run: ChaosRun,
) -> None:
    """Kafka documentation, Design > Unclean leader election: without it, Kafka waits for a replica in the
    ISR to come back and chooses it as leader, giving up availability rather than data. Same crafted
    sequence as above: the partition stays leaderless until the old leader returns."""
    outcome = chaos_run(scenario="last-replica-standing")
    seen = scenario_observed(outcome)

    assert seen["isr_shrank_after_s"] is not None and seen["offline_after_s"] is not None
    assert seen["still_offline"], "with unclean election off, no out-of-sync replica may lead"
    assert seen["back_after_s"] is not None, "the partition must come back with its old leader"
    events = nemesis_events(outcome)
    assert set(events[events["value"] == START]["f"]) == {"cut-replication", "kill"}
    assert outcome.results["summary"]["sends_acknowledged"] > 1000
    for anomaly in ("lost-write", *READER_AND_REPLICA_ANOMALIES):
        assert outcome.count(anomaly) == 0, anomaly
    assert_promise_kept(outcome)


@pytest.mark.nightly  # CI: seeded mixes of kill, isolate and pause judged in tests/cluster/test_hunt_runs.py
@pytest.mark.chaos(**DURABLE)
def test_consumers_only_see_committed_messages_and_replicas_converge_under_mixed_faults(
    chaos_run: ChaosRun,
) -> None:
    """Kafka documentation, Design > Replicated logs: messages are exposed to consumers only once committed;
    KIP-101 and KIP-279: with leader epochs every replica truncates to its leader's log, so logs converge.
    A seeded random mix of crashes, pauses, partitions and controller stops; nothing may be lost, no
    reader may see a record vanish or offsets jump, and the replicas must hold identical logs."""
    # The delivery timeout outlasts the slowest failover (`STALLED_CONTROLLER_TIMEOUT_MS`): in one CI run a
    # stalled KRaft controller took 33 and 41 s to fence a killed and a paused node.
    outcome = chaos_run(
        nemesis="kill:target=random,pause:target=leader,isolate:target=minority,halves,stop:target=controller",
        schedule="random", seed=11, duration=75.0, message_timeout_ms=STALLED_CONTROLLER_TIMEOUT_MS,
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
    assert_promise_kept(outcome)
