"""What a person watching a run sees while it goes: phase, throughput, active faults, time left.

A chaos run takes minutes and most of it is waiting (for a leader to be fenced, for an ISR to refill), so
silence looks like a hang. `RunProgress` is the run's state as the run itself updates it; `ProgressTicker`
prints one line from it every few seconds. The numbers come from what the history writer already counts,
so watching costs nothing.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from kchaos.model.events import FAIL, INFO, OK, POLL, SEND, TXN_SEND, EventType


class Milestone(str):
    """A progress message worth a line of its own where the rest of progress is shown in place or not at
    all (a terminal's one status line; CI's log): what the run is about to do, said once, and what went
    wrong on the way that its verdict alone does not say. A str, so every progress callback takes it."""


def labelled(label: str, message: str) -> str:
    """`message` under `label` (a matrix point's, a hunt run's), still a milestone if it was one."""
    text = f"{label} {message}"
    return Milestone(text) if isinstance(message, Milestone) else text


CLUSTER_UP = "cluster up"
WORKLOAD = "workload"
FAULT_ACTIVE = "fault active"
HEALING = "healing"
READ_TO_END = "read to end"
REPLICA_DUMP = "replica dump"
CHECKING = "checking"


class Counts(Protocol):
    def count(self, f: str, type: EventType) -> int: ...


class Faults(Protocol):
    @property
    def active_keys(self) -> Sequence[str]: ...


#: What the throughput figures count: (label, (f, ...), type) of history events. A record written inside a
#: transaction is acknowledged as a send is, so both count.
_RATES: tuple[tuple[str, tuple[str, ...], EventType], ...] = (
    ("acks", (SEND, TXN_SEND), OK),
    ("fails", (SEND, TXN_SEND), FAIL),
    ("unknown", (SEND, TXN_SEND), INFO),
    ("reads", (POLL,), OK),
)


@dataclass
class RunProgress:
    """The run's phase and where to read its numbers; `line()` renders the state at the moment."""

    clock: Callable[[], float] = time.monotonic
    phase: str = "starting"
    started: float = 0.0
    phase_ends: float | None = None
    bounded: bool = True
    counts: Counts | None = None
    faults: Faults | None = None
    _last: tuple[float, dict[str, int]] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        self.started = self.clock()

    def enter(self, phase: str, seconds: float | None = None, bounded: bool = True) -> None:
        """Moves to `phase`, expected to last `seconds`: at most (a wait with a deadline, `bounded`) or
        about (the planned writing time, which faults still healing extend)."""
        self.phase = phase
        self.phase_ends = self.clock() + seconds if seconds is not None else None
        self.bounded = bounded

    def _rates(self, now: float) -> dict[str, float]:
        if self.counts is None:
            return {}
        totals = {label: sum(self.counts.count(f, type_) for f in fs) for label, fs, type_ in _RATES}
        last, self._last = self._last, (now, totals)
        if last is None or now <= last[0]:
            return {}
        return {label: (totals[label] - last[1][label]) / (now - last[0]) for label in totals}

    def shown_phase(self) -> str:
        """The phase as a person reads it: the workload with a fault in force is `fault active`."""
        active = self.faults.active_keys if self.faults is not None else ()
        return FAULT_ACTIVE if self.phase == WORKLOAD and active else self.phase

    def line(self) -> str:
        """The status: `[clock phase]`, then rates, the faults in force and the time left, `; `-separated
        (a narrow terminal drops the middle parts first: `fit_line`)."""
        now = self.clock()
        active = list(self.faults.active_keys) if self.faults is not None else []
        parts = [f"[{_clock(now - self.started)} {self.shown_phase()}]"]
        rates = self._rates(now) if self.phase == WORKLOAD else {}
        if rates:
            parts.append(
                ", ".join(f"{rate:.0f} {label}/s" for label, rate in rates.items() if rate or label == "acks")
            )
        if self.phase in (WORKLOAD, FAULT_ACTIVE):
            parts.append(f"{', '.join(active)} in force" if active else "no fault in force")
        if self.phase_ends is not None:
            left = self.phase_ends - now
            if left > 0:
                parts.append(f"{'≤' if self.bounded else '~'}{_clock(left)} left")
            elif not self.bounded:  # only the writing runs past its plan, and only while faults heal
                parts.append(
                    "past --duration until they end and heal" if active else "past --duration until healed"
                )
        return "; ".join(parts)


def fit_line(line: str, width: int) -> str:
    """A status `line` in `width` columns: the middle parts go first (rates, then faults), so the clock,
    the phase and the time left stay; only what still does not fit is cut, marked `…`."""
    parts = line.split("; ")
    while len("; ".join(parts)) > width and len(parts) > 2:
        del parts[1]
    fitted = "; ".join(parts)
    return fitted if len(fitted) <= width else fitted[: width - 1] + "…"


def _clock(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes:02d}:{secs:02d}"


class ProgressTicker:
    """Prints `state.line()` every `interval` seconds from a daemon thread, until stopped."""

    def __init__(self, state: RunProgress, emit: Callable[[str], None], interval: float = 10.0) -> None:
        self.state = state
        self.emit = emit
        self.interval = interval
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> ProgressTicker:
        self._thread = threading.Thread(target=self._run, name="progress", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)

    def _run(self) -> None:
        self.state.line()  # the first call only sets the baseline of the rates
        while not self._stop.wait(self.interval):
            self.emit(self.state.line())
