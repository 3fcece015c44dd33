"""Shrinking a violating run (`kchaos hunt --shrink`): which faults the search leaves out, against stand-in
replays whose verdict is known from the faults they keep; the refusals before anything starts; and
`--without`, the plan a shrink replays, leaving the other faults where they were.

No cluster: a replay here is a function of the faults left out. A real shrink is measured in the docs.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import kchaos.runner.run
from kchaos.model.config import ConfigError, RunConfig, load_config
from kchaos.model.fault_plan import plan
from kchaos.runner.cli import main
from kchaos.runner.outcome import RunOutcome
from kchaos.runner.replay import Replay
from kchaos.runner.shrink import VIOLATION, Shrinker, ShrinkRefused, original_verdict, planned_keys
from tests.test_replay import Runs, original_run, runs  # noqa: F401 (runs: the fixture)

PLANNED = ("pause#1", "kill#2", "pause#3", "kill#4", "pause#5", "kill#6")


def replays(
    needed: set[str], hits: Callable[[int], bool] = lambda n: True
) -> tuple[list[tuple[str, ...]], Any]:
    """A stand-in replay that violates while every fault of `needed` is kept (and `hits(n)` for its n-th
    run says the race was won); the candidates it was asked, in order."""
    asked: list[tuple[str, ...]] = []

    def replay(without: tuple[str, ...], run_id: str) -> str:
        asked.append(without)
        return VIOLATION if not needed & set(without) and hits(len(asked)) else "ok"

    return asked, replay


def test_the_faults_that_matter_are_kept_and_every_other_left_out() -> None:
    _, replay = replays({"kill#4", "pause#5"})
    result = Shrinker(PLANNED, PLANNED, (), repeat=3).run(replay, lambda n: f"r{n}")
    assert result.kept == ["kill#4", "pause#5"]
    assert set(result.without) == {"pause#1", "kill#2", "pause#3", "kill#6"}
    assert result.final is not None and result.final.rate() == "3 of 3"
    # A removal that still violates is kept at once; one that does not is tried `repeat` times.
    by_fault = {trial.without[-1]: trial.verdicts for trial in result.trials}
    assert by_fault["pause#1"] == (VIOLATION,) and by_fault["kill#4"] == ("ok", "ok", "ok")


def test_faults_that_never_started_are_left_out_without_a_replay() -> None:
    asked, replay = replays({"kill#4"})
    started = ("kill#2", "kill#4")
    result = Shrinker(PLANNED, started, (), repeat=2).run(replay, lambda n: f"r{n}")
    assert result.kept == ["kill#4"]
    assert all("pause#1" in without for without in asked), "never tried with a fault that did not start"
    assert [trial.without[-1] for trial in result.trials] == ["kill#2"]


def test_a_race_lost_once_is_tried_again_and_the_final_rate_counts_every_replay() -> None:
    # Every other replay wins the race: a removal is kept on its second try, and the rate says 2 of 3.
    _, replay = replays({"kill#4"}, hits=lambda n: n % 2 == 0)
    result = Shrinker(("kill#2", "kill#4"), ("kill#2", "kill#4"), (), repeat=3).run(replay, str)
    assert result.kept == ["kill#4"]
    assert result.trials[0].verdicts == ("ok", VIOLATION)
    assert result.final is not None and len(result.final.verdicts) == 3


def test_the_last_fault_is_never_left_out_and_faults_already_out_stay_out() -> None:
    _, replay = replays(set())  # violates whatever is kept: still one fault is left
    result = Shrinker(("kill#2", "kill#4"), ("kill#2", "kill#4"), ("pause#1",), repeat=1).run(replay, str)
    assert len(result.kept) == 1 and result.without[0] == "pause#1"


def write_run(run_dir: Path, verdict: str | None, schedule: object = None) -> Path:
    run_dir.mkdir(parents=True)
    if verdict is not None:
        (run_dir / "results.json").write_text(json.dumps({"verdict": verdict}))
    if schedule is not None:
        (run_dir / "schedule.json").write_text(json.dumps(schedule))
    return run_dir


def test_a_run_that_did_not_violate_or_was_never_checked_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ShrinkRefused, match="its verdict is ok, not violation; shrink a run that violates"):
        original_verdict(write_run(tmp_path / "ok", "ok"))
    with pytest.raises(ShrinkRefused, match=r"results.json cannot be read .*check the run first"):
        original_verdict(write_run(tmp_path / "unchecked", None))
    run = write_run(tmp_path / "v", VIOLATION, [{"key": "kill#1"}, {"key": "pause#2"}])
    assert original_verdict(run) == VIOLATION and planned_keys(run) == ("kill#1", "pause#2")


def test_hunt_shrink_refuses_before_anything_starts(tmp_path: Path) -> None:
    runner = CliRunner()
    ok = write_run(tmp_path / "ok", "ok", [])
    result = runner.invoke(main, ["hunt", "--shrink", str(ok)])
    assert result.exit_code == 2 and "not violation" in result.output
    result = runner.invoke(main, ["hunt", "--shrink", str(ok), "--runs", "3"])
    assert result.exit_code == 2 and "leave --runs and --until out" in result.output
    result = runner.invoke(main, ["hunt"])
    assert result.exit_code == 2 and "--runs: how many runs to hunt" in result.output


def test_without_leaves_faults_out_and_the_rest_where_they_were() -> None:
    values = {"nemesis": "kill,pause", "duration": 120.0}
    whole = plan(load_config(**values))
    shrunk = plan(load_config(**values, without="kill#1,pause#4"))
    assert shrunk == [p for p in whole if p.key not in ("kill#1", "pause#4")]
    with pytest.raises(
        ConfigError, match="without: kill#9 is no fault of this plan, whose faults are kill#1"
    ):
        load_config(**values, without="kill#9")
    with pytest.raises(ConfigError, match="leaves out every planned fault"):
        load_config(**values, without=",".join(p.key for p in whole))


def test_a_replay_without_a_fault_plans_the_rest_and_a_key_it_lacks_is_refused(
    tmp_path: Path,
    runs: Runs,  # noqa: F811 (the fixture imported above)
) -> None:
    original = original_run(tmp_path / "runs")
    result = CliRunner().invoke(main, ["run", "--replay", str(original.run_dir), "--without", "reassign#2"])
    assert result.exit_code == 0, result.output
    [(config, _)] = runs.given
    assert config.without == ("reassign#2",) and [p.key for p in plan(config)] == ["clock#1"]
    result = CliRunner().invoke(main, ["run", "--replay", str(original.run_dir), "--without", "kill#9"])
    assert result.exit_code == 2 and "--without: invalid configuration" in result.output
    assert "kill#9 is no fault of this plan" in result.output


def test_a_shrink_replays_the_run_without_each_fault_and_prints_the_fewest_that_violate(
    tmp_path: Path,
    runs: Runs,  # noqa: F811 (the fixture imported above)
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    original = original_run(tmp_path / "runs")
    write_run_files(original)

    def execute(config: RunConfig, replay: Replay | None = None, **kwargs: Any) -> RunOutcome:
        runs.given.append((config, replay))
        verdict = VIOLATION if "clock#1" not in config.without else "ok"
        return RunOutcome(config.run_dir, {"verdict": verdict, "summary": {}, "anomalies": {}}, Path("r"))

    monkeypatch.setattr(kchaos.runner.run, "execute", execute)
    result = CliRunner().invoke(main, ["hunt", "--shrink", str(original.run_dir), "--repeat", "2"])
    assert result.exit_code == 1, result.output
    assert [config.without for config, _ in runs.given] == [
        ("clock#1",),
        ("clock#1",),
        ("reassign#2",),
        ("reassign#2",),
        ("reassign#2",),
    ]
    assert [config.run_id for config, _ in runs.given] == [f"orig-shrink-{n}" for n in range(1, 6)]
    assert all(replayed is not None and replayed.source == original.run_dir for _, replayed in runs.given)
    assert "without clock#1: 0 of 2 replays violated, no violation: kept" in result.output
    assert "smallest schedule: clock#1 (1 of 2 faults); 2 of 2 replays of it violated" in result.output
    assert f"run --replay {original.run_dir} --without 'reassign#2'" in result.output


def write_run_files(config: RunConfig) -> None:
    """The check's verdict and the plan, as a violating run leaves them."""
    (config.run_dir / "results.json").write_text(json.dumps({"verdict": VIOLATION}))
    (config.run_dir / "schedule.json").write_text(json.dumps([{"key": p.key} for p in plan(config)]))
