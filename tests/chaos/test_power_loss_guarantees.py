"""What Kafka promises when brokers lose power, one test each, against a real three-node KRaft cluster.

Kafka does not fsync its log by default; it relies on replication (Kafka documentation, Design >
Persistence; broker configs `log.flush.interval.messages` and `log.flush.interval.ms`). So acknowledged
writes survive a power loss as long as one in-sync replica keeps power, or every replica syncs each append;
when every in-sync replica loses power at once without that, the writes held only in memory are gone, and
the oracle must call that loss `permitted`, not a violation. The `power-loss` fault cuts each powered-off
node's log back to what it had synced, so the loss is deterministic, not a race.

Last replica standing under power loss is judged by the rule each release documents: before Eligible
Leader Replicas (3.9) the partition waits for its last in-sync replica and takes the log its power loss
left, a loss the documentation allows; with them (KIP-966, on by default for new clusters from 4.1) a
follower that left the ISR below min.insync.replicas holds every committed record and is elected, so
nothing acknowledged may be lost.
"""

from __future__ import annotations

import pytest

from kchaos.model.releases import DEFAULT_KAFKA_VERSION
from kchaos.runner.outcome import RunOutcome
from kchaos.runner.pytest_plugin import ChaosRun
from tests.chaos.promises import CLIENT_DUPLICATE_RULE, assert_promise_kept
from tests.cluster.conftest import nemesis_events, scenario_observed

pytestmark = pytest.mark.cluster

DURABLE = {"acks": "all", "min_insync_replicas": 2, "replication_factor": 3, "unclean_leader_election": False}
#: One power loss after a quiet start (8 to 18 s), then the tail's 10 s of writes to see the cluster serve
#: again.
ONE_POWER_LOSS = {"fault_interval": 8.0, "fault_duration": 10.0, "duration": 28.0, "rate": 200.0}
SYNC_EVERY_APPEND = {"log.flush.interval.messages": "1"}
#: The last release before Eligible Leader Replicas existed as a feature; and one with them on by default.
BEFORE_ELR = "3.9.2"
WITH_ELR = DEFAULT_KAFKA_VERSION


def dropped_records(outcome: RunOutcome, node_count: int) -> int:
    """Records the power loss's cut dropped across the test topic's partition logs, on every node."""
    events = nemesis_events(outcome)
    stop = events[(events["f"] == "power-loss") & (events["value"] == "stop")]
    assert len(stop) == 1, stop
    dropped = stop["detail"].iloc[0]["dropped"]
    assert len(dropped) == node_count, dropped
    return sum(
        log["records"]
        for node in dropped.values()
        for name, log in node["logs"].items()
        if name.startswith("kchaos-")
    )


# CI: the same loss on a real cluster (tests/cluster/test_power_loss.py, what was never synced is dropped),
# its verdict on planted histories (tests/test_power_loss_oracle.py), and a power-loss run judged end to end
# (the eligible-leader-replicas run below).
@pytest.mark.nightly
@pytest.mark.chaos(**DURABLE)
def test_power_loss_of_every_replica_without_sync_loses_acknowledged_writes_as_permitted(
    chaos_run: ChaosRun,
) -> None:
    """Every in-sync replica loses power at once and none had synced: the acknowledged writes they held
    only in the page cache are lost, which the documentation allows.

    No consumer reads during the run: a record a consumer had read before the power went would show as a
    `truncated-read`, not a `lost-write` (its value was read once); here the final read alone decides.
    """
    outcome = chaos_run(nemesis="power-loss:target=all", consumers=0, **ONE_POWER_LOSS)

    assert dropped_records(outcome, 3) > 0
    judged = outcome.results["anomalies"]
    assert judged["lost-write"]["count"] > 0, outcome.describe()
    assert (judged["lost-write"]["verdict"], judged["lost-write"]["rule_id"]) == (
        "permitted", "power-loss-took-isr"), judged["lost-write"]  # fmt: skip
    assert outcome.results["context"]["isr_at_power_loss"] == {"0": "lost-power", "1": "lost-power",
                                                               "2": "lost-power"}  # fmt: skip
    # Whatever else the lost offsets caused is permitted by the same rule; a client-made duplicate
    # (librdkafka #4953) is the only violation a run may show.
    for name, anomaly in judged.items():
        if anomaly["count"] and name != "duplicate":
            assert (anomaly["verdict"], anomaly["rule_id"]) == ("permitted", "power-loss-took-isr"), name
    assert outcome.verdict == "permitted" or judged["duplicate"]["rule_id"] == CLIENT_DUPLICATE_RULE


