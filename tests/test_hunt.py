"""`kchaos hunt`: runs under seed after seed, a table as they go, and each run's one replay command.

The runs themselves are stubbed (`kchaos.runner.run.execute`, as tests/test_cli_errors.py does): what is
tested here is the hunt's own promise. Its seeds are the ones asked for, each run is configured as the
options say, it stops where `--until` says, its exit status is `kchaos matrix`'s, bad input is refused
before any run, and the printed replay command (`kchaos run --replay <run dir>`), read by `kchaos run`'s
own parser from the run directory the stub leaves as a run would, is the very same configuration, so it
plans the same `schedule.json`.
"""

from __future__ import annotations

import json
import re
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

import kchaos.harness.engine
import kchaos.runner.hunt_command
import kchaos.runner.run
from kchaos.model.config import ConfigError, RunConfig
from kchaos.model.events import INFO, NEMESIS_PROCESS, START
from kchaos.model.fault_plan import plan
from kchaos.model.fault_record import FaultRecord
from kchaos.model.history import HistoryWriter
from kchaos.model.run_files import RunDir
from kchaos.model.topic_assignment import write_assignment
from kchaos.nemesis.schedule import write_plan
from kchaos.runner.cli import main
from kchaos.runner.hunt_command import PROGRAM, replay_config
from kchaos.runner.outcome import RunOutcome

MIX = "mix:kinds=kill,isolate,pause"
#: The options of a short mix run, as a user types them.
OPTIONS = [
    "--nemesis", MIX, "--schedule", "random", "--duration", "40", "--fault-duration", "3",
    "--fault-interval", "3", "--acks", "1", "--no-idempotence", "--broker-config", "num.io.threads=4",
]  # fmt: skip


class Runs:
    """The stubbed runs: every configuration `execute` was given, and the verdict each seed comes to."""

    def __init__(self, verdicts: dict[int, str] | None = None, failing: tuple[int, ...] = ()) -> None:
        self.configs: list[RunConfig] = []
        self.verdicts = verdicts or {}
        self.failing = failing

    def execute(self, config: RunConfig, **kwargs: Any) -> RunOutcome:
        self.configs.append(config)
        if config.seed in self.failing:
            raise RuntimeError("the cluster never became ready")
        leave_run_dir(config)
        verdict = self.verdicts.get(config.seed, "ok")
        results = {"verdict": verdict, "summary": {}, "anomalies": {}}
        return RunOutcome(config.run_dir, results, config.run_dir / "report.html")


def leave_run_dir(config: RunConfig) -> None:
    """What a run leaves that its replay reads: its config.json as a run resolves it (the image built for
    its release), its topics' assignment, and a history with a fault's start row."""
    files = RunDir(config.run_dir)
    files.path.mkdir(parents=True)
    resolved = {**config.to_json_dict(), "kafka_image": f"kchaos/kafka:{config.kafka_version}"}
    files.config.write_text(json.dumps(resolved), encoding="utf-8")
    write_assignment(files.assignment, {config.topic: {p: (1, 2, 3) for p in range(config.partitions)}})
    history = HistoryWriter(files, config.run_id)
    record = FaultRecord(kind="crash", nodes=(2,), spec="kill:target=random")
    history.record(NEMESIS_PROCESS, INFO, "kill", key="kill#1", value=START, detail=record.to_detail())
    history.finish()


