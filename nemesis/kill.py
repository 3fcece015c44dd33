"""Process crash of a partition's leader: SIGKILL, later a restart with its data intact."""

from __future__ import annotations

from typing import Any

from nemesis.fault import Fault


class KillLeader(Fault):
    """SIGKILLs the broker leading the partition. A crash, not a shutdown: no controlled leader handover."""

    name = "kill-leader"
    kind = "crash"

    def start(self) -> dict[str, Any]:
        target = self._current_leader()
        self.nodes = (target,)
        self.cluster.nodes[target].kill()
        self.active = True
        return self.detail()

    def stop(self) -> dict[str, Any]:
        if self.active:
            for node_id in self.nodes:
                self.cluster.nodes[node_id].restart()
            self.active = False
        return self.detail()

    def effect_reached(self) -> bool:
        if self.cluster.size == 1:
            return True
        return self._leader_moved_away_from(self.nodes[0])

    def describe(self) -> str:
        target = f"node {self.nodes[0]}" if self.nodes else "the leader"
        return f"SIGKILL {target}, leader of {self.topic}-{self.partition}; restart it with its data on stop"
