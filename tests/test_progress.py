"""The status line of a run: phase, rates since the last line, active faults, time left."""

from __future__ import annotations

from collections.abc import Sequence

from kchaos.model.events import EventType
from kchaos.model.progress import READ_TO_END, WORKLOAD, Milestone, RunProgress, fit_line, labelled


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Counts:
    def __init__(self) -> None:
        self.values: dict[tuple[str, str], int] = {}

    def count(self, f: str, type: EventType) -> int:
        return self.values.get((f, type), 0)


class Faults:
    def __init__(self) -> None:
        self.keys: list[str] = []

    @property
    def active_keys(self) -> Sequence[str]:
        return self.keys


def test_the_line_follows_the_run_through_its_phases() -> None:
    clock, counts, faults = Clock(), Counts(), Faults()
    state = RunProgress(clock=clock, counts=counts, faults=faults)
    clock.now += 30
    state.enter(WORKLOAD, 60, bounded=False)
    assert state.line() == "[00:30 workload]; no fault in force; ~01:00 left"

    clock.now += 10
    counts.values = {("send", "ok"): 2000, ("send", "info"): 30, ("poll", "ok"): 1500}
    faults.keys = ["isolate#1"]
    assert state.line() == (
        "[00:40 fault active]; 200 acks/s, 3 unknown/s, 150 reads/s; isolate#1 in force; ~00:50 left"
    )

    clock.now += 55
    assert state.line().endswith("; isolate#1 in force; past --duration until they end and heal")
    faults.keys = []
    assert state.line().endswith("; no fault in force; past --duration until healed"), "never both"

    state.enter(READ_TO_END, 120)
    clock.now += 20
    assert state.line() == "[01:55 read to end]; ≤01:40 left"


def test_a_narrow_terminal_drops_the_rates_before_the_faults_and_keeps_the_clock_and_the_time_left() -> None:
    line = "[00:40 fault active]; 200 acks/s, 3 unknown/s, 150 reads/s; isolate#1 in force; ~00:50 left"
    assert fit_line(line, 100) == line
    assert fit_line(line, 60) == "[00:40 fault active]; isolate#1 in force; ~00:50 left"
    assert fit_line(line, 40) == "[00:40 fault active]; ~00:50 left"
    assert fit_line(line, 20) == "[00:40 fault active…"
    assert fit_line("short", 20) == "short"


def test_a_label_keeps_a_milestone_a_milestone_and_a_status_a_status() -> None:
    """A matrix point's or a hunt run's progress is labelled with its place; what the run marked as worth a
    line of its own stays so (else a matrix in CI printed none of its runs' milestones)."""
    milestone = labelled("[1/4] acks-all", Milestone("writing for 60s"))
    assert isinstance(milestone, Milestone) and milestone == "[1/4] acks-all writing for 60s"
    status = labelled("[1/4] acks-all", "[00:30 fault active]")
    assert not isinstance(status, Milestone) and status == "[1/4] acks-all [00:30 fault active]"
