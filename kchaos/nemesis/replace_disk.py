"""The `replace-disk` fault: a broker dies with its disk, and comes back on a new, empty one.

Disks fail, and the usual fix is a swap: the broker stops (here SIGKILL, as when the disk takes it down),
the disk is replaced, and the broker starts on an empty log dir, in ZooKeeper mode writing its identity
anew, on KRaft formatted again with the cluster's id, as an operator does. It must then fetch every
replica it holds from the leaders before it counts as in sync again; until it does, Kafka's promise rests
on the replicas that kept their disks. Which releases keep an empty replica out of the ISR and out of
elections is what this fault asks (KIP-903 closed one way in for KRaft from 3.5).

The swap is left in the container while it is down and applied by its entrypoint on the next start
(`kchaos.harness.replace_disk`), so restart and swap are one step of `stop`; what each node's start
removed is read back for the history. `disk=data` keeps the KRaft metadata log and the storage's identity,
as a swap of a data disk beside a metadata disk of its own.
"""

from __future__ import annotations

from kchaos.harness.replace_disk import leave_swap, swap_report
from kchaos.model.fault_record import FaultRecord
from kchaos.model.faults.replace_disk import ReplaceDiskRecord
from kchaos.nemesis.fault import Carriers, FaultUnsupported, describe_nodes
from kchaos.nemesis.process import ProcessFault


class ReplaceDisk(ProcessFault):
    """SIGKILL every target at start; on stop swap its disk and start it again. (A leaf beside `Kill`, not
    below it: every fault class is a leaf, `tests/test_fault_table.py`.)"""

    RECORD = ReplaceDiskRecord
    leaves_sessions = True

    def start(self) -> FaultRecord:
        disk = self.spec.option("disk")
        self.remember_leader()
        self.nodes = self.resolve(self.spec.option("target"))
        voters = set(self.nodes) & set(self.cluster.voters) if self.cluster.dynamic_quorum else set()
        if disk == "all" and voters:
            raise FaultUnsupported(
                f"{self.key}: node {min(voters)} votes in a dynamic quorum (--quorum dynamic), whose voter "
                "on a new disk must be formatted as no initial voter and added back (kafka-metadata-quorum "
                "add-controller), which kchaos does not do yet; use disk=data, a static quorum, or a target "
                "that does not vote"
            )
        self.active = True
        for node_id in self.nodes:
            self.hit(node_id)
        return self.record(leader_before=self.leader_before, disk=disk)

    def hit(self, node_id: int) -> None:
        self.cluster.node(node_id).kill()

    def stop(self) -> FaultRecord:
        if not self.active:
            return self.record()
        disk = self.spec.option("disk")
        for node_id in self.nodes:
            leave_swap(self.cluster.node(node_id), disk)
        extra = self.bring_back()  # each node empties its log dirs before its broker starts
        removed = {str(n): swap_report(self.cluster.node(n)) for n in self.nodes}
        return self.record(disk=disk, removed=removed, **extra)

    def describe(self) -> str:
        who = describe_nodes(self.nodes) if self.nodes else self.spec.option("target")
        what = "all its log dirs" if self.spec.option("disk") == "all" else "its data, not its metadata log"
        return f"SIGKILL {who} ({self.spec.option('target')}); on stop start it on an empty disk ({what})"


#: The faults this module carries out (`kchaos.model.faults`), by name and aim.
CARRIES_OUT: Carriers = {
    ("replace-disk", "nodes"): ReplaceDisk,
}
