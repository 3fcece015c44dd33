"""Faults of the broker process: crash, power loss, controlled shutdown, freeze, rolling restart."""

from __future__ import annotations

import threading
from abc import abstractmethod
from typing import Any

from kchaos.harness import power_cut
from kchaos.model.fault_record import FaultRecord
from kchaos.model.faults.process import ProcessRecord
from kchaos.nemesis.fault import Carriers, Fault, describe_nodes


class ProcessFault(Fault):
    """Hits the process of every target node at start, brings each back at stop."""

    RECORD = ProcessRecord

    verb: str = ""
    #: Whether the hit ends the broker without a word to ZooKeeper (SIGKILL), so its registration outlives
    #: it until its session expires.
    leaves_sessions = False

    def start(self) -> FaultRecord:
        self.remember_leader()
        self.nodes = self.resolve(self.spec.option("target"))
        self.active = True
        for node_id in self.nodes:
            self.hit(node_id)
        return self.record(leader_before=self.leader_before)

    @abstractmethod
    def hit(self, node_id: int) -> None: ...

    def stop(self) -> FaultRecord:
        return self.record(**self.bring_back())

    def bring_back(self) -> dict[str, Any]:
        """Restarts the nodes; returns what the stop row records about it (`registrations_expired` after
        a SIGKILL: see `Fault.await_sessions_expired`)."""
        if not self.active:
            return {}
        expired = self.await_sessions_expired() if self.leaves_sessions else {}
        for node_id in self.nodes:
            self.cluster.node(node_id).restart()
        self.active = False
        return expired

    def effect_reached(self) -> bool:
        return self.fenced_by_majority(self.nodes)

    def describe(self) -> str:
        who = describe_nodes(self.nodes) if self.nodes else self.spec.option("target")
        return f"{self.verb} {who} ({self.spec.option('target')}); bring back on stop"


class Kill(ProcessFault):
    """SIGKILL: no controlled shutdown, no flush. The page cache survives, as in a process crash."""

    verb = "SIGKILL"
    leaves_sessions = True

    def hit(self, node_id: int) -> None:
        self.cluster.node(node_id).kill()


class PowerLoss(ProcessFault):
    """SIGKILL every target at once, then, before they start again, cut their log dirs back to what had
    been synced to disk: what the page cache held and Kafka never fsynced is gone, as when the power goes.

    The cut is armed while the nodes are down and performed by each node's entrypoint on its next start,
    so restart and cut are one step of `stop`; what each node dropped is read back for the history. With
    `tear` a file ends inside its first unsynced write instead (torn, or zeros where data never landed), and
    with `dirents=lost` names created since their directory's last sync are gone too (powercut.c).
    """

    verb = "power off"
    leaves_sessions = True

    def start(self) -> FaultRecord:
        self.remember_leader()
        self.nodes = self.resolve(self.spec.option("target"))
        self.require_files(
            f"sync journal ({power_cut.TOOLS[0]}), so what a power loss would drop cannot be known",
            *power_cut.TOOLS,
        )
        self.active = True
        # At one instant: a node killed a moment after another could still acknowledge writes the other
        # had synced, which is not what a shared power cut does.
        hits = [threading.Thread(target=self.hit, args=(n,), name=f"power-off-{n}") for n in self.nodes]
        for thread in hits:
            thread.start()
        for thread in hits:
            thread.join()
        for node_id in self.nodes:
            power_cut.arm(self.cluster.node(node_id), self.spec.option("tear"), self.spec.option("dirents"))
        return self.record(leader_before=self.leader_before)

    def hit(self, node_id: int) -> None:
        self.cluster.node(node_id).kill()

    def stop(self) -> FaultRecord:
        if not self.active:
            return self.record()
        extra = self.bring_back()  # restarts the nodes; each cuts its logs before its broker starts
        dropped = {str(n): dict(power_cut.read_cut(self.cluster.node(n))) for n in self.nodes}
        return self.record(dropped=dropped, **extra)


class Stop(ProcessFault):
    """SIGTERM: a controlled shutdown, in which the broker moves its leaderships away before exiting."""

    verb = "SIGTERM"

    def hit(self, node_id: int) -> None:
        self.cluster.node(node_id).terminate()


class Pause(ProcessFault):
    """Freezes the broker: its sockets stay open but nothing answers, like a stop-the-world GC pause."""

    verb = "pause"

    def hit(self, node_id: int) -> None:
        self.cluster.node(node_id).pause()


class RollingRestart(Fault):
    """Restarts the targets one at a time with SIGTERM, waiting for full recovery before the next.

    This is the routine operation every cluster upgrade performs; it must lose nothing under any
    configuration that promises durability. The roll runs in its own thread, so the fault's start and
    stop events bracket the whole roll, and its effect is "every target restarted and the cluster whole".
    """

    RECORD = ProcessRecord

    step_timeout = 180.0

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.restarted: list[int] = []
        self.error: BaseException | None = None
        self._roll: threading.Thread | None = None

    def start(self) -> FaultRecord:
        self.remember_leader()
        self.nodes = self.resolve(self.spec.option("target"))
        self.active = True
        self._roll = threading.Thread(target=self._restart_each, name=f"{self.key}-roll", daemon=True)
        self._roll.start()
        return self.record()

    def _restart_each(self) -> None:
        try:
            for node_id in self.nodes:
                node = self.cluster.node(node_id)
                node.terminate()
                node.restart()
                self.cluster.metadata.await_recovery(
                    self.topic, self.step_timeout, f"recovery after restarting node {node_id}"
                )
                self.restarted.append(node_id)
        except BaseException as exc:  # reported by stop(); the nodes are brought back there
            self.error = exc

    def stop(self) -> FaultRecord:
        if self._roll is not None:
            self._roll.join(self.step_timeout * max(1, len(self.nodes)))
        for node_id in self.nodes:
            self.cluster.node(node_id).restart()
        self.active = False
        return self.record(restarted=list(self.restarted), error=repr(self.error) if self.error else None)

    def effect_reached(self) -> bool:
        return len(self.restarted) == len(self.nodes)

    def describe(self) -> str:
        return f"restart {describe_nodes(self.nodes) if self.nodes else 'the targets'} one by one (SIGTERM)"


#: The faults this module carries out (`kchaos.model.faults`), by name and aim.
CARRIES_OUT: Carriers = {
    ("kill", "nodes"): Kill,
    ("power-loss", "nodes"): PowerLoss,
    ("stop", "nodes"): Stop,
    ("pause", "nodes"): Pause,
    ("rolling-restart", "nodes"): RollingRestart,
}
