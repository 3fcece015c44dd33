"""When faults happen: a seeded, reproducible plan, and the runner that carries it out and records it.

The plan is computed from the configuration alone (same seed, same plan) and written to the run directory
before the run starts. The runner waits for each fault's effect and for the cluster to heal before the
next quiet period, so a schedule tests what it says ("leader killed, another elected") rather than what
happened to fit in a guessed number of seconds. Crafted scenarios use the same runner step by step
(`begin`, `end`), so their faults are recorded and healed exactly like scheduled ones.
"""

from __future__ import annotations

import json
import logging
import math
import random
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any, Protocol

from kchaos.harness.cluster import KafkaCluster
from kchaos.model.config import ConfigError, RunConfig
from kchaos.model.events import INFO, NEMESIS_PROCESS, OBSERVED, SCENARIO, SKIPPED, START, STOP
from kchaos.model.fault_definition import TIME, FaultSpec
from kchaos.model.fault_pins import Pins
from kchaos.model.fault_plan import (
    PlannedFault as PlannedFault,  # re-exported: the plan's items, as runs know them
)
from kchaos.model.fault_plan import plan as plan_faults
from kchaos.model.fault_record import FaultRecord
from kchaos.model.fault_spec import parse_spec
from kchaos.model.history import HistoryWriter
from kchaos.model.waiting import WaitTimeout, wait_until
from kchaos.model.workload_names import SENDS
from kchaos.nemesis.carriers import fault_class
from kchaos.nemesis.fault import Fault, FaultUnsupported, TargetUnresolved
from kchaos.nemesis.halts import HaltWatch
from kchaos.nemesis.scenario_ends import ScenarioStopped, StepFailed
from kchaos.nemesis.triggers import Fired, await_state, record_unfired

log = logging.getLogger(__name__)


def plan(config: RunConfig) -> list[PlannedFault]:
    """Faults after quiet intervals, all healed well before writes stop; same config and seed, same plan.

    The arithmetic is `kchaos.model.fault_plan`'s. A configuration validated for a crafted scenario was never
    required to fit its faults in its duration, so it is refused here rather than run as a plan of no faults.
    """
    if config.for_scenario:
        raise ConfigError(
            "this configuration was validated for a crafted scenario (load_config(for_scenario=True)); "
            "pass the scenario to execute(), or validate it with load_config() to run the planned faults"
        )
    return plan_faults(config)


def write_plan(planned: list[PlannedFault], path: Path) -> None:
    path.write_text(json.dumps([asdict(p) for p in planned], indent=2) + "\n")


Scenario = Callable[["Nemesis"], None]


class Readers(Protocol):
    """The run's consumers, as a scenario sees them: it may hold them back (a lagging reader) and release
    them, e.g. so writes a failover then truncates were never read (`lost-write`, not `truncated-read`)."""

    def hold(self, timeout: float = 30.0) -> None: ...

    def release(self) -> None: ...


@dataclass
class _Group:
    """Faults of a plan that share their time, as the plan's thread runs them: each one's thread, the
    faults that started, what failed, and when the last of them is planned to end."""

    planned_end: float = -math.inf
    threads: list[threading.Thread] = field(default_factory=list)
    faults: list[Fault] = field(default_factory=list)
    errors: list[BaseException] = field(default_factory=list)


def _overlapped(item: PlannedFault, planned: list[PlannedFault]) -> bool:
    """Whether another fault of the plan starts while `item` holds (one before it cannot: then `item`
    started beside it)."""
    return any(item.at <= other.at < item.end for other in planned if other is not item)


