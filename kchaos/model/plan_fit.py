"""Fitting the fault plan to the `--duration` a user asked for, when they left the faults to kchaos.

A new user's first `kchaos run --duration 30` must run, not be refused because the default faults want
60 s. So the default faults give way, fewest changes first: the quiet period before each fault shortens to
`MIN_FITTED_INTERVAL_S`, then faults are cut from the end of the default list (the first, a kill of the
leader, stays). Faults or quiet periods the user named (`--nemesis`, `--fault-interval`, a range) are
never changed: such a run is refused with the least duration that fits it (`fault_plan.refusal`).
The fitted values are the run's own (`config.json` records them), and the run says what it changed.
"""

from __future__ import annotations

import math
from collections.abc import Set
from dataclasses import dataclass
from typing import Any

from kchaos.model.fault_plan import PlanSettings, refusal, shortfall

#: The shortest quiet period a fitted plan keeps before a fault: long enough for the cluster to have
#: settled and the producers to have written to every leader after the fault before.
MIN_FITTED_INTERVAL_S = 5.0


class _Trial:
    """The settings with the nemesis and quiet period of one candidate, everything else as given (the
    run's shape too, which a mix plans its targets with)."""

    def __init__(self, settings: PlanSettings, nemesis: tuple[str, ...], fault_interval: float) -> None:
        self._settings = settings
        self.nemesis = nemesis
        self.fault_interval = fault_interval

    def __getattr__(self, name: str) -> Any:
        return getattr(self._settings, name)


@dataclass(frozen=True)
class Fitted:
    """The plan kchaos fitted: the duration, the faults it kept and the quiet period before each."""

    duration: float
    nemesis: tuple[str, ...]
    fault_interval: float
    left_out: tuple[str, ...]
    interval_was: float

    def apply_to(self, config: object) -> str | None:
        """Sets the fitted values on the (frozen) `config` being validated; returns `note`."""
        for name in ("duration", "nemesis", "fault_interval"):
            object.__setattr__(config, name, getattr(self, name))
        return self.note

    @property
    def note(self) -> str | None:
        """What was changed to fit a `--duration` given, for the run's first line and `config.json`; None
        when only the duration left out was set to what the faults need."""
        changes = []
        if self.fault_interval != self.interval_was:
            was = _seconds(self.interval_was)
            changes.append(f"{_seconds(self.fault_interval)}s apart instead of {was}s")
        if self.left_out:
            changes.append(f"{', '.join(self.left_out)} left out")
        return f"fitted to --duration {_seconds(self.duration)}: {'; '.join(changes)}" if changes else None


def _candidates(settings: PlanSettings) -> list[tuple[tuple[str, ...], float]]:
    """The nemeses and quiet periods to try for the default faults, in order: fewest faults dropped first,
    then the longer quiet period first."""
    nemesis = tuple(settings.nemesis)
    intervals = [settings.fault_interval, MIN_FITTED_INTERVAL_S]
    return [(nemesis[:count], interval) for count in range(len(nemesis), 0, -1) for interval in intervals]


def fit(settings: PlanSettings, given: Set[str]) -> Fitted | None:
    """None when the plan already runs every requested fault. Else, with no `--duration` given, the least
    duration that runs them all (a mix of four kinds needs about 110 s: a default the user never chose is
    not refused); with one given, the first candidate whose plan runs every fault it keeps. ValueError,
    with the refusal of the most cut-down candidate (naming the least `--duration` that fits it), when
    none does."""
    missing = shortfall(settings)
    if missing is None:
        return None
    nemesis = tuple(settings.nemesis)
    if "duration" not in given:
        interval = settings.fault_interval
        return Fitted(float(math.ceil(missing.needed_s)), nemesis, interval, (), interval)
    if not given.isdisjoint({"nemesis", "fault_interval", "fault_interval_max"}):
        raise ValueError(refusal(settings, missing))  # what the user named is theirs to change
    candidates = _candidates(settings)
    for kept, interval in candidates:
        if shortfall(_Trial(settings, kept, interval)) is None:
            return Fitted(settings.duration, kept, interval, nemesis[len(kept) :], settings.fault_interval)
    kept, interval = candidates[-1]
    least = _Trial(settings, kept, interval)
    text = refusal(least, shortfall(least) or missing)
    raise ValueError(f"{text} (the default faults fitted as far as they go: {kept[0]}, {interval:g}s apart)")


def _seconds(value: float) -> str:
    return f"{value:.3f}".rstrip("0").rstrip(".")
