"""The states a fault fires on (`when=`, `kchaos.model.fault_triggers` names them), read from the cluster
and the history while the fault is armed.

Each state is a small class: armed once (what it compares with later), then asked again and again whether
it holds, answering with the sentence its fault's start row records (`fired_on`) or None. `await_state`
waits for the state to hold for the plan's seeded moment, so the fault lands inside the window the fault
before it opened rather than at its edge; a state that never comes lets the fault be skipped, recorded.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

from kchaos.harness.cluster import KafkaCluster
from kchaos.harness.metadata import MetadataView
from kchaos.model.events import INFO, NEMESIS_PROCESS, SKIPPED, first_transactional_process
from kchaos.model.fault_plan import PlannedFault
from kchaos.model.fault_table import kind_of
from kchaos.model.history import HistoryWriter
from kchaos.nemesis.fault import Fault
from kchaos.nemesis.history_reading import HistoryRows, pending_end_txn
from kchaos.nemesis.requests import RequestFault


class Nemesis(Protocol):
    """What a state reads of the nemesis that armed it (`kchaos.nemesis.schedule.Nemesis` has it all; named
    here so this module, which the schedule imports, imports nothing of it)."""

    @property
    def cluster(self) -> KafkaCluster: ...
    @property
    def topic(self) -> str: ...
    @property
    def partition(self) -> int: ...
    @property
    def active(self) -> Sequence[Fault]: ...
    @property
    def history(self) -> HistoryWriter: ...
    @property
    def workload(self) -> str: ...

    def holding(self) -> dict[int | str, str]: ...

    def await_condition(
        self, condition: Callable[[], bool], timeout: float, what: str, interval: float = 0.5
    ) -> float | None: ...


#: How often an armed trigger asks: the windows it aims at last about a second.
POLL_S = 0.25


@dataclass(frozen=True)
class Fired:
    """What a state was when its fault fired: the sentence the start row records (`fired_on`), the seconds
    from arming, and the partition's leader it named (`leader-down`'s), which the fault's targets are
    resolved against: a failover between the state's last reading and the fault's start must not move a
    `successor` onto the new leader's successor."""

    sentence: str
    armed_for_s: float
    leader: int | None = None


class State(ABC):
    """One state, as a fault armed on it sees it."""

    def __init__(self, nemesis: Nemesis) -> None:
        self.nemesis = nemesis
        #: The partition's leader the state named when it last held, for states that name one.
        self.leader: int | None = None

    def arm(self) -> None:  # noqa: B027 (a state that compares with nothing keeps the default)
        """Notes what the state is compared with later (the leader when armed, ...)."""

    @abstractmethod
    def holds(self) -> str | None:
        """The sentence saying that it holds now, or None."""

    def _views(self) -> list[MetadataView]:
        nemesis = self.nemesis
        return nemesis.cluster.metadata.views(nemesis.topic)


class LeaderDown(State):
    def holds(self) -> str | None:
        partition = self.nemesis.partition
        leaders = {view.leader_of(partition) for view in self._views()}
        if len(leaders) != 1:
            return None
        leader = leaders.pop()
        held = self.nemesis.holding()
        if leader not in held:
            return None
        self.leader = leader
        return (
            f"partition {partition}'s leader, node {leader}, is held by {held[leader]} and the running "
            "nodes still name it"
        )


class LeaderChanged(State):
    def arm(self) -> None:
        nemesis = self.nemesis
        self.before = nemesis.cluster.metadata.leader_of(nemesis.topic, nemesis.partition)

    def holds(self) -> str | None:
        nemesis = self.nemesis
        leader = nemesis.cluster.metadata.leader_of(nemesis.topic, nemesis.partition)
        if leader < 0 or leader == self.before:
            return None
        return f"partition {nemesis.partition}'s leader changed from node {self.before} to node {leader}"


class IsrShrunk(State):
    def holds(self) -> str | None:
        partition = self.nemesis.partition
        for view in self._views():
            state = view.partitions.get(partition)
            if state is not None and len(state.isr) < len(state.replicas):
                isr, replicas = _ids(state.isr), _ids(state.replicas)
                return (
                    f"partition {partition}'s in-sync replicas are {isr} of {replicas}, as node "
                    f"{view.answered_by} reports"
                )
        return None


class FollowerBehind(State):
    def holds(self) -> str | None:
        partition = self.nemesis.partition
        views = self._views()
        held = self.nemesis.holding()
        answering = {view.answered_by for view in views}
        for view in views:
            state = view.partitions.get(partition)
            if state is None or state.leader < 0:
                continue
            behind = [n for n in state.replicas if n not in state.isr and n in answering and n not in held]
            if behind:
                return (
                    f"node {behind[0]} answers, no fault holds it, and it is not among partition "
                    f"{partition}'s in-sync replicas {_ids(state.isr)}, as node {view.answered_by} reports"
                )
        return None


class TxnOutstanding(State):
    def arm(self) -> None:
        self.rows = HistoryRows(self.nemesis.history)
        self.process = first_transactional_process(self.nemesis.workload)

    def holds(self) -> str | None:
        pending = pending_end_txn(self.rows(), self.process)
        if pending is None:
            return None
        return f"{self.process}'s {pending.f} of {pending.key} (row {pending.index}) is not answered yet"


class RequestHeld(State):
    def holds(self) -> str | None:
        for fault in list(self.nemesis.active):
            if isinstance(fault, RequestFault) and fault.ACTION == "hold" and fault.effect_reached():
                return f"{fault.key} holds a request ({fault.describe()})"
        return None


STATES: dict[str, type[State]] = {
    "leader-down": LeaderDown,
    "leader-changed": LeaderChanged,
    "isr-shrunk": IsrShrunk,
    "follower-behind": FollowerBehind,
    "txn-outstanding": TxnOutstanding,
    "request-held": RequestHeld,
}


def _ids(nodes: Iterable[int]) -> str:
    return "[" + ",".join(map(str, nodes)) + "]"


def await_state(nemesis: Nemesis, when: str, armed_s: float, after_s: float) -> Fired | None:
    """Waits up to `armed_s` seconds for state `when` to hold `after_s` seconds on end; returns what it was
    then (`Fired`), or None when it never did (or the run stopped)."""
    state = STATES[when](nemesis)
    armed = time.monotonic()
    state.arm()
    since: float | None = None
    fired: list[str] = []

    def held_long_enough() -> bool:
        nonlocal since
        sentence = state.holds()
        if sentence is None:
            since = None
            return False
        now = time.monotonic()
        since = now if since is None else since
        fired[:] = [sentence]
        return now - since >= after_s

    if nemesis.await_condition(held_long_enough, armed_s, f"the state {when}", interval=POLL_S) is None:
        return None
    return Fired(fired[0], round(time.monotonic() - armed, 3), state.leader)


def record_unfired(history: HistoryWriter, item: PlannedFault) -> str:
    """Records a fault whose state never held while it was armed (or the run stopped first) as skipped,
    with the state it waited for; returns the reason."""
    why = f"{item.key}: the state {item.spec.when} did not hold while it was armed ({item.armed_s:g} s)"
    history.record(
        NEMESIS_PROCESS, INFO, item.spec.name, key=item.key, value=SKIPPED, error=why,
        detail={"kind": kind_of(item.spec), "spec": item.fault},
    )  # fmt: skip
    return why
