"""The fault plan's arithmetic: which fault runs when, from the configuration and its seed alone.

Pure (no Docker, no Kafka, no harness imports) because the configuration needs it before anything starts:
a run that asks for faults and plans none would pass while testing nothing, so the configuration refuses
it, and names the exact `--duration` that would fit every requested fault. That number can be exact
because the draws never look at `duration`: the plan is the prefix of one unbounded, seeded sequence
of faults (`fault_sequence`) that ends before the run's tail, so a longer run plans the same faults and
then more.

Both schedules begin with one round of every requested fault in a seeded order. `fixed` keeps cycling
through that order; `random` draws each later fault independently (repeats allowed). So with either
schedule the first `len(nemesis)` faults are every requested fault once, and "does every requested fault
run?" is "do that many faults fit?".

A mix (`--nemesis mix:kinds=kill,pause`, `kchaos.model.fault_mix`) plans the same way with its kinds as the
requested faults, and draws each fault's target after its kind: the plan lists the concrete spec drawn.
A nemesis of concrete faults draws exactly what it drew before mixes existed, so its plans do not change.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import islice, takewhile
from typing import Protocol

from kchaos.model.fault_definition import TIME, FaultSpec, RunShape
from kchaos.model.fault_mix import draw_spec, draw_trigger, mix_of
from kchaos.model.fault_spec import parse_spec
from kchaos.model.fault_table import FAULTS
from kchaos.model.fault_triggers import ARMED_PAST_END_S, MAX_AFTER_S

#: The least time producers keep writing after the last fault ended (see `post_fault_tail`).
MIN_TAIL_S = 10.0
#: What `--fault-overlap` does, in the words `kchaos faults` prints below the table.
OVERLAP_HELP = (
    "after the first round (every requested fault once, alone), each fault starts with chance P while the "
    "one before it still holds, at a seeded moment of its window, if both may overlap and they are not "
    "the same fault. It keeps off the nodes and clients the faults in force hold (a target that names only "
    "those skips it, recorded), holds no longer than planned waiting for its effect, and the next quiet "
    "period starts once all of them ended and the cluster healed."
)


class PlanSettings(Protocol):
    """What the plan depends on: the run configuration's nemesis fields (`RunConfig` has them all)."""

    @property
    def nemesis(self) -> Sequence[str]: ...
    @property
    def schedule(self) -> str: ...
    @property
    def seed(self) -> int: ...
    @property
    def duration(self) -> float: ...
    @property
    def fault_duration(self) -> float: ...
    @property
    def fault_duration_max(self) -> float | None: ...
    @property
    def fault_interval(self) -> float: ...
    @property
    def fault_interval_max(self) -> float | None: ...
    @property
    def fault_overlap(self) -> float: ...
    @property
    def without(self) -> Sequence[str]: ...


@dataclass(frozen=True)
class PlannedFault:
    """One fault of the plan: start `at` seconds after the workload starts, hold for `duration` seconds."""

    key: str
    fault: str  # the spec, as `name[:option=value]...`
    at: float
    duration: float
    #: A fault that fires on state (`when=`): how long after `at` it stays armed, waiting for its state;
    #: 0 for one that starts at `at`.
    armed_s: float = 0.0
    #: How long its state must hold before it fires (a seeded moment inside the window).
    after_s: float = 0.0

    @property
    def spec(self) -> FaultSpec:
        """The fault, parsed (once: `parse_spec` keeps what it parsed)."""
        return parse_spec(self.fault)

    @property
    def end(self) -> float:
        """When the fault is planned to stop at the latest (it may hold longer while Kafka has not
        reacted); one that fires on state may fire as late as the end of its arming."""
        return self.at + self.armed_s + self.duration


def _draw(rng: random.Random, low: float, high: float | None) -> float:
    """A seeded time between `low` and `high`, or `low` itself when there is no range (draws nothing)."""
    return round(rng.uniform(low, high), 3) if high is not None and high > low else low


def post_fault_tail(settings: PlanSettings) -> float:
    """Seconds producers keep writing after the last fault ended, and at least until it healed.

    Writes to the new leaders after a failover push the final read's end past the records it truncated,
    so a lost write shows as `lost-write` below that end rather than unseen above it.
    """
    return max(MIN_TAIL_S, settings.fault_interval)