@pytest.fixture
def runs(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Runs:
    """Stubbed runs, in a clone at `tmp_path` whose kchaos is `.venv/bin/kchaos`, as the README runs it."""
    program = tmp_path / ".venv" / "bin" / PROGRAM
    program.parent.mkdir(parents=True)
    program.write_text("#!/bin/sh\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", [str(program), "hunt"])
    stub = Runs()
    monkeypatch.setattr(kchaos.runner.run, "execute", stub.execute)
    monkeypatch.setattr(kchaos.harness.engine, "require_engine", lambda timeout=0.0: None)
    return stub


def hunt(tmp_path: Path, *args: str) -> Result:
    return CliRunner().invoke(main, ["hunt", "--runs-dir", str(tmp_path / "runs"), *args])


def replays(output: str) -> dict[str, str]:
    """Each replay command the hunt printed, by run id."""
    found = {}
    for line in output.splitlines():
        match = re.fullmatch(r"  (\S+): (\S+ run --replay .*)", line)
        if match:
            found[match.group(1)] = match.group(2)
    return found


def test_seeds_follow_the_given_one_and_each_replay_is_the_same_run_with_the_same_plan(
    tmp_path: Path, runs: Runs
) -> None:
    result = hunt(tmp_path, "--runs", "3", "--seed", "41", "--run-id", "h", *OPTIONS)
    assert result.exit_code == 0, result.output
    assert [c.seed for c in runs.configs] == [41, 42, 43]
    assert [c.run_id for c in runs.configs] == ["h-1-seed41", "h-2-seed42", "h-3-seed43"]
    replayed = replays(result.output)
    assert list(replayed) == ["h-1-seed41", "h-2-seed42", "h-3-seed43"]
    for config in runs.configs:
        args = shlex.split(replayed[config.run_id])
        assert args == [".venv/bin/kchaos", "run", "--replay", str(config.run_dir)]
        replay = replay_config(replayed[config.run_id])
        # Everything but the run id (a replay gets a directory of its own, beside the original's) is what
        # the hunt ran ...
        assert replay.model_dump(exclude={"run_id"}) == config.model_dump(exclude={"run_id"})
        assert replay.run_id == f"{config.run_id}-replay"
        # ... so it plans the same schedule.json, fault by concrete fault.
        write_plan(plan(config), tmp_path / "ran.json")
        write_plan(plan(replay), tmp_path / "replayed.json")
        assert (tmp_path / "ran.json").read_text() == (tmp_path / "replayed.json").read_text()
        planned = " ".join(p.fault for p in plan(config))
        row = rf"{config.run_id} +{config.seed} +{re.escape(planned)} +ok"
        assert re.search(row, result.output), result.output  # its table row
    assert runs.configs[0].acks == "1" and runs.configs[0].broker_config == {"num.io.threads": "4"}
    assert len({tuple(p.fault for p in plan(c)) for c in runs.configs}) == 3  # each seed its own faults


def test_without_a_seed_each_run_draws_a_fresh_one_and_prints_it(tmp_path: Path, runs: Runs) -> None:
    result = hunt(tmp_path, "--runs", "2", *OPTIONS)
    assert result.exit_code == 0, result.output
    seeds = [c.seed for c in runs.configs]
    assert len(set(seeds)) == 2 and f"random seeds {seeds[0]}, {seeds[1]}" in result.output
    assert all(c.run_id.startswith("hunt-") and c.run_id.endswith(f"-seed{c.seed}") for c in runs.configs)
    assert [line.split()[-1].rsplit("-seed")[-1] for line in replays(result.output).values()] == [
        str(s) for s in seeds
    ]


def test_until_violation_stops_at_the_first_one_and_replays_it_alone(tmp_path: Path, runs: Runs) -> None:
    runs.verdicts = {11: "violation", 12: "violation"}
    result = hunt(tmp_path, "--runs", "5", "--seed", "10", "--until", "violation", *OPTIONS)
    assert result.exit_code == 1, result.output
    assert [c.seed for c in runs.configs] == [10, 11]
    assert "stopped at the first violation" in result.output
    lines = [line for line in result.output.splitlines() if re.match(r"  \S+ run --replay ", line)]
    assert len(lines) == 1 and lines[0].endswith("-seed11")


def test_exit_status_is_the_matrixs(tmp_path: Path, runs: Runs) -> None:
    runs.verdicts = {2: "violation"}
    assert hunt(tmp_path, "--runs", "3", "--seed", "1", "--run-id", "v", *OPTIONS).exit_code == 1
    runs.verdicts, runs.configs = {1: "unchecked", 2: "permitted"}, []
    assert hunt(tmp_path, "--runs", "2", "--seed", "1", "--run-id", "u", *OPTIONS).exit_code == 2
    # A run the harness could not complete is reported in its row, and the hunt goes on.
    runs.verdicts, runs.failing, runs.configs = {}, (1,), []
    result = hunt(tmp_path, "--runs", "2", "--seed", "1", "--run-id", "f", *OPTIONS)
    assert result.exit_code == 2 and len(runs.configs) == 2
    assert re.search(r"f-1-seed1 .* harness-failed", result.output)


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--runs", "0"], "--runs 0: a hunt of no runs tests nothing; give --runs 1 or more"),
        (["--runs", "2", "--nemesis", "mix:kinds=nope"], "nemesis (--nemesis): mix: unknown fault 'nope'"),
        (["--runs", "2", "--duration", "5", "--nemesis", MIX], "use --duration"),
        (
            ["--runs", "2", "--scenario", "acks-1-leader-isolation"],
            "--scenario: a named scenario runs its own",
        ),
        (["--runs", "2", "--run-id", "../x"], "--run-id '../x': names the hunt's run directories"),
        (
            ["--runs", "101"],
            "--runs 101: estimated 3 h 22 min (each run's --duration plus about 60 s); more than 100 runs "
            "start only with --yes (or lower --runs)",
        ),
        (
            ["--runs", "1000000000", "--yes"],
            "--runs 1000000000: a hunt runs at most 10000 runs; give --runs 10000 or fewer",
        ),
        (["--runs", "\uff13"], "Invalid value for '--runs': '\uff13' holds a character outside ASCII"),
    ],
)
def test_bad_input_is_refused_before_any_run(
    tmp_path: Path, runs: Runs, args: list[str], expected: str
) -> None:
    result = hunt(tmp_path, *args)
    assert result.exit_code == 2 and expected in result.output, result.output
    assert runs.configs == [] and not (tmp_path / "runs").exists()


