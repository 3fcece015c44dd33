"""Network isolation of a partition's leader from every other node (clients still reach it)."""

from __future__ import annotations

from typing import Any

from nemesis.fault import LeaderFault
from nemesis.netfilter import NodeRules


class IsolateLeader(LeaderFault):
    """Drops all traffic between the leader's node and the other nodes, both ways.

    Only node-to-node traffic is cut: clients on the host keep reaching the isolated broker through its
    published port. That is the classic split: the old leader, cut off from the controller quorum and its
    followers, still believes it leads while the majority fences it and elects another leader.
    """

    name = "isolate-leader"
    kind = "partition"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.rules: NodeRules | None = None

    def start(self) -> dict[str, Any]:
        target = self._target_leader()
        node = self.cluster.nodes[target]
        self.rules = NodeRules(node, self.key)
        self.active = True
        others = [other for other in self.cluster.nodes.values() if other.node_id != target]
        for other in others:
            self.rules.drop_from(other.ip)
            self.rules.drop_to(other.ip)
        return self.detail(cut_from=[other.node_id for other in others])

    def stop(self) -> dict[str, Any]:
        if self.rules is not None:
            self.rules.remove_all()
        self.active = False
        return self.detail()

    def describe(self) -> str:
        return f"isolate {self.target_text()}, from all other nodes"
