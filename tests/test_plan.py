"""The fault plan: seeded and reproducible, every requested fault in it, or the run refused with the fix.

A run that asks for faults and plans none passes while testing nothing. The configuration refuses such a
run and names the least `--duration` that fits; these properties check that the promise holds for every
combination of timings, schedules and fault lists: either each requested fault is planned, or the refusal
names a duration that is then accepted and plans them all (and a second less would not).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, replace
from itertools import islice, pairwise

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from kchaos.model.config import ConfigError, load_config
from kchaos.model.fault_plan import fault_sequence, plan, post_fault_tail, shortfall
from kchaos.model.fault_spec import parse_spec
from kchaos.nemesis import schedule

#: Faults as a user writes them, one fault spelled two ways included (`kill` is `kill:target=leader`).
SPECS = (
    "kill:target=leader", "kill", "isolate:target=leader", "pause", "stop:target=controller", "halves",
    "latency:ms=100", "min-isr",
)  # fmt: skip

#: The number a refusal names: `use --duration 35 or more`.
NEEDED = re.compile(r"use --duration ([0-9]+) or more")


@dataclass(frozen=True)
class Settings:
    """What the plan reads, without the rest of a run configuration."""

    nemesis: tuple[str, ...] = ("kill:target=leader", "isolate:target=leader")
    schedule: str = "fixed"
    seed: int = 0
    duration: float = 60.0
    fault_duration: float = 15.0
    fault_duration_max: float | None = None
    fault_interval: float = 10.0
    fault_interval_max: float | None = None
    fault_overlap: float = 0.0
    without: tuple[str, ...] = ()


@st.composite
def nemesis_settings(draw: st.DrawFn) -> dict[str, object]:
    """Any nemesis part of a configuration the other checks accept: the plan alone decides."""

    def at_least(low: float) -> float | None:
        return draw(st.none() | st.floats(0, 30).map(lambda extra: round(low + extra, 3)))

    fault_interval = draw(st.floats(0, 30).map(lambda s: round(s, 3)))
    # Faults of a second or more: shorter ones only make plans longer to list, not different in kind.
    fault_duration = draw(st.floats(1, 40).map(lambda s: round(s, 3)))
    return {
        "nemesis": ",".join(draw(st.lists(st.sampled_from(SPECS), min_size=1, max_size=5))),
        "schedule": draw(st.sampled_from(["fixed", "random"])),
        "seed": draw(st.integers(0, 2**32)),
        "duration": draw(st.floats(0.5, 400).map(lambda s: round(s, 3)) | st.integers(1, 400)),
        "fault_interval": fault_interval,
        "fault_interval_max": at_least(fault_interval),
        "fault_duration": fault_duration,
        "fault_duration_max": at_least(fault_duration),
    }


def covers_every_request(nemesis: tuple[str, ...], planned: list[schedule.PlannedFault]) -> bool:
    """Each requested fault (however it is spelled) is planned at least as often as asked."""
    wanted = Counter(parse_spec(text) for text in nemesis)
    got = Counter(parse_spec(p.fault) for p in planned)
    return all(got[spec] >= count for spec, count in wanted.items())


@settings(max_examples=400, deadline=None)
@given(nemesis_settings())
def test_every_requested_fault_is_planned_or_the_run_is_refused_with_a_duration_that_fits(
    values: dict[str, object],
) -> None:
    try:
        config = load_config(**values)
    except ConfigError as refused:
        event("refused")
        message = str(refused)
        assert "requested faults fit in --duration" in message, message
        found = NEEDED.search(message)
        assert found, message
        needed = int(found.group(1))
        fitting = load_config(**{**values, "duration": needed})
        assert covers_every_request(fitting.nemesis, schedule.plan(fitting))
        if needed > 1:  # the least such duration: a second less is refused again
            with pytest.raises(ConfigError, match="requested faults fit"):
                load_config(**{**values, "duration": needed - 1})
        return
    event("accepted")
    assert covers_every_request(config.nemesis, schedule.plan(config))


@settings(max_examples=200, deadline=None)
@given(nemesis_settings(), st.floats(0, 400))
def test_duration_only_decides_where_the_plan_stops(values: dict[str, object], longer_by: float) -> None:
    """The draws never look at `duration`: a longer run plans the same faults, then more. This is what
    makes the duration a refusal names exact."""
    short = Settings(**{**values, "nemesis": tuple(str(values["nemesis"]).split(","))})  # type: ignore[arg-type]
    long = replace(short, duration=short.duration + longer_by)
    assert plan(long)[: len(plan(short))] == plan(short)
    assert plan(short) == list(islice(fault_sequence(short), len(plan(short))))


@settings(max_examples=200, deadline=None)
@given(nemesis_settings())
def test_both_schedules_begin_with_every_requested_fault_once(values: dict[str, object]) -> None:
    nemesis = tuple(str(values["nemesis"]).split(","))
    settings_ = Settings(**{**values, "nemesis": nemesis})  # type: ignore[arg-type]
    first_round = [p.fault for p in islice(fault_sequence(settings_), len(nemesis))]
    assert Counter(first_round) == Counter(nemesis)


def test_a_random_schedule_draws_freely_after_its_first_round() -> None:
    requested = ("kill", "pause", "isolate")
    random_run = Settings(nemesis=requested, schedule="random", duration=2000, fault_interval=1)
    planned = [p.fault for p in plan(random_run)]
    later = planned[len(requested) :]
    assert len(later) > 50
    assert any(a == b for a, b in pairwise(later)), "repeats are allowed"
    fixed = [p.fault for p in plan(replace(random_run, schedule="fixed"))]
    assert fixed[: len(requested)] == planned[: len(requested)], "both begin with the seeded order"
    assert fixed != planned


def test_the_plan_of_a_seed_does_not_change_across_versions() -> None:
    """`schedule.json` of an old run must stay reproducible: the fixed schedule draws as it always did."""
    assert [(p.key, p.fault, p.at, p.duration) for p in plan(Settings())] == [
        ("kill#1", "kill:target=leader", 10.0, 15.0),
        ("isolate#2", "isolate:target=leader", 35.0, 15.0),
    ]
    drawn = Settings(nemesis=("kill", "pause"), seed=5, duration=120, fault_duration_max=20,
                     fault_interval_max=12)  # fmt: skip
    assert [(p.fault, p.at, p.duration) for p in plan(drawn)] == [
        ("kill", 11.484, 18.976),
        ("pause", 42.345, 18.699),
        ("kill", pytest.approx(72.889), 15.145),
    ]


def test_the_tail_is_the_longer_of_ten_seconds_and_one_quiet_period() -> None:
    assert post_fault_tail(Settings(fault_interval=3)) == 10
    assert post_fault_tail(Settings(fault_interval=25)) == 25


def test_a_shortfall_counts_what_fits_and_adds_up_to_the_least_duration() -> None:
    missing = shortfall(Settings(duration=50))  # kill fits (10 + 15 + tail 10), isolate ends at 50
    assert missing is not None
    assert (missing.requested, missing.planned) == (2, 1)
    assert (missing.quiet_s, missing.faults_s, missing.tail_s, missing.needed_s) == (20, 30, 10, 60)
    assert shortfall(Settings(duration=60)) is None
    assert shortfall(Settings(nemesis=(), duration=1)) is None


def test_the_refusal_names_the_durations_the_flags_and_what_it_adds_up_to() -> None:
    with pytest.raises(ConfigError) as one:
        load_config(nemesis="isolate:target=leader", duration=30)
    assert (
        "nemesis: 0 of 1 requested faults fit in --duration 30 (first quiet period 10s + fault 15s + tail "
        "10s after the last fault); use --duration 35 or more, or shorten --fault-interval or "
        "--fault-duration" in str(one.value)
    )
    with pytest.raises(ConfigError) as two:
        load_config(nemesis="kill:target=leader,pause", duration=40, fault_duration_max=20)
    assert "1 of 2 requested faults fit in --duration 40 (2 quiet periods 20s + 2 faults" in str(two.value)
    assert "--fault-duration/--fault-duration-max" in str(two.value)
    assert "or request fewer faults in --nemesis" in str(two.value)


def test_no_fault_asked_is_never_refused() -> None:
    for nemesis in ("none", ()):  # "" is refused: write none for no faults
        config = load_config(nemesis=nemesis, duration=1)
        assert config.nemesis == () and schedule.plan(config) == []


def test_a_scenario_run_is_validated_without_the_plan_and_cannot_be_run_as_a_plan() -> None:
    """A crafted scenario drives its own faults: its short duration is no reason to refuse it. The
    configuration it was validated as remembers that, so it cannot run as a plan of no faults."""
    values = {"nemesis": "kill:target=leader,isolate:target=leader", "duration": 30}
    with pytest.raises(ConfigError, match="use --duration 60 or more"):
        load_config(**values)
    config = load_config(**values, for_scenario=True)
    assert config.for_scenario and not load_config(nemesis="none").for_scenario
    with pytest.raises(ConfigError, match="validated for a crafted scenario"):
        schedule.plan(config)
    with pytest.raises(ConfigError, match="replication_factor"):  # everything else is still checked
        load_config(**values, replication_factor=5, for_scenario=True)


def test_left_out_the_duration_is_the_least_that_fits_the_first_round_and_given_it_is_held_to() -> None:
    """The default 60 s is no choice of the user's: a nemesis that needs longer lasts what it needs, the
    exact least duration a refusal would have named; a --duration given is a promise, and is refused."""
    grown = load_config(nemesis="mix:kinds=kill,isolate,reassign,clock", seed=1)
    assert grown.duration == 110.0
    planned = {item.fault.split(":")[0] for item in schedule.plan(grown)}
    assert planned == {"kill", "isolate", "reassign", "clock"}, planned
    assert load_config(nemesis="kill", seed=1).duration == 60.0
    with pytest.raises(ConfigError, match=r"2 of 4 requested faults fit in --duration 60 .* --duration 110"):
        load_config(nemesis="mix:kinds=kill,isolate,reassign,clock", seed=1, duration=60)
