"""A partition reassignment under acks=all writes, on a real 4-broker cluster: one replica moved to the
broker that held none (the leader's, so leadership moves with it), then another move whose incoming broker
is killed while it still copies. Kafka's reassignment adds the incoming replica and lets it catch up before
it removes the outgoing one, so neither move may cost an acknowledged write."""

from __future__ import annotations

import pytest

from kchaos.runner.pytest_plugin import ChaosRun
from tests.chaos.promises import assert_promise_kept
from tests.chaos.test_replication_guarantees import DURABLE
from tests.cluster.conftest import nemesis_events

pytestmark = pytest.mark.cluster


@pytest.mark.chaos(
    **DURABLE, brokers=4, nemesis="reassign:replica=leader,reassign:interrupt=true", schedule="fixed",
    fault_interval=6.0, fault_duration=8.0, duration=38.0, rate=200.0, seed=3,
)  # fmt: skip
def test_a_moved_leader_and_an_interrupted_move_lose_no_acknowledged_write(chaos_run: ChaosRun) -> None:
    """Kafka operations docs, Expanding your cluster / reassignment: the new replicas join the ISR before
    the old ones are removed. Under acks=all and min.insync.replicas=2 no acknowledged write may be lost,
    whether the incoming broker copies in peace or is killed half-way."""
    outcome = chaos_run()
    events = nemesis_events(outcome)
    moves = events[events["f"] == "reassign"]
    starts = {row.key: row.detail for row in moves[moves["value"] == "start"].itertuples()}
    stops = {row.key: row.detail for row in moves[moves["value"] == "stop"].itertuples()}
    assert len(starts) == len(stops) == 2, moves[["key", "value", "detail"]]
    by_spec = {detail["spec"]: (key, detail) for key, detail in starts.items()}

    key, moved = by_spec["reassign:replica=leader"]
    assert moved["outgoing"] == moved["leader_before"], moved
    assert moved["incoming"] not in moved["replicas_before"], moved
    assert moved["replicas_after"][0] == moved["incoming"], moved  # the incoming broker is now preferred
    assert stops[key]["effect_seen_after_s"] is not None, stops[key]  # the move completed while it held

    key, interrupted = by_spec["reassign:interrupt=true"]
    assert interrupted["outgoing"] != interrupted["leader_before"], interrupted
    assert stops[key]["interrupted"], stops[key]  # killed while it copied, not after it had caught up
    assert stops[key]["effect_seen_after_s"] is not None, stops[key]

    assert outcome.count("lost-write") == 0, outcome.describe()
    assert_promise_kept(outcome)
