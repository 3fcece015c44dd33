"""When a fault that took down a majority of brokers has visibly done its work, in each metadata mode.

With KRaft the survivors of a lost majority hold no quorum and can show nothing, so the effect counts as
reached at once; in ZooKeeper mode the quorum is ZooKeeper's, which survives any broker fault, so the
survivor must be seen to drop the dead brokers and lead the partition itself. The views are written by
hand, with no broker behind them.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import pytest

from kchaos.harness.cluster import KafkaCluster
from kchaos.harness.metadata import ClusterMetadata, MetadataView, PartitionState
from kchaos.model.fault_spec import parse_spec
from kchaos.nemesis.process import Kill


@dataclass
class Node:
    state: str


class Seen(ClusterMetadata):
    """Every running node answers that it knows `brokers` and that `leader` leads partition 0."""

    def __init__(self, cluster: KafkaCluster, brokers: set[int], leader: int) -> None:
        super().__init__(cluster.nodes, cluster.metadata_mode)
        self.brokers, self.leader = frozenset(brokers), leader

    def view_from(self, node_id: int, topic: str, timeout: float = 3.0) -> MetadataView | None:
        return MetadataView(
            node_id, self.brokers, {0: PartitionState(0, self.leader, (1, 2, 3), (self.leader,))}
        )


def two_of_three_killed(mode: str, brokers: set[int], leader: int) -> Kill:
    cluster = KafkaCluster(run_id="fencing", image="unused", sidecar_image="unused", metadata_mode=mode)  # type: ignore[arg-type]
    cluster.nodes.update({1: Node("killed"), 2: Node("killed"), 3: Node("running")})  # type: ignore[dict-item]
    cluster.metadata = Seen(cluster, brokers, leader)
    fault = Kill(cluster, "t", 0, "kill#1", parse_spec("kill:target=1+2"), random.Random(0))
    fault.nodes, fault.leader_before = (1, 2), 1
    return fault


@pytest.mark.parametrize(("brokers", "leader"), [({1, 2, 3}, 1), ({3}, 3)], ids=["unchanged", "fenced"])
def test_with_kraft_a_lost_majority_leaves_nothing_to_observe(brokers: set[int], leader: int) -> None:
    assert two_of_three_killed("kraft", brokers, leader).effect_reached()


def test_in_zookeeper_mode_the_survivor_must_drop_the_dead_brokers_and_lead() -> None:
    assert not two_of_three_killed("zookeeper", {1, 2, 3}, 1).effect_reached()
    assert not two_of_three_killed("zookeeper", {3}, 1).effect_reached()
    assert two_of_three_killed("zookeeper", {3}, 3).effect_reached()