def fault_sequence(settings: PlanSettings) -> Iterator[PlannedFault]:
    """Every fault the settings would ever plan, in order of their starts and without end (nothing if no
    fault is asked).

    The draws, in this order: the seeded order of the faults; the first quiet period; then per fault its
    duration, for `random` schedules beyond the first round which fault, for a mix its target (and, for a
    mix with states beyond the first round, the state it fires on and its target anew), for a fault that
    fires on state how long the state must hold first, or else with `--fault-overlap` beyond the first
    round whether it starts while the fault before it holds (and then when), and the next quiet period,
    which follows the last of the faults in force to end. None depends on `duration`, which only decides
    where the plan stops (see `plan`). Without `--fault-overlap` no overlap is drawn at all, nor a state
    without a mix's `when=`, so such plans are the ones planned before either existed; the first round
    never overlaps, so every requested fault runs whole, each on its own, whatever the overlap.
    """
    mix = mix_of(settings.nemesis)
    requested = requested_faults(settings)
    if not requested:
        return
    shape = _shape(settings) if mix is not None else None
    rng = random.Random(settings.seed)
    order = list(requested)
    rng.shuffle(order)
    at = _draw(rng, settings.fault_interval, settings.fault_interval_max)
    count = 0
    holding: list[PlannedFault] = []
    while True:
        duration = _draw(rng, settings.fault_duration, settings.fault_duration_max)
        if settings.schedule == "random" and count >= len(order):
            spec = rng.choice(order)
        else:
            spec = order[count % len(order)]
        if shape is not None:
            spec = draw_spec(rng, spec, shape)
        if (  # a state is drawn only after the first round, where the fault may fire beside the one before
            mix is not None
            and shape is not None
            and mix.triggers
            and count >= len(order)
            and may_fire_beside(holding[-1:], spec)
        ):
            spec = draw_trigger(rng, mix, spec, shape)
        armed = 0.0
        if parse_spec(spec).when != TIME:
            after = round(rng.uniform(0, MAX_AFTER_S), 3)
            if may_fire_beside(holding[-1:], spec):
                # Armed as the fault before it starts, through its hold and a little past.
                at, armed = holding[-1].at, holding[-1].duration + ARMED_PAST_END_S
            else:  # from its own planned start, through its own duration and as long past
                armed = duration + ARMED_PAST_END_S
        else:
            after = 0.0
            overlapping = (
                settings.fault_overlap > 0 and count >= len(order) and may_overlap(holding[-1:], spec)
            )
            if overlapping and rng.random() < settings.fault_overlap:  # drawn only where it may overlap
                start = round(holding[-1].at + rng.uniform(0, holding[-1].duration), 3)
                meets = [fault for fault in holding if fault.end > start]
                if may_overlap(meets, spec):  # else it waits for them all to end, as drawn before
                    at, holding = start, meets
        count += 1
        planned = PlannedFault(f"{parse_spec(spec).name}#{count}", spec, at, duration, armed, after)
        yield planned
        holding = [fault for fault in holding if fault.end > at] + [planned]
        at = max(fault.end for fault in holding) + _draw(
            rng, settings.fault_interval, settings.fault_interval_max
        )


def may_fire_beside(holding: Sequence[PlannedFault], spec: str) -> bool:
    """Whether `spec`, fired on state, may start while the faults of `holding` hold: both may overlap.
    Unlike a drawn overlap it may be of their name: it keeps off the nodes and clients they hold, so a
    second kill hits another node than the first.

    Only beside faults that start on the clock: a fault armed beside one that is itself armed would wait
    for its state beside a fault that has not happened yet."""
    name = parse_spec(spec).name
    return (
        bool(holding)
        and FAULTS[name].overlaps
        and all(FAULTS[f.spec.name].overlaps and f.spec.when == TIME for f in holding)
    )


def may_overlap(holding: Sequence[PlannedFault], spec: str) -> bool:
    """Whether fault `spec` may start while every fault of `holding` holds: each of them may overlap
    another (`FaultDefinition.overlaps`) and none is of its name (two of one fault would undo each other's
    work when they end in the other order). False when nothing holds: there is nothing to overlap."""
    name = parse_spec(spec).name
    others = [fault.spec.name for fault in holding]
    return (
        bool(others)
        and FAULTS[name].overlaps
        and all(FAULTS[other].overlaps and other != name for other in others)
    )


def overlap_refusal(overlap: float, named: Iterable[str]) -> str | None:
    """Why `--fault-overlap` `overlap` would change nothing in a plan of the faults `named` (with the fix),
    or None: only two faults of different names that may overlap (`may_overlap`) ever do."""
    if overlap == 0:
        return None
    able = sorted({name for name in named if FAULTS[name].overlaps})
    if len(able) >= 2:
        return None
    named = f"only {able[0]}" if able else "none"
    may = ", ".join(name for name, fault in FAULTS.items() if fault.overlaps)
    return (
        f"fault_overlap: --fault-overlap {overlap:g} starts a fault while another holds only "
        f"when both may overlap ({may}) and differ, and --nemesis names {named} of them; name two, or leave "
        "--fault-overlap out"
    )


