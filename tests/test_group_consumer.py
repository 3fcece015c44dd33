"""How a group member's commit outcome and client settings follow from its commit mode."""

from __future__ import annotations

from confluent_kafka import KafkaError

from kchaos.model.events import FAIL, INFO, OK
from kchaos.workloads.in_harness.group_consumer import AUTO_COMMIT_INTERVAL_MS, group_settings
from kchaos.workloads.outcome import commit_outcome


def test_a_refused_commit_failed_and_a_timed_out_one_is_unknown() -> None:
    assert commit_outcome(None) == OK
    assert commit_outcome(KafkaError(KafkaError.REBALANCE_IN_PROGRESS)) == FAIL
    assert commit_outcome(KafkaError(KafkaError.ILLEGAL_GENERATION)) == FAIL
    assert commit_outcome(KafkaError(KafkaError.STALE_MEMBER_EPOCH)) == FAIL
    assert commit_outcome(KafkaError(KafkaError.REQUEST_TIMED_OUT)) == INFO
    assert commit_outcome(KafkaError(KafkaError._TIMED_OUT)) == INFO
    assert commit_outcome(KafkaError(KafkaError.COORDINATOR_NOT_AVAILABLE)) == INFO


def test_only_auto_mode_lets_the_client_store_and_commit_offsets() -> None:
    sync = group_settings("localhost:9092", "member-0", "g", "sync")
    auto = group_settings("localhost:9092", "member-0", "g", "auto")
    assert sync["enable.auto.commit"] is False and sync["enable.auto.offset.store"] is False
    assert auto["enable.auto.commit"] is True and auto["enable.auto.offset.store"] is True
    assert auto["auto.commit.interval.ms"] == AUTO_COMMIT_INTERVAL_MS
    assert sync["group.id"] == auto["group.id"] == "g"
