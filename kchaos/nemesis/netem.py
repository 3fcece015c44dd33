"""Degraded links with `tc netem`: latency with jitter, packet loss, a bandwidth cap.

netem is a kernel module that some kernels (minimal VM kernels among them) do not have. Such a fault then
raises FaultUnsupported at start, and the schedule records it as skipped with the reason instead of
failing the run: the other faults of the run still mean what they say.
"""

from __future__ import annotations

from abc import abstractmethod

from kchaos.harness.cluster_error import ClusterError
from kchaos.model.fault_record import FaultRecord
from kchaos.nemesis.fault import Carriers, Fault, FaultUnsupported, describe_nodes

DEVICE = "eth0"


class NetemFault(Fault):
    @abstractmethod
    def qdisc(self) -> list[str]: ...

    def start(self) -> FaultRecord:
        self.nodes = self.resolve(self.spec.option("target"))
        applied: list[int] = []
        for node_id in self.nodes:
            node = self.cluster.node(node_id)
            try:
                node.network_exec(["tc", "qdisc", "add", "dev", DEVICE, "root", *self.qdisc()])
            except ClusterError as exc:
                self._remove(applied)
                if "qdisc kind is unknown" in str(exc) or "No such file" in str(exc):
                    raise FaultUnsupported(
                        f"{self.name}: no sch_netem (this kernel has no netem qdisc, so links cannot be "
                        "degraded here); the fault is skipped. Load the module (modprobe sch_netem) or run "
                        "on a kernel that has it."
                    ) from None
                raise
            applied.append(node_id)
        self.active = True
        return self.record()

    def _remove(self, node_ids: list[int]) -> None:
        for node_id in node_ids:
            try:
                self.cluster.node(node_id).network_exec(["tc", "qdisc", "del", "dev", DEVICE, "root"])
            except ClusterError:
                continue  # already gone

    def stop(self) -> FaultRecord:
        if self.active:
            self._remove(list(self.nodes))
            self.active = False
        return self.record()

    def effect_reached(self) -> bool:
        return True  # a slower link is not something Kafka reports; the latency plot shows it

    def describe(self) -> str:
        return f"{' '.join(self.qdisc())} on {describe_nodes(self.nodes) or self.spec.option('target')}"


class Latency(NetemFault):
    def qdisc(self) -> list[str]:
        return ["netem", "delay", f"{self.spec.option('ms')}ms", f"{self.spec.option('jitter')}ms"]


class Loss(NetemFault):
    def qdisc(self) -> list[str]:
        return ["netem", "loss", f"{self.spec.option('percent')}%"]


class Bandwidth(NetemFault):
    def qdisc(self) -> list[str]:
        return ["netem", "rate", f"{self.spec.option('kbit')}kbit"]


#: The faults this module carries out (`kchaos.model.faults`), by name and aim.
CARRIES_OUT: Carriers = {
    ("latency", "nodes"): Latency,
    ("loss", "nodes"): Loss,
    ("bandwidth", "nodes"): Bandwidth,
}
