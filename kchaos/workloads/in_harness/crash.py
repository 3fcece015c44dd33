"""A client process crashed on the nemesis's order and brought back later: the orders the nemesis gives a
reading thread, and the thread's answers.

The harness's group members are threads of its own process, not processes a signal could kill, so a crash
is done by the member's own thread, which alone drives its clients: at the next turn of its loop it stops
polling, committing and producing, records the crash, and drops its clients without closing them. A thread
that merely stopped polling would not look dead to Kafka: librdkafka heartbeats from its own threads as
long as the handle lives, until `max.poll.interval.ms` (5 minutes) has passed, and then leaves the group in
good order. Closing it would be a clean shutdown (a LeaveGroup, and a last commit of what auto-commit
stored). Dropping the last reference instead makes confluent-kafka destroy the handle with
`RD_KAFKA_DESTROY_F_NO_CONSUMER_CLOSE`: librdkafka then sends no LeaveGroup and commits nothing, and its
threads, heartbeats included, end. That is what a crashed process leaves the coordinator with: a member
that went silent, removed only when its session times out (`session.timeout.ms`), which is what makes the
group rebalance.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field


class CrashTimeout(TimeoutError):
    """A process did not crash (or come back) within the time it was given."""


@dataclass
class CrashOrders:
    """What the nemesis asked of one process and how far the process got. The process checks `crash` at
    every turn of its loop; the nemesis waits on `down`, then, to bring it back, sets `restart`."""

    crash: threading.Event = field(default_factory=threading.Event)
    down: threading.Event = field(default_factory=threading.Event)
    restart: threading.Event = field(default_factory=threading.Event)
    #: Set by the process once its new clients exist after a restart.
    up: threading.Event = field(default_factory=threading.Event)

    def order_crash(self, timeout: float) -> None:
        """Orders the crash and waits until the process has abandoned its clients."""
        self.restart.clear()
        self.up.clear()
        self.crash.set()
        if not self.down.wait(timeout):
            raise CrashTimeout(f"the process did not crash within {timeout:.0f}s")

    def order_restart(self, timeout: float) -> None:
        """Orders a crashed process back and waits until its new clients exist; nothing if it is up."""
        if not self.crash.is_set():
            return
        self.restart.set()
        if not self.up.wait(timeout):
            raise CrashTimeout(f"the process did not start new clients within {timeout:.0f}s")

    def await_restart(self, stop: threading.Event) -> bool:
        """Called by the crashed process: waits to be brought back; False if the workload stopped first."""
        while not (self.restart.wait(0.2) or stop.is_set()):
            pass
        return not stop.is_set()

    def restarted(self) -> None:
        """Called by the process once its new clients exist."""
        self.crash.clear()
        self.restart.clear()
        self.down.clear()
        self.up.set()
