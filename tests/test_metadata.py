"""The active controller without a broker: named by the quorum tool of the first running node that
answers (in ZooKeeper mode, by its metadata answer), asked of the nodes the cluster holds when the question
is asked."""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace

import pytest

from kchaos.harness.cluster import KafkaCluster
from kchaos.harness.cluster_error import ClusterError
from kchaos.harness.metadata import QUORUM_TOOL_CONFIG, ClusterMetadata, MetadataView, PartitionState


@dataclass
class QuorumNode:
    """A node whose quorum tool names `leader`, or fails for None; it records what it was asked."""

    leader: int | None
    state: str = "running"
    bootstrap: str = "127.0.0.1:1"
    controller_address: str = "kafka-1:9093"
    asked: list[tuple[str, ...]] = field(default_factory=list)

    def kafka_exec(self, command: list[str]) -> str:
        return ""

    def run_tool(self, *args: str) -> str:
        self.asked.append(args)
        if self.leader is None:
            raise ClusterError("the quorum tool failed")
        return f"ClusterId: c\nLeaderId: {self.leader}\nLeaderEpoch: 3\n"


def test_the_first_running_node_that_answers_names_the_controller() -> None:
    failing, stopped, answering = QuorumNode(None), QuorumNode(3, state="killed"), QuorumNode(2)
    assert ClusterMetadata({1: failing, 2: stopped, 3: answering}).active_controller() == 2
    assert stopped.asked == []
    assert answering.asked == [
        ("org.apache.kafka.tools.MetadataQuorumCommand", "--command-config", QUORUM_TOOL_CONFIG,
         "--bootstrap-controller", "kafka-1:9093", "describe", "--status"),
    ]  # fmt: skip


def test_no_running_node_answering_is_a_cluster_error() -> None:
    with pytest.raises(ClusterError, match="no running node could name the active controller"):
        ClusterMetadata({1: QuorumNode(None), 2: QuorumNode(1, state="paused")}).active_controller()


def test_the_cluster_metadata_asks_the_nodes_the_cluster_has_now() -> None:
    cluster = KafkaCluster(run_id="metadata", image="unused", sidecar_image="unused")
    with pytest.raises(ClusterError):
        cluster.metadata.active_controller()
    cluster.nodes[1] = QuorumNode(1)  # type: ignore[assignment]
    assert cluster.metadata.active_controller() == 1


def test_in_zookeeper_mode_the_controller_is_the_broker_a_metadata_answer_names(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """No quorum to ask: the first running node whose answer names a controller (not -1) says who it is."""
    nodes = {
        1: QuorumNode(None, state="killed"),
        2: QuorumNode(None),
        3: QuorumNode(None),
        4: QuorumNode(None),
    }
    answers = {2: None, 3: SimpleNamespace(controller_id=-1), 4: SimpleNamespace(controller_id=2)}
    metadata = ClusterMetadata(nodes, "zookeeper")
    asked: list[int] = []

    def answer_of(node_id: int, topic: str | None, timeout: float = 3.0) -> object:
        asked.append(node_id)
        return answers[node_id]

    monkeypatch.setattr(metadata, "answer_of", answer_of)
    assert metadata.active_controller() == 2
    assert asked == [2, 3, 4]
    assert all(node.asked == [] for node in nodes.values())
    answers[4] = None
    with pytest.raises(ClusterError, match="no running node could name the active controller"):
        metadata.active_controller()


def test_recovery_gaps_say_what_each_node_still_misses(monkeypatch: pytest.MonkeyPatch) -> None:
    """The cluster is recovered when no node reports a gap; a run that times out names the gaps."""
    nodes = {n: QuorumNode(1) for n in (1, 2, 3)}
    metadata = ClusterMetadata(nodes)
    whole = {0: PartitionState(0, 1, (1, 2), (1, 2)), 1: PartitionState(1, 2, (2, 3), (2, 3))}
    views = [MetadataView(n, frozenset(nodes), whole) for n in (1, 2, 3)]
    monkeypatch.setattr(metadata, "views", lambda topic, among=None: views)
    assert metadata.recovery_gaps("t") == [] and metadata.is_recovered("t")

    stuck = {**whole, 1: PartitionState(1, 2, (2, 3), (2,)), 2: PartitionState(2, -1, (3, 1), (3,))}
    views = [MetadataView(1, frozenset({1, 2}), whole), MetadataView(2, frozenset(nodes), stuck)]
    assert metadata.recovery_gaps("t") == [
        "node 3 does not answer",
        "node 1 sees brokers [1, 2]",
        "node 2 sees t-1 ISR [2] of [2, 3]",
        "node 2 sees t-2 without a leader",
    ]
    assert not metadata.is_recovered("t")