class Nemesis:
    """Runs a plan (or a scenario) in a background thread; `heal_all()` undoes whatever is still active."""

    def __init__(
        self,
        cluster: KafkaCluster,
        history: HistoryWriter,
        topic: str,
        partition: int,
        planned: list[PlannedFault],
        seed: int = 0,
        effect_timeout: float = 60.0,
        heal_timeout: float = 120.0,
        readers: Readers | None = None,
        workload: str = SENDS,
        pins: Pins | None = None,
    ) -> None:
        self.cluster = cluster
        #: In a replay, what each fault key hit and chose in the original run (`kchaos.model.fault_pins`):
        #: each fault keeps to its key's while they are valid (`kchaos.nemesis.pinning`).
        self.pins = pins
        self.readers = readers
        #: The run's `--workload`, which each fault is told (`Fault.workload`).
        self.workload = workload
        #: What a crafted scenario saw while it drove its faults; recorded in the history when it ends.
        self.observed: dict[str, Any] = {}
        self.history = history
        self.topic = topic
        self.partition = partition
        self.planned = planned
        self.seed = seed
        self.effect_timeout = effect_timeout
        self.heal_timeout = heal_timeout
        self.active: list[Fault] = []
        self.done: list[Fault] = []
        self.skipped: list[str] = []
        self.error: BaseException | None = None
        self._stop = threading.Event()
        #: It runs a scenario, whose steps a stop ends (`ScenarioStopped`).
        self._in_scenario = False
        self.finished = threading.Event()
        self._lock = threading.Lock()
        #: Held while a fault starts: faults of an overlapping plan start one at a time.
        self._start_lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._t0 = 0.0
        self._count = 0
        #: When the latest fault ended (`time.monotonic()`), None before any did: the run's writes go on
        #: a little after it when it ended past its plan (`kchaos.runner.run_steps.wait_for_workload`).
        self.last_end: float | None = None
        #: Nodes that stopped answering by themselves, which no heal brings back (`kchaos.nemesis.halts`).
        self._halts = HaltWatch()
        #: Set once the plan's last fault ended (before the cluster healed from it), or the nemesis is done:
        #: the producers need not write through the heal, which the run's recovery waits for anyway.
        self.faults_ended = threading.Event()

    def holding(self) -> dict[int | str, str]:
        """What the faults in force hold (nodes, client processes), each with the key of the fault holding it:
        what a fault starting beside them keeps off, and what is down on purpose rather than by itself."""
        return {thing: fault.key for fault in list(self.active) for thing in fault.holds()}

    @property
    def active_keys(self) -> list[str]:
        """The faults in force now (`isolate#1`), for progress output."""
        with self._lock:
            return [fault.key for fault in self.active]

    def start(self, scenario: Scenario | None = None, name: str = "crafted") -> None:
        """Runs the plan, or `scenario` (called `name` in the history), in the background."""
        self._t0 = time.monotonic()
        target = self._run_plan if scenario is None else lambda: self._run_scenario(scenario, name)
        self._thread = threading.Thread(target=self._guarded, args=(target,), name="nemesis", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 300.0) -> None:
        """Asks the runner to finish the fault in progress early, waits for it, then heals everything."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
        self.heal_all()

    def _guarded(self, body: Callable[[], None]) -> None:
        try:
            body()
        except ScenarioStopped as exc:
            log.info("the scenario stopped with the run, at: %s", exc)
            self.heal_all()
        except BaseException as exc:  # recorded and re-raised by the run; healing still happens
            log.exception("nemesis failed")
            self.error = exc
            self.heal_all()
        finally:
            self.faults_ended.set()
            self.finished.set()

    def _scenario_stopped(self) -> bool:
        """The run asked a scenario to stop. A plan's faults end by their own schedule on a stop
        (`_run_plan`), so its waits do not stop early."""
        return self._in_scenario and self._stop.is_set()

    def _run_scenario(self, scenario: Scenario, name: str) -> None:
        """What the scenario observed is recorded even when it fails half-way: the steps it got to."""
        self._in_scenario = True
        try:
            scenario(self)
        finally:
            self.history.record(
                NEMESIS_PROCESS, INFO, SCENARIO, key=name, value=OBSERVED, detail=self.observed
            )

    def _run_plan(self) -> None:
        """Each fault in a thread of its own, so one may start while another holds (`--fault-overlap`):
        a fault the plan starts inside an earlier one's window starts that long after the earlier one
        really started, beside it; any other starts at its planned time, once every fault before it ended
        and the cluster healed from them."""
        group = _Group()  # empty: it ends before any fault starts
        previous_at = previous_started = 0.0
        for item in self.planned:
            beside = item.at < group.planned_end
            if beside:
                due = previous_started + (item.at - previous_at)
            else:
                self._settle(group)
                group = _Group()
                due = self._t0 + item.at
            if self._stop.wait(max(0.0, due - time.monotonic())):
                break
            previous_at, previous_started = item.at, time.monotonic()
            group.planned_end = max(group.planned_end, item.end)
            overlapped = beside or _overlapped(item, self.planned)
            thread = threading.Thread(
                target=self._apply, args=(item, group, beside, overlapped), name=f"nemesis-{item.key}",
                daemon=True,
            )  # fmt: skip
            group.threads.append(thread)
            thread.start()
        self._settle(group, last=True)

    def _apply(self, item: PlannedFault, group: _Group, beside: bool, overlapped: bool) -> None:
        """One fault: start it (`beside` faults in force, keeping off what they hold), wait for its
        effect, hold it, end it; what failed is kept in `group` for the plan's thread to raise. A fault
        that shares its time with another holds no longer than planned waiting for its effect: the other
        may be what keeps Kafka from reacting."""
        try:
            fired: Fired | None = None
            if item.spec.when != TIME:
                fired = await_state(self, item.spec.when, item.armed_s, item.after_s)
                if fired is None:
                    self.skipped.append(record_unfired(self.history, item))
                    return
            started = time.monotonic()
            fault = self.begin(item.spec, key=item.key, beside_others=beside, fired=fired)
            if fault is None:
                return
            group.faults.append(fault)
            # Alone, the fault holds for its duration, or longer while Kafka has not reacted (up to
            # effect_timeout).
            bound = item.duration if overlapped else max(item.duration, self.effect_timeout)
            effect_after = self.await_condition(
                fault.effect_reached, bound, f"{item.key}: {fault.describe()}"
            )
            self._stop.wait(max(0.0, started + item.duration - time.monotonic()))
            self.end(fault, effect_seen_after_s=effect_after)
        except BaseException as exc:  # raised by the plan's thread, which records it and heals
            group.errors.append(exc)
            self._stop.set()

    def _settle(self, group: _Group, last: bool = False) -> None:
        """Waits for the group's faults to end, raises the first failure among them, then (after saying so,
        for the `last` group of the plan) waits for the cluster to heal from each (unless the run is
        stopping)."""
        for thread in group.threads:
            thread.join()
        if group.errors:
            raise group.errors[0]
        if last:
            self.faults_ended.set()
        if self._stop.is_set():
            return
        for fault in group.faults:
            healed = partial(self._healed_or_halted, fault)
            self.await_condition(healed, self.heal_timeout, f"the cluster to heal after {fault.key}")

    def _healed_or_halted(self, fault: Fault) -> bool:
        """Healed, or a node halted by itself, which no heal brings back (`kchaos.nemesis.halts`)."""
        return fault.healed() or self._halts.cannot_heal(self.cluster, self.topic, self.holding())

    # --- the step-by-step API scenarios use ----------------------------------------------------------

    def begin(
        self,
        spec: FaultSpec | str,
        key: str | None = None,
        beside_others: bool = False,
        fired: Fired | None = None,
    ) -> Fault | None:
        """Starts one fault and records it; returns None (recorded as skipped) if this machine cannot.

        `beside_others`: it starts while the plan's other faults hold, so its target keeps off the nodes
        and clients they hold (`Fault.held_by`), and is skipped, recorded, if it can only name those. One
        fault starts at a time, so two starting together cannot both take one node. `fired`: the state it
        fired on and the seconds it was armed, recorded on its start row; the leader that state named is
        the one its targets are resolved against."""
        spec = parse_spec(spec) if isinstance(spec, str) else spec  # a crafted scenario's step names it
        if self._scenario_stopped():
            raise ScenarioStopped(f"beginning {spec}")
        with self._start_lock:
            with self._lock:
                self._count += 1
                key = key or f"{spec.name}#{self._count}"
                held = self.holding() if beside_others else {}
            rng = random.Random(f"{self.seed}:{key}")
            fault = fault_class(spec)(self.cluster, self.topic, self.partition, key, spec, rng)
            fault.workload = self.workload
            fault.use_readers(self.readers)
            fault.held_by = held
            fault.seen_leader = fired.leader if fired is not None else None
            if self.pins is not None and key in self.pins:
                fault.pinned = self.pins[key].nodes
                fault.pinned_choices = self.pins[key].choices
            with self._lock:
                self.active.append(fault)
            try:
                started = fault.start()
            except (FaultUnsupported, TargetUnresolved) as exc:
                with self._lock:
                    self.active.remove(fault)
                fault.stop()  # undo whatever a start that gave up half-way did (stop is idempotent)
                log.warning("%s", exc)
                self.skipped.append(str(exc))
                self.history.record(
                    NEMESIS_PROCESS, INFO, fault.name, key=key, value=SKIPPED, error=str(exc),
                    detail={"kind": fault.kind, "spec": str(spec)},
                )  # fmt: skip
                return None
        if held:
            started = replace(started, beside=tuple(sorted(set(held.values()))))
        if fired is not None:
            started = replace(started, fired_on=fired.sentence, armed_for_s=fired.armed_for_s)
        self._record(fault, START, started)
        return fault

    def end(
        self,
        fault: Fault,
        effect_seen_after_s: float | None = None,
        healed_by: str | None = None,
        held_through_row: int | None = None,
    ) -> FaultRecord | None:
        """Stops a fault and records it, with how long its effect took to show, what healed it when not its
        plan, and the last row before it was lifted (the fields every record has for these); returns the
        record, None for a fault already ended."""
        with self._lock:
            if fault not in self.active:
                return None
            self.active.remove(fault)
        stopped = replace(
            fault.stop(),
            effect_seen_after_s=effect_seen_after_s,
            healed_by=healed_by,
            held_through_row=held_through_row,
        )
        self.last_end = time.monotonic()
        self._record(fault, STOP, stopped)
        self.done.append(fault)
        return stopped

    def await_condition(
        self, condition: Callable[[], bool], timeout: float, what: str, interval: float = 0.5
    ) -> float | None:
        """Seconds until `condition` held (asked every `interval` seconds), or None (logged) if it did not
        within `timeout`."""
        try:
            return self.require(condition, timeout, what, interval)
        except StepFailed as exc:
            log.warning("%s", exc.__cause__ or exc)
            return None

    def require(
        self, condition: Callable[[], bool], timeout: float, what: str, interval: float = 0.5
    ) -> float:
        """Like `await_condition`, for a step a scenario cannot go on without: the next fault would be
        aimed at a state Kafka never reached (a leader of -1, an ISR that never shrank), so a timeout
        ends the scenario with `StepFailed` naming the step instead."""
        since = time.monotonic()
        try:
            wait_until(lambda: self._scenario_stopped() or condition(), timeout, what, interval)
        except WaitTimeout as exc:
            raise StepFailed.after(exc) from exc
        if self._scenario_stopped():
            raise ScenarioStopped(f"waiting for {what}")
        return round(time.monotonic() - since, 3)

    def heal_all(self) -> None:
        for fault in list(self.active):
            self.end(fault, healed_by="heal-all")

    def _record(self, fault: Fault, phase: str, record: FaultRecord) -> None:
        self.history.record(
            NEMESIS_PROCESS, INFO, fault.name, key=fault.key, value=phase, detail=record.to_detail()
        )
