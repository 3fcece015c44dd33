"""The `slow-disk` fault: the targets' disks crawl under their brokers while writes go on.

A disk that is failing, saturated by a neighbour or throttled by its cloud volume answers late rather than
not at all. The broker keeps running, keeps its data and keeps its place in the cluster; what changes is
how long an append (with `on=write`) or a sync (`on=sync`: each fsync, which KRaft's metadata log does on
every append, and a topic with flush.messages=1 on every record) takes, and with it how long the producers
wait, whether followers fall out of the ISR, and whether the controller's quorum keeps up. The slowness is
the library kchaos images preload (`kchaos.harness.slow_disk`): a fixed delay on every call, or with
`tail` and `share` a share of the calls far slower, applied and healed without a restart, at the first
call a tenth of a second or more after the library last looked (so one call after the change may still
be in the old state).

Its effect is the broker meeting the slow disk: the library delayed calls on every target. The stop row
records how many and the first.
"""

from __future__ import annotations

from typing import Any

from kchaos.harness.slow_disk import LIBRARY, Slowness, delayed_calls, set_slow
from kchaos.model.fault_record import FaultRecord
from kchaos.model.faults.slow_disk import SlowDiskRecord
from kchaos.nemesis.fault import Carriers, Fault, describe_nodes


class SlowDisk(Fault):
    """Slows every target's disk at start; heals it at stop, the broker running throughout."""

    RECORD = SlowDiskRecord

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        option = self.spec.option
        self.slowness = Slowness(option("on"), int(option("ms")), int(option("tail")), int(option("share")))

    def start(self) -> FaultRecord:
        self.nodes = self.resolve(self.spec.option("target"))
        self.require_files("slow-disk library, so its disk cannot be slowed", LIBRARY)
        self.active = True
        for node_id in self.nodes:
            set_slow(self.cluster.node(node_id), self.slowness)
        return self.record()

    def effect_reached(self) -> bool:
        return all(delayed_calls(self.cluster.node(n))[0] > 0 for n in self.nodes)

    def stop(self) -> FaultRecord:
        if not self.active:
            return self.record()
        for node_id in self.nodes:
            set_slow(self.cluster.node(node_id), None)
        calls = {str(n): delayed_calls(self.cluster.node(n)) for n in self.nodes}
        self.active = False
        return self.record(
            delayed={node: count for node, (count, _) in calls.items()},
            first_delayed={node: first for node, (_, first) in calls.items()},
        )

    def describe(self) -> str:
        who = describe_nodes(self.nodes) if self.nodes else self.spec.option("target")
        slow = self.slowness
        calls = "sync" if slow.on == "sync" else "sync and write"
        tail = f", {slow.tail_percent}% of them {slow.tail_ms} ms instead" if slow.tail_percent else ""
        return (
            f"slow the disk of {who}: {slow.ms} ms before each {calls} under its log dirs{tail}; healed on "
            "stop"
        )


#: The faults this module carries out (`kchaos.model.faults`), by name and aim.
CARRIES_OUT: Carriers = {
    ("slow-disk", "nodes"): SlowDisk,
}
