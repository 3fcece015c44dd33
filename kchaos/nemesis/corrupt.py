"""`corrupt`: damage one file of one stopped replica (bits flipped, bytes zeroed, or the file cut), then start
it again and watch Kafka find the damage.

The node is killed, not shut down: a broker that shut down cleanly trusts its segments on the next start and
re-reads none, while one that crashed recovers every segment past its recovery point, checking each batch's
CRC, truncating at the first that fails and rebuilding the indexes; a follower then fetches the rest from the
leader. The file is read and written through Docker's archive API while the container is down
(`kchaos.harness.container_files`); which bytes is `kchaos.model.corruption`'s choice. The node starts again
within the fault's start, so the fault's effect is the node back in sync, and its stop (idempotent) starts
the node again if a failure left it down. What the broker said about the damage on its way back (its own log
lines) is recorded with the stop, beside exactly what was changed, so a run's story can say both.
"""

from __future__ import annotations

import re
import time
from pathlib import PurePosixPath
from typing import Any

from kchaos.harness.cluster_error import ClusterError
from kchaos.model.corruption import (
    METADATA_FILES,
    CorruptFile,
    CorruptionError,
    checksum,
    choose_damage,
    damaged,
    directory_of,
    pick_file,
)
from kchaos.model.fault_record import FaultRecord
from kchaos.model.faults.corrupt import CorruptRecord
from kchaos.model.waiting import wait_until
from kchaos.nemesis.fault import Carriers, Fault, FaultUnsupported, TargetUnresolved, describe_nodes

#: Where a node keeps its logs, the metadata log among them, under its state dir (kchaos's images and
#: installations: entrypoint.sh's default log.dirs).
LOG_DIR = "data"
#: How long a killed container may take to be reported down before its files are touched.
DOWN_TIMEOUT = 30.0
#: What makes a broker's log line about the damaged directory worth recording: Kafka's words for finding
#: and repairing damage (`Found invalid messages in log segment`, `Corruption found in segment 0, truncating
#: to offset`, `Recovering unflushed segment`, `Corrupt index found`, `CorruptRecordException`). Not any
#: `recover`: every partition registration a broker logs says `leaderRecoveryState=RECOVERED`.
BROKER_WORDS = re.compile(
    r"corrupt|invalid|recovering|truncat|rebuilding index|checksum|crc|malformed|exception", re.I
)
#: A line at these levels is recorded whatever it names: a broker that cannot start says why in one.
SEVERE = re.compile(r"\] (ERROR|FATAL) ")
#: The outcomes a stop records: the node back in sync, or not by the time the fault ended.
RECOVERED = "recovered: back in sync"
NOT_RECOVERED = "no recovery: not back in sync when the fault ended"
REFUSED = "refused: the broker stopped on the damage; the original file was put back and the node started"
#: The most broker lines recorded per fault, and the longest kept of each.
MAX_LINES = 12
MAX_LINE = 400


def broker_lines(text: str, names: tuple[str, ...]) -> list[str]:
    """The lines of a broker's log that speak of the damaged directory or file (`names`) in words of damage
    or repair, then its errors, at most `MAX_LINES`; stack frames left out."""
    about = [
        line for line in text.splitlines() if any(n in line for n in names) and BROKER_WORDS.search(line)
    ]
    severe = [line for line in text.splitlines() if SEVERE.search(line) and line not in about]
    return [line[:MAX_LINE] for line in (about + severe)[:MAX_LINES]]


