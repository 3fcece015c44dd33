"""What Kafka promises when brokers lose power, one test each, against a real three-node KRaft cluster.

Kafka does not fsync its log by default; it relies on replication (Kafka documentation, Design >
Persistence; broker configs `log.flush.interval.messages` and `log.flush.interval.ms`). So acknowledged
writes survive a power loss as long as one in-sync replica keeps power, or every replica syncs each append;
when every in-sync replica loses power at once without that, the writes held only in memory are gone, and
the oracle must call that loss `permitted`, not a violation. The `power-loss` fault cuts each powered-off
node's log back to what it had synced, so the loss is deterministic, not a race.
"""

from __future__ import annotations

import pytest

from runner.pytest_plugin import ChaosRun
from runner.run import RunOutcome
from tests.chaos.promises import assert_promise_kept
from tests.cluster.conftest import nemesis_events

pytestmark = pytest.mark.cluster

DURABLE = {"acks": "all", "min_insync_replicas": 2, "replication_factor": 3, "unclean_leader_election": False}
#: One power loss after a quiet start, then enough writes afterwards to see the cluster serve again.
ONE_POWER_LOSS = {"fault_interval": 10.0, "fault_duration": 10.0, "duration": 40.0, "rate": 200.0}
SYNC_EVERY_APPEND = {"log.flush.interval.messages": "1"}


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


@pytest.mark.chaos(**DURABLE)
def test_power_loss_of_every_replica_without_sync_loses_acknowledged_writes_as_permitted(
    chaos_run: ChaosRun,
) -> None:
    """Every in-sync replica loses power at once and none had synced: the acknowledged writes they held
    only in the page cache are lost, which the documentation allows."""
    outcome = chaos_run(nemesis="power-loss:target=all", **ONE_POWER_LOSS)

    assert dropped_records(outcome, 3) > 0
    lost = outcome.results["anomalies"]["lost-write"]
    assert lost["count"] > 0, outcome.describe()
    assert lost["verdict"] == "permitted", lost
    assert outcome.verdict in ("permitted", "violation"), outcome.describe()
    assert not [a for a in outcome.results["anomalies"].values() if a["verdict"] == "violation"
                and a["rule_id"] != "idempotent-producer"], outcome.describe()  # fmt: skip


@pytest.mark.chaos(**DURABLE, broker_config=SYNC_EVERY_APPEND)
def test_power_loss_of_every_replica_loses_nothing_when_each_append_is_synced(chaos_run: ChaosRun) -> None:
    """With log.flush.interval.messages=1 every replica fsyncs each append before it counts towards the
    high watermark, so every acknowledged write is on disk when the power goes."""
    outcome = chaos_run(nemesis="power-loss:target=all", **ONE_POWER_LOSS)

    assert outcome.results["anomalies"]["lost-write"]["count"] == 0, outcome.describe()
    assert_promise_kept(outcome)


@pytest.mark.chaos(**DURABLE)
def test_power_loss_of_the_leader_alone_loses_nothing_acknowledged(chaos_run: ChaosRun) -> None:
    """The followers keep power and hold every acknowledged write (acks=all): one of them leads, and the
    old leader, its unsynced tail cut, refetches what it lost."""
    outcome = chaos_run(nemesis="power-loss:target=leader", **ONE_POWER_LOSS)

    assert dropped_records(outcome, 1) > 0  # the leader really lost its unsynced tail
    assert outcome.results["anomalies"]["lost-write"]["count"] == 0, outcome.describe()
    assert_promise_kept(outcome)
