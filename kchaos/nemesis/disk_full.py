"""The `disk-full` fault: the targets' disks fill up under their brokers while writes go on.

A size-limited log dir that fills is the operator's everyday outage. Kafka's answer is documented (KIP-112):
an append that fails with an IOException takes its log dir offline, and a broker with no log dir left halts,
so its leaderships move as after a crash. The disk is made full by the library kchaos images preload
(`kchaos.harness.disk_full`): every write under the log dirs fails with ENOSPC from the moment the flag is
set, whatever the file system's size, so the fault needs no privileged mount and hits at once.

The effect waited for is Kafka's own: each target's broker met the full disk (the library noted the write it
failed) and the others fenced it. On stop the disk is freed and the broker started again; it recovers its
log as after any unclean end. The stop row records the write that failed and the broker's own last words
about its log dirs.
"""

from __future__ import annotations

import re
import time

from kchaos.harness.disk_full import LIBRARY, first_refused_write, set_full
from kchaos.model.fault_record import FaultRecord
from kchaos.model.faults.disk_full import DiskFullRecord
from kchaos.nemesis.fault import Carriers, Fault, describe_nodes

#: The broker's lines about a failed log dir, in any release's wording ("Error while appending records",
#: "Stopping serving logs in dir", "Shutdown broker because all log dirs in ... have failed").
_LOG_DIR_LINES = re.compile(
    r"log ?dirs? .*(fail|offline)|stopping serving (logs|replicas)|error while appending|no space left",
    re.IGNORECASE,
)
#: Lines of the broker's own words kept per node.
_LINES_KEPT = 4


def log_dir_lines(log: str, kept: int = _LINES_KEPT) -> list[str]:
    """The last `kept` lines of a broker log that speak of its log dirs failing or of a full disk."""
    return [line.strip()[:300] for line in log.splitlines() if _LOG_DIR_LINES.search(line)][-kept:]


class DiskFull(Fault):
    """Fills every target's disk at start; frees it and starts the broker again at stop."""

    RECORD = DiskFullRecord

    #: When the disks were filled (Unix time): the broker's words are read from then on, not its earlier
    #: lives' (a container restarted keeps its old output).
    filled_at = 0.0

    def start(self) -> FaultRecord:
        self.remember_leader()
        self.nodes = self.resolve(self.spec.option("target"))
        self.require_files("disk-full library, so its disk cannot be filled", LIBRARY)
        self.active = True
        self.filled_at = time.time()
        for node_id in self.nodes:
            set_full(self.cluster.node(node_id), True)
        return self.record(leader_before=self.leader_before)

    def effect_reached(self) -> bool:
        met = all(first_refused_write(self.cluster.node(n)) is not None for n in self.nodes)
        return met and self.fenced_by_majority(self.nodes)

    def stop(self) -> FaultRecord:
        if not self.active:
            return self.record()
        refused = {str(n): first_refused_write(self.cluster.node(n)) for n in self.nodes}
        said = {
            str(n): log_dir_lines(self.cluster.node(n).logs(since=self.filled_at).decode(errors="replace"))
            for n in self.nodes
        }
        expired = self.await_sessions_expired()  # a broker that halted left its session to expire
        for node_id in self.nodes:
            node = self.cluster.node(node_id)
            set_full(node, False)
            node.restart()
        self.active = False
        return self.record(refused_write=refused, broker_said=said, **expired)

    def describe(self) -> str:
        who = describe_nodes(self.nodes) if self.nodes else self.spec.option("target")
        return (
            f"fill the disk of {who} (writes under the log dirs fail: no space left); free it and start "
            "again on stop"
        )


#: The faults this module carries out (`kchaos.model.faults`), by name and aim.
CARRIES_OUT: Carriers = {
    ("disk-full", "nodes"): DiskFull,
}