def requested_faults(settings: PlanSettings) -> list[str]:
    """What the plan's first round runs once each: the nemesis's faults, or a mix's kinds."""
    mix = mix_of(settings.nemesis)
    return list(mix.kinds) if mix is not None else list(settings.nemesis)


def _shape(settings: PlanSettings) -> RunShape:
    """The run's shape, which a mix draws its targets for; settings without one cannot plan a mix."""
    if not isinstance(settings, RunShape):
        raise TypeError(
            f"a mix draws targets for the run's shape, and {type(settings).__name__} has none (brokers, "
            "replication_factor, metadata, workload, consumers, client, producers, spare_brokers, "
            "controllers, spare_controllers); plan a RunConfig"
        )
    return settings


def plan(settings: PlanSettings) -> list[PlannedFault]:
    """The faults that end, plus the tail after them, within `duration`, but those `without` names: same
    settings and seed, same plan. A fault left out leaves the others where they were, so a run without
    it differs from the original by that fault alone (`kchaos hunt --shrink`)."""
    return [planned for planned in _fitting(settings) if planned.key not in settings.without]


def comma_items(value: object) -> object:
    """A comma-separated value's items, stripped (a list passes as it is)."""
    if isinstance(value, str):
        return tuple(item.strip() for item in value.split(",") if item.strip())
    return value


def without_refusal(settings: PlanSettings) -> str | None:
    """Why `without` cannot be left out of this plan (a key it does not have, or every fault), with the
    fix; None when it can."""
    if not settings.without:
        return None
    keys = [planned.key for planned in _fitting(settings)]
    unknown = [key for key in settings.without if key not in keys]
    if unknown:
        return (
            f"without: {', '.join(unknown)} is no fault of this plan, whose faults are {', '.join(keys)} "
            "(schedule.json names them); name those"
        )
    if set(keys) <= set(settings.without):
        return "without: leaves out every planned fault; keep one, or run with --nemesis none"
    return None


def _fitting(settings: PlanSettings) -> Iterator[PlannedFault]:
    tail = post_fault_tail(settings)
    return takewhile(lambda p: p.end + tail <= settings.duration, fault_sequence(settings))


@dataclass(frozen=True)
class Shortfall:
    """A plan that misses some requested fault: how many fit, and what every one of them needs.

    `needed_s` is the exact least `duration` that plans every requested fault for this seed: the end of
    the last fault of the first round (its quiet periods and faults) plus the tail, the very sum `plan`
    compares with `duration`.
    """

    requested: int
    planned: int
    last_end_s: float
    faults_s: float
    tail_s: float

    @property
    def quiet_s(self) -> float:
        """The quiet periods before the first round's faults, together."""
        return self.last_end_s - self.faults_s

    @property
    def needed_s(self) -> float:
        return self.last_end_s + self.tail_s


def shortfall(settings: PlanSettings) -> Shortfall | None:
    """None when the plan runs every requested fault at least once (or none is requested); else the gap."""
    requested = len(requested_faults(settings))
    planned = sum(1 for _ in islice(_fitting(settings), requested))
    if planned >= requested:
        return None
    first_round = list(islice(fault_sequence(settings), requested))
    return Shortfall(
        requested,
        planned,
        last_end_s=first_round[-1].end,
        faults_s=sum(p.duration for p in first_round),
        tail_s=post_fault_tail(settings),
    )


def refusal(config: PlanSettings, missing: Shortfall) -> str:
    """Why a run that asks for faults would not run them all, and the least `--duration` that would.

    Asking for faults and getting none (or not every one) must never pass silently as an `ok` run.
    """
    first = missing.requested == 1
    quiet = "first quiet period" if first else f"{missing.requested} quiet periods"
    faults = "fault" if first else f"{missing.requested} faults"
    flags = [
        flag + (f"/{flag}-max" if high is not None else "")
        for flag, high in (
            ("--fault-interval", config.fault_interval_max),
            ("--fault-duration", config.fault_duration_max),
        )
    ]
    fewer = "" if first else ", or request fewer faults in --nemesis"
    return (
        f"nemesis: {missing.planned} of {missing.requested} requested faults fit in --duration "
        f"{_seconds(config.duration)} ({quiet} {_seconds(missing.quiet_s)}s + {faults} "
        f"{_seconds(missing.faults_s)}s + tail {_seconds(missing.tail_s)}s after the last fault); use "
        f"--duration {math.ceil(missing.needed_s)} or more, or shorten {' or '.join(flags)}{fewer}"
    )


def _seconds(value: float) -> str:
    return f"{value:.3f}".rstrip("0").rstrip(".")