# CI: what each synced append keeps through a power loss of every replica (tests/cluster/test_power_loss.py),
# and a power-loss run judged end to end (the eligible-leader-replicas run below).
@pytest.mark.nightly
@pytest.mark.chaos(**DURABLE, broker_config=SYNC_EVERY_APPEND)
def test_power_loss_of_every_replica_loses_nothing_when_each_append_is_synced(chaos_run: ChaosRun) -> None:
    """With log.flush.interval.messages=1 every replica fsyncs each append before it counts towards the
    high watermark, so every acknowledged write is on disk when the power goes."""
    outcome = chaos_run(nemesis="power-loss:target=all", **ONE_POWER_LOSS)

    assert outcome.results["anomalies"]["lost-write"]["count"] == 0, outcome.describe()
    assert_promise_kept(outcome)


# CI: the leader alone losing power (tests/cluster/test_power_loss.py), and the last replica with eligible
# leader replicas below.
@pytest.mark.nightly
@pytest.mark.chaos(**DURABLE)
def test_power_loss_of_the_leader_alone_loses_nothing_acknowledged(chaos_run: ChaosRun) -> None:
    """The followers keep power and hold every acknowledged write (acks=all): one of them leads, and the
    old leader, its unsynced tail cut, refetches what it lost."""
    outcome = chaos_run(nemesis="power-loss:target=leader", **ONE_POWER_LOSS)

    assert dropped_records(outcome, 1) > 0  # the leader really lost its unsynced tail
    assert outcome.results["anomalies"]["lost-write"]["count"] == 0, outcome.describe()
    assert_promise_kept(outcome)


@pytest.mark.chaos(kafka_version=WITH_ELR)
def test_with_eligible_leader_replicas_a_follower_takes_over_and_nothing_acknowledged_is_lost(
    chaos_run: ChaosRun,
) -> None:
    """ISR shrunk to the leader below min.insync.replicas, so the followers join the ELR; the leader loses
    power and the controller elects one of them. The old leader's cut log is truncated to theirs."""
    outcome = chaos_run(scenario="last-replica-power-loss")
    seen = scenario_observed(outcome)

    leader = seen["leader"]
    followers = {1, 2, 3} - {leader}
    assert seen["recorded"]["isr"] == [leader], seen
    assert seen["recorded"]["elr"] and set(seen["recorded"]["elr"]) <= followers, seen
    assert seen["led_while_down"] in seen["recorded"]["elr"], seen
    assert dropped_records(outcome, 1) > 0  # the old leader really lost its unsynced tail
    print(f"ELR {seen['recorded']['elr']}; elected {seen['led_while_down']}; {seen}")
    assert outcome.results["context"]["isr_at_power_loss"]["0"] == "kept-power"
    assert outcome.results["summary"]["sends_acknowledged"] > 1000
    assert outcome.results["anomalies"]["lost-write"]["count"] == 0, outcome.describe()
    assert_promise_kept(outcome)


@pytest.mark.nightly  # CI: the same scenario with eligible leader replicas (above)
@pytest.mark.chaos(kafka_version=BEFORE_ELR)
def test_before_eligible_leader_replicas_the_last_replica_returns_with_its_cut_log_as_permitted(
    chaos_run: ChaosRun,
) -> None:
    """Same sequence on 3.9: no replica outside the ISR is eligible, so the partition stays offline until
    its old leader returns with what its disk held; the followers truncate to it, and every acknowledged
    write past that is lost, which the documentation allows (its whole ISR lost power)."""
    outcome = chaos_run(scenario="last-replica-power-loss")
    seen = scenario_observed(outcome)

    leader = seen["leader"]
    assert seen["recorded"]["isr"] == [leader] and seen["recorded"]["elr"] == [], seen
    assert seen["led_while_down"] is None and seen["still_offline"], seen
    assert seen["led_after"] == leader, seen
    assert dropped_records(outcome, 1) > 0
    judged = outcome.results["anomalies"]
    print(f"lost {judged['lost-write']['count']} acknowledged writes; {seen}")
    assert outcome.results["context"]["isr_at_power_loss"]["0"] == "lost-power"
    assert judged["lost-write"]["count"] > 0, outcome.describe()
    assert (judged["lost-write"]["verdict"], judged["lost-write"]["rule_id"]) == (
        "permitted", "power-loss-took-isr"), judged["lost-write"]  # fmt: skip
    for name, anomaly in judged.items():
        if anomaly["count"] and name != "duplicate":
            assert (anomaly["verdict"], anomaly["rule_id"]) == ("permitted", "power-loss-took-isr"), name
    # 3.9's log printer is the Scala one: the replicas were dumped, and agree once truncated.
    assert (judged["replica-divergence"]["checked"], judged["replica-divergence"]["count"]) == (True, 0)
