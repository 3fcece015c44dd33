"""`ClusterMetadata.leaderless`: a partition is offline only when every asked node says so.

The last-replica test once took "no answer" for "no leader": it killed a leader that was also the active
controller, neither survivor answered in time while they elected a new one, `leader_of` returned -1, and
the scenario ended the kill seconds before the dead leader was fenced; the promise under test was never
put to the test. The views here are written by hand, with no broker behind them.
"""

from __future__ import annotations

import pytest

from kchaos.harness.metadata import ClusterMetadata, MetadataView, PartitionState

FOLLOWERS = [2, 3]


class Answering(ClusterMetadata):
    """Nodes that answer with partition 0 led by `answers[node]`, or not at all for None."""

    def __init__(self, answers: dict[int, int | None]) -> None:
        super().__init__({})
        self.answers = answers

    def view_from(self, node_id: int, topic: str, timeout: float = 3.0) -> MetadataView | None:
        leader = self.answers[node_id]
        if leader is None:
            return None
        return MetadataView(node_id, frozenset({1, 2, 3}), {0: PartitionState(0, leader, (1, 2, 3), (1,))})


def test_every_follower_saying_no_leader_is_leaderless() -> None:
    assert Answering({2: -1, 3: -1}).leaderless("t", 0, FOLLOWERS)


@pytest.mark.parametrize(
    "answers",
    [{2: None, 3: None}, {2: -1, 3: None}, {2: -1, 3: 1}],
    ids=["nobody-answers", "one-answers", "they-disagree"],
)
def test_silence_or_disagreement_is_not_leaderless(answers: dict[int, int | None]) -> None:
    metadata = Answering(answers)
    assert metadata.leader_of("t", 0, among=FOLLOWERS) == -1  # the ambiguity `leaderless` exists for
    assert not metadata.leaderless("t", 0, FOLLOWERS)


def test_a_partition_a_node_does_not_know_is_not_leaderless() -> None:
    assert not Answering({2: -1, 3: -1}).leaderless("t", 1, FOLLOWERS)
