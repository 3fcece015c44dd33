"""When faults happen: a seeded, reproducible plan, and the runner that carries it out and records it.

The plan is computed from the configuration alone (same seed, same plan) and written to the run directory
before the run starts. The runner waits for each fault's effect and for the cluster to heal before the
next quiet period, so a schedule tests what it says ("leader killed, another elected") rather than what
happened to fit in a guessed number of seconds.
"""

from __future__ import annotations

import json
import logging
import random
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from harness.cluster import KafkaCluster
from harness.config import RunConfig
from harness.history import NEMESIS_PROCESS, HistoryWriter
from harness.waiting import WaitTimeout, wait_until
from nemesis.fault import Fault
from nemesis.isolate import IsolateLeader
from nemesis.kill import KillLeader

log = logging.getLogger(__name__)

FAULTS: dict[str, type[Fault]] = {cls.name: cls for cls in (KillLeader, IsolateLeader)}


@dataclass(frozen=True)
class PlannedFault:
    """One fault of the plan: start `at` seconds after the workload starts, hold for `duration` seconds."""

    key: str
    fault: str
    at: float
    duration: float


def plan(config: RunConfig) -> list[PlannedFault]:
    """Faults in a seeded order, each after a quiet `fault_interval`, all healed well before writes stop.

    The tail after the last fault lets producers write to the new leaders, so records a failover truncated
    fall below the final read's end (a `lost-write`) instead of above it.
    """
    if not config.nemesis:
        return []
    rng = random.Random(config.seed)
    order = list(config.nemesis)
    rng.shuffle(order)
    tail = post_heal_tail(config)
    planned: list[PlannedFault] = []
    at = config.fault_interval
    while at + config.fault_duration <= config.duration - tail:
        name = order[len(planned) % len(order)]
        planned.append(PlannedFault(f"{name}#{len(planned) + 1}", name, at, config.fault_duration))
        at += config.fault_duration + config.fault_interval
    return planned


def post_heal_tail(config: RunConfig) -> float:
    """Seconds producers keep writing after the last fault healed."""
    return max(10.0, config.fault_interval)


def write_plan(planned: list[PlannedFault], path: Path) -> None:
    path.write_text(json.dumps([asdict(p) for p in planned], indent=2) + "\n")


class Nemesis:
    """Runs a plan in a background thread; `heal_all()` undoes whatever is still active, idempotently."""

    def __init__(
        self,
        cluster: KafkaCluster,
        history: HistoryWriter,
        topic: str,
        partition: int,
        planned: list[PlannedFault],
        effect_timeout: float = 60.0,
        heal_timeout: float = 120.0,
    ) -> None:
        self.cluster = cluster
        self.history = history
        self.topic = topic
        self.partition = partition
        self.planned = planned
        self.effect_timeout = effect_timeout
        self.heal_timeout = heal_timeout
        self.active: list[Fault] = []
        self.done: list[Fault] = []
        self.error: BaseException | None = None
        self._stop = threading.Event()
        self.finished = threading.Event()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._t0 = 0.0

    def start(self) -> None:
        self._t0 = time.monotonic()
        self._thread = threading.Thread(target=self._run, name="nemesis", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 300.0) -> None:
        """Asks the runner to finish the fault in progress early, waits for it, then heals everything."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
        self.heal_all()

    def _run(self) -> None:
        try:
            for item in self.planned:
                if self._stop.wait(max(0.0, self._t0 + item.at - time.monotonic())):
                    return
                self._apply(item)
        except BaseException as exc:  # recorded and re-raised by the run; healing still happens
            log.exception("nemesis failed")
            self.error = exc
            self.heal_all()
        finally:
            self.finished.set()

    def _apply(self, item: PlannedFault) -> None:
        fault = FAULTS[item.fault](self.cluster, self.topic, self.partition, item.key)
        with self._lock:
            self.active.append(fault)
        detail = fault.start()
        started = time.monotonic()
        self._record(fault, "start", detail)
        # The fault holds for its duration, or longer while Kafka has not reacted (up to effect_timeout).
        effect_after = self._await(
            fault.effect_reached, max(item.duration, self.effect_timeout), f"{item.key}: {fault.describe()}"
        )
        self._stop.wait(max(0.0, started + item.duration - time.monotonic()))
        self._heal(fault, effect_seen_after_s=effect_after)
        if not self._stop.is_set():
            self._await(fault.healed, self.heal_timeout, f"the cluster to heal after {item.key}")

    def _await(self, condition: Callable[[], bool], timeout: float, what: str) -> float | None:
        """Seconds until `condition` held, or None (logged) if it did not within `timeout`."""
        since = time.monotonic()
        try:
            wait_until(condition, timeout, what)
        except WaitTimeout as exc:
            log.warning("%s", exc)
            return None
        return round(time.monotonic() - since, 3)

    def _heal(self, fault: Fault, **extra: object) -> None:
        with self._lock:
            if fault not in self.active:
                return
            self.active.remove(fault)
        detail = fault.stop()
        detail.update(extra)
        self._record(fault, "stop", detail)
        self.done.append(fault)

    def heal_all(self) -> None:
        for fault in list(self.active):
            self._heal(fault, healed_by="heal-all")

    def _record(self, fault: Fault, phase: str, detail: dict[str, object]) -> None:
        self.history.record(NEMESIS_PROCESS, "info", fault.name, key=fault.key, value=phase, detail=detail)