class Corrupt(Fault):
    """Kills one node, damages one file of its log dir as the options say, starts it again."""

    RECORD = CorruptRecord

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.corruption: dict[str, Any] = {}
        self.killed_at = 0.0
        #: The damaged file as it was, and its header: put back on stop if the broker refused to start.
        self.original: tuple[PurePosixPath, bytes] | None = None
        self.back_after: float | None = None

    @property
    def file(self) -> CorruptFile:
        file: CorruptFile = self.spec.option("file")  # type: ignore[assignment]  # checked by parse_spec
        return file

    def start(self) -> FaultRecord:
        self.remember_leader()
        target = self.spec.option("target")
        named = self.resolve(target, pin=False)
        drawn = named[0] if len(named) == 1 else self.rng.choice(named)
        node_id = self.pick(drawn, self.eligible(target, named), f"the nodes target {target!r} may name")
        self.nodes = (node_id,)
        node = self.cluster.node(node_id)
        view = self._any_view()
        state = view.partitions.get(self.partition) if view is not None else None
        if self.file not in METADATA_FILES and (state is None or node_id not in state.replicas):
            raise TargetUnresolved(
                f"{self.key}: node {node_id} holds no replica of partition {self.partition}"
            )
        directory = node.state_dir / LOG_DIR / directory_of(self.file, self.topic, self.partition)
        try:  # listed while the node runs: its files are what the damage chooses among
            listing = node.kafka_exec(["ls", "-1", str(directory)])
        except ClusterError as exc:
            raise FaultUnsupported(f"{self.key}: node {node_id} has no {directory} ({exc})") from None
        name = pick_file(self.file, listing.splitlines())
        if name is None:
            raise TargetUnresolved(f"{self.key}: node {node_id}'s {directory} holds no {self.file} file")
        path = directory / name
        self.active = True
        self.killed_at = time.time()
        node.kill()
        wait_until(lambda: node.exit_code() is not None, DOWN_TIMEOUT, f"node {node_id} to be down")
        try:
            before = node.read_file(path)
            how = self.spec.option("how")
            damage = choose_damage(self.file, how, int(self.spec.option("bytes")), before)
            after = damaged(before, how, damage)
            node.replace_file(path, after)
            self.original = (path, before)
        except CorruptionError as exc:
            self.corruption = {"path": str(path), "skipped": str(exc)}
        else:
            self.corruption = {
                "path": str(path), "how": how, "offset": damage.start, "bytes": damage.length,
                "where": damage.where, "before": checksum(before), "after": checksum(after),
                "changed": before != after,
            }  # fmt: skip
        expired = self.await_sessions_expired()
        node.restart()
        return self.record(leader_before=self.leader_before, corruption=self.corruption, **expired)

    def effect_reached(self) -> bool:
        """Kafka has dealt with the damage: the node answers again and every answering node counts it in
        sync (if it is a replica), or its broker stopped on the damage (a failed log dir), which no wait
        changes; `stop` then puts the file back."""
        if not self.nodes:
            return False
        node_id = self.nodes[0]
        return self.cluster.node(node_id).exit_code() is not None or self._in_sync()

    def _in_sync(self) -> bool:
        """The node answers again and every answering node counts it in sync (if it is a replica)."""
        if not self.nodes:
            return False
        node_id = self.nodes[0]
        views = self.cluster.metadata.views(self.topic)
        if node_id not in {view.answered_by for view in views}:
            return False
        for view in views:
            state = view.partitions.get(self.partition)
            if node_id not in view.brokers or state is None or state.leader < 0:
                return False
            if node_id in state.replicas and node_id not in state.isr:
                return False
        if self.back_after is None:
            self.back_after = round(time.time() - self.killed_at, 3)
        return True

    def stop(self) -> FaultRecord:
        if not self.active:
            return self.record(corruption=self.corruption)
        node = self.cluster.node(self.nodes[0])
        said = self._broker_said()
        back = self.back_after is not None or self._in_sync()
        refused = not back and self.original is not None and node.exit_code() is not None
        if refused and self.original is not None:
            # The broker stopped on the damage and would stop again on every start: the file is put back,
            # as an operator restores it, so the rest of the run has its node (the history says so).
            path, data = self.original
            node.replace_file(path, data)
        node.restart()  # idempotent: a start that failed after the kill left the node down
        self.active = False
        outcome = RECOVERED if back else REFUSED if refused else NOT_RECOVERED
        return self.record(
            corruption=self.corruption, back_in_sync=back, back_after_s=self.back_after, broker_said=said,
            outcome=outcome, original_put_back=refused,
        )  # fmt: skip

    def _broker_said(self) -> list[str]:
        """The node's own log lines since it was killed about the damaged directory, or its errors."""
        node = self.cluster.node(self.nodes[0])
        try:
            text = node.logs(since=self.killed_at).decode(errors="replace")
        except ClusterError as exc:  # the record says why there is no line, rather than failing
            return [f"(the broker's log could not be read: {exc})"]
        path = PurePosixPath(str(self.corruption["path"])) if "path" in self.corruption else None
        names = (path.parent.name, path.name) if path is not None else (self.topic,)
        return broker_lines(text, names)

    def healed(self) -> bool:
        return self._in_sync() and super().healed()

    def describe(self) -> str:
        who = describe_nodes(self.nodes) if self.nodes else self.spec.option("target")
        what = f"{self.spec.option('how')} {self.spec.option('bytes')} bytes of the {self.file}"
        where = "" if self.file in METADATA_FILES else f" of partition {self.partition}"
        return f"kill {who}, {what}{where} while it is down, start it again"


#: The faults this module carries out (`kchaos.model.faults`), by name and aim.
CARRIES_OUT: Carriers = {
    ("corrupt", "nodes"): Corrupt,
}