def test_an_absurd_hunt_is_refused_before_a_seed_is_drawn(
    tmp_path: Path, runs: Runs, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A billion runs died of MemoryError after 19 s: nothing of the size of --runs may be built."""
    monkeypatch.setattr(kchaos.runner.hunt_command, "hunt_seeds", lambda *args: pytest.fail("seeds drawn"))
    result = hunt(tmp_path, "--runs", "1000000000", "--yes", *OPTIONS)
    assert result.exit_code == 2, result.output
    assert runs.configs == []


def test_yes_starts_a_hunt_above_the_bound(tmp_path: Path, runs: Runs) -> None:
    result = hunt(tmp_path, "--runs", "101", "--yes", "--seed", "1", "--run-id", "y", *OPTIONS)
    assert "more than 100 runs" not in result.output
    assert len(runs.configs) == 101, result.output


def test_runs_is_required(tmp_path: Path, runs: Runs) -> None:
    result = hunt(tmp_path, *OPTIONS)
    assert result.exit_code == 2 and "--runs: how many runs to hunt; give --runs 1 or more" in result.output
    assert runs.configs == []


def test_the_help_and_the_fault_list_name_the_mix() -> None:
    assert "mix:kinds=" in CliRunner().invoke(main, ["run", "--help"]).output
    assert "mix:kinds=kill,isolate,pause: alone in --nemesis" in CliRunner().invoke(main, ["faults"]).output
    assert "replays each run" in CliRunner().invoke(main, ["hunt", "--help"]).output


def test_a_command_without_duration_lasts_what_its_mix_needs_and_one_with_it_is_held_to_it() -> None:
    """The flags as the command line gives them (a default --duration is no choice of the user's): the
    mix of the issue's hunt runs 110 s with the default fault times, and --duration 60 given is refused."""
    grown = replay_config(f"{PROGRAM} run --nemesis mix:kinds=kill,isolate,reassign,clock --seed 1")
    assert grown.duration == 110.0
    assert sorted(p.fault.split(":")[0] for p in plan(grown)) == ["clock", "isolate", "kill", "reassign"]
    with pytest.raises(ConfigError, match=r"2 of 4 requested faults fit in --duration 60 .*--duration 110"):
        replay_config(f"{PROGRAM} run --nemesis mix:kinds=kill,isolate,reassign,clock --seed 1 --duration 60")
