"""A `--duration` the default faults do not fit is met by fitting them, not refused: the first thing a new
user types (`kchaos run --duration 30`) runs, says what it changed, and writes for what it said. What the
user named is never changed; such a run is refused with the least duration that fits."""

from __future__ import annotations

import pytest

from kchaos.model.config import ConfigError, load_config
from kchaos.model.fault_plan import plan, post_fault_tail
from kchaos.model.plan_fit import MIN_FITTED_INTERVAL_S
from kchaos.runner.run_steps import planned_faults


def test_a_30_second_default_run_keeps_the_kill_of_the_leader_and_fits_it_with_its_tail() -> None:
    config = load_config(duration=30)
    assert config.nemesis == ("kill:target=leader",)
    assert config.fault_interval == MIN_FITTED_INTERVAL_S
    planned = plan(config)
    assert [p.fault for p in planned] == ["kill:target=leader"]
    assert planned[-1].end + post_fault_tail(config) <= 30
    assert config.fitted == "fitted to --duration 30: 5s apart instead of 10s; isolate:target=leader left out"
    assert config.to_json_dict()["fitted"] == config.fitted


def test_a_duration_both_default_faults_fit_in_at_a_shorter_interval_keeps_both() -> None:
    config = load_config(duration=50)
    assert config.nemesis == ("kill:target=leader", "isolate:target=leader")
    assert len(plan(config)) == 2
    assert config.fitted == "fitted to --duration 50: 5s apart instead of 10s"


def test_the_defaults_that_fit_are_left_alone() -> None:
    for values in ({}, {"duration": 60}):
        config = load_config(**values)
        assert (config.duration, config.fault_interval, config.fitted) == (60, 10, None)
        assert "fitted" not in config.to_json_dict()


def test_faults_the_user_named_are_never_cut_nor_spaced_closer() -> None:
    with pytest.raises(ConfigError, match=r"1 of 2 requested faults .* use --duration 60 or more"):
        load_config(duration=50, nemesis="kill:target=leader,isolate:target=leader")


def test_an_interval_the_user_named_is_never_shortened() -> None:
    with pytest.raises(ConfigError, match=r"use --duration 60 or more") as refused:
        load_config(duration=30, fault_interval=10)
    assert "--fault-interval" in str(refused.value)


def test_below_what_one_fitted_fault_needs_the_run_is_refused_naming_the_least_duration() -> None:
    with pytest.raises(ConfigError) as refused:
        load_config(duration=20)
    text = str(refused.value)
    assert "use --duration 30 or more" in text
    assert "default faults fitted as far as they go: kill:target=leader, 5s apart" in text


def test_the_start_line_names_each_fault_s_time_what_was_fitted_and_when_it_writes_longer() -> None:
    config = load_config(duration=30)
    line = planned_faults(plan(config), config.fitted)
    assert line.startswith("1 fault: kill#1 at +5s for 15s (fitted to --duration 30: ")
    assert line.endswith("; longer only if the last fault holds past its plan, until 5s after it")
    assert planned_faults([], None) == "0 faults: none"
