"""Process crash of a partition's leader: SIGKILL, later a restart with its data intact."""

from __future__ import annotations

from typing import Any

from nemesis.fault import LeaderFault


class KillLeader(LeaderFault):
    """SIGKILLs the broker leading the partition. A crash, not a shutdown: no controlled leader handover."""

    name = "kill-leader"
    kind = "crash"

    def start(self) -> dict[str, Any]:
        self.cluster.nodes[self._target_leader()].kill()
        self.active = True
        return self.detail()

    def stop(self) -> dict[str, Any]:
        if self.active:
            for node_id in self.nodes:
                self.cluster.nodes[node_id].restart()
            self.active = False
        return self.detail()

    def describe(self) -> str:
        return f"SIGKILL {self.target_text()}; restart it with its data on stop"
