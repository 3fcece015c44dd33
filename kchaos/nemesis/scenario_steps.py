"""What a crafted scenario reads while it drives its faults (the run's own history as it grows), and the
one rule its steps share: a fault the cluster skipped ends the scenario.

A scenario's steps wait for what the run recorded (the latest acknowledged offset of a partition, the
ISR the leader watcher last saw), so a fault begins once the state it needs exists, not after a guessed
number of seconds, and the oracle later judges by the same rows the scenario waited for.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from kchaos.harness.cluster import KafkaCluster
from kchaos.model.events import LEADER, LEADER_WATCH_PROCESS, OK
from kchaos.model.history import HistoryWriter
from kchaos.model.waiting import WaitTimeout, wait_for
from kchaos.nemesis.fault import Fault
from kchaos.nemesis.scenario_ends import StepFailed
from kchaos.nemesis.schedule import Nemesis

#: How long a partition must stay leaderless, with live out-of-sync replicas, when unclean election is
#: off. The controller elects at the moment it fences the dead leader, so a wrong election would show at
#: once; a few seconds of polls make sure it is not a single lucky answer.
OFFLINE_WATCH_S = 5.0

#: How long a scenario waits for the nodes to agree on the fault partition's leader. Longer than a fault's
#: own wait (`kchaos.nemesis.fault.LEADER_AGREEMENT_TIMEOUT`): a first step can run while a fresh cluster
#: settles.
AGREEMENT_TIMEOUT_S = 60.0

#: How many acknowledged writes to the fault partition a scenario waits for before its first fault, and
#: for how long: a loss is only measurable against records the partition is known to have taken.
OPENING_WRITES = 300
OPENING_TIMEOUT_S = 60.0


class LatestOffsets:
    """The offset of the latest `ok` row per (f, topic, partition), and the latest leader-watch detail per
    (topic, partition), read from the run's staged history as it grows: the scenario follows what was
    recorded without the writer keeping track for it."""

    def __init__(self, history: HistoryWriter) -> None:
        self.history = history
        self.path = history.files.history_staging
        self.read_to = 0
        self.latest: dict[tuple[str, str, int], int] = {}
        self.watched: dict[tuple[str, int], dict[str, Any]] = {}

    def _read(self) -> None:
        """Everything recorded so far, handed to the file first (the writer batches rows), so an offset
        read right after a fault is the last acknowledged before it; only whole lines are read."""
        self.history.flush()
        with self.path.open("rb") as fh:
            fh.seek(self.read_to)
            for line in fh:
                if not line.endswith(b"\n"):
                    break
                self.read_to += len(line)
                row = json.loads(line)
                if row["type"] == OK and row["offset"] is not None:
                    self.latest[(row["f"], row["topic"], row["partition"])] = row["offset"]
                elif row["process"] == LEADER_WATCH_PROCESS and row["f"] == LEADER:
                    self.watched[(row["topic"], row["partition"])] = json.loads(row["detail"])

    def __call__(self, f: str, topic: str, partition: int) -> int:
        """-1 while there is none."""
        self._read()
        return self.latest.get((f, topic, partition), -1)

    def acknowledged(self, topic: str, partition: int) -> Callable[[], int]:
        """The offset of the partition's latest acknowledged send, asked anew at each call."""
        return partial(self, "send", topic, partition)

    def leadership(self, topic: str, partition: int) -> dict[str, Any]:
        """What the leader watcher recorded last for the partition ({} while nothing)."""
        self._read()
        return self.watched.get((topic, partition), {})


def acknowledged_writes(nemesis: Nemesis) -> tuple[LatestOffsets, Callable[[], int]]:
    """Waits until the fault partition has `OPENING_WRITES` acknowledged writes (the scenario ends if it
    does not); returns the run's offsets as they grow and the partition's latest acknowledged offset."""
    latest = LatestOffsets(nemesis.history)
    acknowledged = latest.acknowledged(nemesis.topic, nemesis.partition)
    nemesis.require(
        lambda: acknowledged() > OPENING_WRITES,
        OPENING_TIMEOUT_S,
        f"acknowledged writes to partition {nemesis.partition}",
    )
    return latest, acknowledged


@dataclass(frozen=True)
class Opening:
    """Where a crafted scenario starts from: the run's offsets, the fault partition's latest acknowledged
    offset (asked anew at each call), and the leader the nodes agree on."""

    latest: LatestOffsets
    acknowledged: Callable[[], int]
    leader: int


def opening(nemesis: Nemesis) -> Opening:
    """The crafted scenarios' shared first step: acknowledged writes to the fault partition, then a leader
    the nodes agree on, recorded as the scenario's observed `leader`."""
    latest, acknowledged = acknowledged_writes(nemesis)
    return Opening(latest, acknowledged, observed_leader(nemesis))


def observed_leader(nemesis: Nemesis) -> int:
    """`agreed_leader`, recorded as the scenario's observed `leader`: the faults that follow aim at it."""
    leader = agreed_leader(nemesis)
    nemesis.observed["leader"] = leader
    return leader


def begun(fault: Fault | None, spec: str) -> Fault:
    """The fault a step began; a scenario cannot go on without it, so a skip ends the scenario."""
    if fault is None:
        raise RuntimeError(f"the scenario needs {spec}, which this cluster skipped (see the run's faults)")
    return fault


def agreed_leader(nemesis: Nemesis) -> int:
    """The fault partition's leader once the running nodes agree on one.

    Read once, a node slow to answer right after the cluster came up, or one still catching up with an
    election, makes the answer -1; a scenario going on with that aims its faults at no node.
    """
    try:
        return wait_for(
            lambda: nemesis.cluster.metadata.leader_of(nemesis.topic, nemesis.partition),
            lambda leader: leader >= 0,
            AGREEMENT_TIMEOUT_S,
            f"a leader of partition {nemesis.partition}",
        )
    except WaitTimeout as exc:
        raise StepFailed.after(exc) from exc


def reported_isrs(cluster: KafkaCluster, topic: str, partition: int) -> list[tuple[int, ...]]:
    """The partition's ISR as each running node reports it.

    A step asks them all: in ZooKeeper mode a broker learns an ISR change only when the controller tells
    it, and a cut between them (cut-replication shares the inter-broker listener with the controller's
    requests) can keep the leader itself from hearing of its own shrink.
    """
    return [
        view.partitions[partition].isr
        for view in cluster.metadata.views(topic)
        if partition in view.partitions
    ]
