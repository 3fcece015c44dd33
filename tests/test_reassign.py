"""`reassign`: the replica list it asks for, when it counts as done, and the runs it is refused for before
anything starts (a cluster with no broker to move onto, a release whose tool cannot reach the brokers)."""

from __future__ import annotations

import pytest

from kchaos.harness.metadata import PartitionState
from kchaos.harness.replicas import is_live_log
from kchaos.model.config import ConfigError, load_config
from kchaos.nemesis.reassign import completed, moved_replicas, removed_replica


def test_the_moved_replica_takes_the_outgoing_ones_place_so_a_moved_leader_makes_the_incoming_preferred() -> (
    None
):
    assert moved_replicas((1, 2, 3), 1, 4) == (4, 2, 3)
    assert moved_replicas((1, 2, 3), 3, 4) == (1, 2, 4)


def test_a_reassignment_is_over_only_with_exactly_the_new_replicas_all_in_sync_and_one_leading() -> None:
    target = (4, 2, 3)
    assert completed(PartitionState(0, 4, (4, 2, 3), (2, 3, 4)), target)
    # Still running: the old and new replicas listed together, the incoming one not yet in sync.
    assert not completed(PartitionState(0, 1, (4, 2, 3, 1), (1, 2, 3)), target)
    assert not completed(PartitionState(0, 2, (4, 2, 3), (2, 3)), target)
    assert not completed(PartitionState(0, -1, (4, 2, 3), (2, 3, 4)), target)


def test_a_replica_removed_for_a_round_trip_leaves_the_others_in_their_order() -> None:
    assert removed_replica((1, 2, 3), 2) == (1, 3)
    assert removed_replica((3, 1, 2), 3) == (1, 2)


def test_a_reassignment_needs_a_broker_without_a_replica_or_a_replica_to_spare() -> None:
    with pytest.raises(ConfigError, match=r"the only replica can do neither: raise --brokers or"):
        load_config(nemesis="reassign", brokers=1, replication_factor=1, min_insync_replicas=1, duration=60)
    config = load_config(nemesis="reassign:replica=leader:interrupt=true", brokers=4, duration=60)
    assert config.nemesis == ("reassign:replica=leader:interrupt=true",)
    round_trip = load_config(nemesis="reassign", brokers=3, replication_factor=3, duration=60)
    assert round_trip.nemesis == ("reassign",)


def test_a_reassignment_on_a_release_before_2_5_is_refused_naming_the_release() -> None:
    with pytest.raises(ConfigError, match=r"reassign needs Kafka 2\.5 or later .*--kafka-version 2\.4\.1"):
        load_config(nemesis="reassign", brokers=4, duration=60, kafka_version="2.4.1", metadata="zookeeper")


def test_a_replica_the_broker_set_aside_is_not_dumped_as_one() -> None:
    assert is_live_log("/data/kchaos-0/00000000000000000000.log")
    assert is_live_log("/data/my-topic-12/00000000000000000000.log\n")
    assert not is_live_log("/data/kchaos-0.9f0c2d1e5e8e4b0e9a4bb0b1f2ad1e2c-delete/00000000000000000000.log")
    assert not is_live_log("/data/kchaos-0.9f0c2d1e5e8e4b0e9a4bb0b1f2ad1e2c-future/00000000000000000000.log")
