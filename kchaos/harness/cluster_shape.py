"""Which nodes a cluster has and what each one is: brokers, the KRaft quorum's voters, dedicated
controllers and the spares held outside the cluster, by node id.

The ids follow from a few counts alone, before any container exists: the environment each node starts with
names the quorum's voters (`kchaos.harness.node_env`), the start counts the members in and holds the spares
back, and the faults aim at voters and spare controllers by id. Kept apart from the containers so that all
of them read one answer, and a test can ask it without Docker.
"""

from __future__ import annotations

from dataclasses import dataclass

from kchaos.model.fault_targets import FIRST_CONTROLLER_ID
from kchaos.model.releases import MetadataMode


def is_controller_id(node_id: int) -> bool:
    """Whether `node_id` is a dedicated controller's (numbered from FIRST_CONTROLLER_ID), not a broker's."""
    return node_id >= FIRST_CONTROLLER_ID


@dataclass(frozen=True)
class ClusterShape:
    """The node ids of a cluster of `size` brokers (ids 1 on) and `spare_size` spare brokers after them;
    with KRaft, `controller_size` dedicated controllers (ids from FIRST_CONTROLLER_ID, or 0 to run the
    quorum on the first `size` brokers) and `spare_controller_size` spare controllers after those."""

    metadata_mode: MetadataMode = "kraft"
    size: int = 3
    spare_size: int = 0
    controller_size: int = 0
    spare_controller_size: int = 0
    #: A dynamic quorum (KIP-853): its voters are found by the bootstrap servers, not listed.
    dynamic_quorum: bool = False

    @property
    def voters(self) -> tuple[int, ...]:
        """The KRaft quorum's voters: the dedicated controllers, or else the first `size` nodes."""
        if self.controller_size:
            return tuple(range(FIRST_CONTROLLER_ID, FIRST_CONTROLLER_ID + self.controller_size))
        return tuple(range(1, self.size + 1))

    @property
    def spare_controller_ids(self) -> tuple[int, ...]:
        """The ids of the spare controllers (`spare_controller_size`), after the voters'."""
        first = FIRST_CONTROLLER_ID + self.controller_size
        return tuple(range(first, first + self.spare_controller_size))

    @property
    def members(self) -> tuple[int, ...]:
        """The nodes the cluster starts with: its dedicated controllers, if any, and its brokers."""
        return (*(self.voters if self.controller_size else ()), *range(1, self.size + 1))

    @property
    def spares(self) -> tuple[int, ...]:
        """The nodes created beside the cluster but not started in it: spare brokers, then controllers."""
        return (*range(self.size + 1, self.size + self.spare_size + 1), *self.spare_controller_ids)

    def roles(self, node_id: int) -> str:
        """`process.roles` of KRaft node `node_id`: a dedicated controller, a broker beside dedicated
        controllers (or a spare, which never votes), or one of the first `size` nodes, both."""
        if is_controller_id(node_id):
            return "controller"
        return "broker" if self.controller_size or node_id > self.size else "broker,controller"
