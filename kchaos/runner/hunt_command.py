"""`kchaos hunt`: one run again and again under new seeds, until a violation or the last run.

A fixed nemesis tests the schedule someone wrote; with a mix (`--nemesis mix:kinds=kill,isolate,pause`)
every seed draws other faults, other targets, other timings, so repeating a run with seed after seed visits
combinations nobody wrote down. What a hunt finds is only worth something if it can be run again: every run
is one `kchaos run` with its own seed, and the hunt ends by printing, for each run, the one command that
replays it, `kchaos run --replay <run dir>` (`kchaos.runner.replay`): the same settings and seed, so the
very same `schedule.json`, the topics' replicas placed as they were, and each fault on the nodes it hit.
The same seed alone would plan the same faults but aim them anew: a `followers` target resolved against
another placement hits other nodes.

Every run's configuration (and so its plan) is validated before the first cluster starts, as `kchaos
matrix` does; runs go one after another in this process, sharing one Spark session for their checks.
"""

from __future__ import annotations

import os
import secrets
import shlex
import shutil
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click
from click.core import ParameterSource

from kchaos.checkers.rules.verdict_names import VIOLATION
from kchaos.model.config import RUN_ID, ConfigError, RunConfig, load_config
from kchaos.model.fault_plan import plan
from kchaos.model.matrix_time import CONFIRM_ABOVE, RUN_OVERHEAD_S, duration_text
from kchaos.runner.config_options import ASCII_INT, run_options
from kchaos.runner.failures import (
    EXIT_HARNESS_ERROR,
    EXIT_VIOLATION,
    fail,
    require_engine,
    require_java,
    require_runs_dir,
)
from kchaos.runner.one_of_many import run_judged
from kchaos.runner.run_command import replay_of, run, run_values
from kchaos.runner.shrink import DEFAULT_REPEAT
from kchaos.runner.shrink_command import shrink_run

#: What `--until` can stop at.
UNTIL_VIOLATION = "violation"
#: The command's name, installed as a console script (the replay line's program when it is found on PATH).
PROGRAM = "kchaos"
#: The most runs a hunt takes, even with --yes: a week of default runs, validated up front in seconds.
#: `--runs 1000000000` built a billion seeds and died of MemoryError; a hunt that long is a typo.
MAX_RUNS = 10_000
#: The largest seed a hunt draws when none is given (any int is a seed; this keeps them short to type).
SEED_BOUND = 2**31

HELP = """Repeat `kchaos run` with seed after seed, one run directory each, and print the command that
replays each run (`kchaos run --replay <run dir>`: its settings and seed, its topics' placement, and its
faults on the nodes they hit).

With --seed S the runs have seeds S, S+1, ...; without it, fresh random ones (printed). --run-id names the
hunt: its runs are <id>-1-seed<S>, <id>-2-seed<S+1>, ... (default: hunt-<UTC time>). Takes every `kchaos
run` option; `--nemesis mix:kinds=kill,isolate,pause` makes each seed draw its own faults. A table row (run
id, seed, planned faults, verdict) is printed as each run ends; then one replay command per run (with
--until violation: the violating run's). Every run is validated before the first container starts. Exit
status as `kchaos matrix`: 1 if any run has a violation, 2 if the harness could not complete a run or a run
could not be judged (unchecked), else 0.
"""


@dataclass(frozen=True)
class HuntRun:
    """One run of the hunt: its configuration, validated, and the faults its seed plans."""

    config: RunConfig
    faults: tuple[str, ...]

    @property
    def faults_text(self) -> str:
        return " ".join(self.faults) or "none"


def hunt_seeds(runs: int, seed: int | None) -> list[int]:
    """S, S+1, ... for a given seed; else fresh random seeds, one per run."""
    if seed is not None:
        return [seed + n for n in range(runs)]
    return [secrets.randbelow(SEED_BOUND) for _ in range(runs)]


def hunt_run_ids(base: str, seeds: Sequence[int]) -> list[str]:
    """`<base>-01-seed7`, ...: numbered in order, the seed readable in the directory listing."""
    width = len(str(len(seeds)))
    return [f"{base}-{n:0{width}d}-seed{seed}" for n, seed in enumerate(seeds, 1)]


def program_name(argv0: str, cwd: Path, which: Callable[[str], str | None] = shutil.which) -> str:
    """How to write kchaos in a printed command so it runs as printed from `cwd`, given how it was invoked
    (`argv0`, `sys.argv[0]`): a path relative to `cwd` when it is under it (`.venv/bin/kchaos` in a clone,
    as the README runs it), else `kchaos` when that is what PATH finds, else its absolute path."""
    if os.sep not in argv0 and not (cwd / argv0).exists():
        return PROGRAM  # found on PATH by its name
    path = Path(os.path.abspath(cwd / argv0))
    if path.is_relative_to(cwd):
        relative = os.path.relpath(path, cwd)
        return relative if os.sep in relative else f".{os.sep}{relative}"
    found = which(PROGRAM)
    if found is not None and path.exists() and Path(found).exists() and Path(found).samefile(path):
        return PROGRAM
    return str(path)


def replay_args(run_dir: Path) -> list[str]:
    """The arguments of the `kchaos run` that replays the run in `run_dir`."""
    return ["run", "--replay", str(run_dir)]


def replay_line(run_dir: Path, program: str = PROGRAM) -> str:
    """The replay as one shell command line, starting with `program` (`program_name`)."""
    return shlex.join([program, *replay_args(run_dir)])


def replay_config(command: str) -> RunConfig:
    """The configuration a printed `kchaos run ...` command would run, read by `kchaos run`'s own parser
    (no cluster), a replay's from the run directory it names: a replay can be compared with the run it
    replays. Raises `ReplayRefused` or `ConfigError` as the command would refuse it."""
    program, name, *args = shlex.split(command)
    if Path(program).name != PROGRAM or name != "run":
        raise ValueError(f"not a {PROGRAM} run command: {command!r}")
    ctx = run.make_context("run", args)
    params = dict(ctx.params)
    broker_config = params.pop("broker_config")
    topic_config = params.pop("topic_config")
    run_id = params.pop("run_id")
    source = params.pop("replay")
    with ctx:
        values = run_values(ctx, broker_config, topic_config, run_id, params)
        return load_config(**values) if source is None else replay_of(ctx, source, values)[0]


@click.command(help=HELP)
@click.option(
    "--runs",
    "runs",
    type=ASCII_INT,
    default=None,
    help=f"How many runs, from 1 to {MAX_RUNS}, more than {CONFIRM_ABOVE} only with --yes (fewer when "
    "--until stops the hunt first). Required unless --shrink.",
)
@click.option(
    "--shrink",
    type=click.Path(path_type=Path),
    default=None,
    metavar="RUN_DIR",
    help="Instead of hunting: replay the violating run in RUN_DIR with its faults left out one at a time "
    "(kchaos run --replay RUN_DIR --without ...), keep each removal that still violates, and print the "
    "fewest faults that do, their hit rate and the command that replays them.",
)
@click.option(
    "--repeat",
    type=click.IntRange(1, 20),
    default=DEFAULT_REPEAT,
    show_default=True,
    help="With --shrink: replays of each candidate (kept at its first violation), and of the schedule left.",
)
@click.option(
    "--yes",
    "-y",
    is_flag=True,
    help=f"Start more than {CONFIRM_ABOVE} runs; without it, such a hunt is refused with its estimated time.",
)
@click.option(
    "--until",
    type=click.Choice([UNTIL_VIOLATION]),
    default=None,
    help="Stop after the first run whose verdict is a violation.",
)
@run_options
def hunt(
    runs: int | None,
    shrink: Path | None,
    repeat: int,
    yes: bool,
    until: str | None,
    broker_config: tuple[str, ...],
    topic_config: tuple[str, ...],
    run_id: str | None,
    **options: Any,
) -> None:
    """`kchaos hunt`; its help is `HELP`."""
    ctx = click.get_current_context()
    if shrink is not None:
        if runs is not None or until is not None:
            fail("--shrink replays one run: leave --runs and --until out")
        values = run_values(ctx, broker_config, topic_config, run_id, options)
        shrink_run(ctx, shrink, repeat, values, program_name(sys.argv[0], Path.cwd()))
        return
    if runs is None:
        fail("--runs: how many runs to hunt; give --runs 1 or more (or --shrink RUN_DIR)")
    if runs < 1:
        fail(f"--runs {runs}: a hunt of no runs tests nothing; give --runs 1 or more")
    if runs > MAX_RUNS:  # refused before a seed is drawn: nothing of the size of --runs is built
        fail(f"--runs {runs}: a hunt runs at most {MAX_RUNS} runs; give --runs {MAX_RUNS} or fewer")
    if runs > CONFIRM_ABOVE and not yes:
        estimate = duration_text(runs * (options["duration"] + RUN_OVERHEAD_S))
        fail(
            f"--runs {runs}: estimated {estimate} (each run's --duration plus about {RUN_OVERHEAD_S:.0f} s); "
            f"more than {CONFIRM_ABOVE} runs start only with --yes (or lower --runs)"
        )
    if options.get("scenario"):
        fail(
            "--scenario: a named scenario runs its own fixed steps, so new seeds would not give new faults; "
            "hunt with --nemesis (e.g. mix:kinds=kill,isolate,pause), or replay a scenario with kchaos run"
        )
    seeded = ctx.get_parameter_source("seed") is not ParameterSource.DEFAULT
    seeds = hunt_seeds(runs, options["seed"] if seeded else None)
    base = run_id if run_id is not None else time.strftime("hunt-%Y%m%d-%H%M%S", time.gmtime())
    if not RUN_ID.fullmatch(base):
        fail(
            f"--run-id {base!r}: names the hunt's run directories (<id>-01-seed<S>, ...); use letters, "
            "digits, '.', '_' and '-', starting with a letter or digit, e.g. nightly-hunt"
        )
    values = run_values(ctx, broker_config, topic_config, None, options)
    planned: list[HuntRun] = []
    for seed, name in zip(seeds, hunt_run_ids(base, seeds), strict=True):
        try:
            config = load_config(**{**values, "seed": seed, "run_id": name})
        except ConfigError as exc:
            fail(f"{exc}\n  (the configuration of run {name}, seed {seed})" if runs > 1 else str(exc))
        if config.run_dir.exists():
            fail(
                f"{config.run_dir} already exists (an earlier hunt?); pick another --run-id, or remove that "
                "directory"
            )
        planned.append(HuntRun(config, tuple(p.fault for p in plan(config))))
    require_runs_dir(planned[0].config.runs_dir)
    require_java(planned[0].config.spark_url)
    require_engine()
    seeds_text = (
        f"seeds {seeds[0]} to {seeds[-1]}" if seeded else f"random seeds {', '.join(map(str, seeds))}"
    )
    click.echo(f"* hunt: {runs} run(s) with {seeds_text} into {planned[0].config.runs_dir}")
    table = Table(planned)
    click.echo(table.header())
    verdicts = _hunt(planned, table, until)
    if VIOLATION in verdicts.values():
        sys.exit(EXIT_VIOLATION)
    if any(verdict != "ok" and verdict != "permitted" for verdict in verdicts.values()):
        sys.exit(EXIT_HARNESS_ERROR)
    sys.exit(0)


class Table:
    """The hunt's table: one row per run, its columns as wide as the widest run id, seed and plan."""

    HEADINGS = ("run id", "seed", "planned faults", "verdict")

    def __init__(self, planned: Sequence[HuntRun]) -> None:
        self.widths = [
            max(len(self.HEADINGS[0]), *(len(run.config.run_id) for run in planned)),
            max(len(self.HEADINGS[1]), *(len(str(run.config.seed)) for run in planned)),
            max(len(self.HEADINGS[2]), *(len(run.faults_text) for run in planned)),
        ]

    def row(self, cells: Sequence[str]) -> str:
        first = "  ".join(f"{cell:{width}}" for cell, width in zip(cells, self.widths, strict=False))
        return f"{first}  {cells[-1]}"

    def header(self) -> str:
        return self.row(self.HEADINGS)

    def run_row(self, run: HuntRun, verdict: str, counts: str = "") -> str:
        """The run's row: its verdict, then (a finished run) what it acknowledged, lost and found, as a
        matrix row says it (`RunOutcome.counts_text`)."""
        cells = (run.config.run_id, str(run.config.seed), run.faults_text)
        return self.row((*cells, f"{verdict} ({counts})" if counts else verdict))


def _hunt(planned: Sequence[HuntRun], table: Table, until: str | None) -> dict[str, str]:
    """Runs each planned run in turn, printing its row; returns each finished run's verdict by run id."""
    verdicts: dict[str, str] = {}
    rows: list[str] = []
    done: list[HuntRun] = []
    for number, hunted in enumerate(planned, 1):
        config = hunted.config
        try:
            verdict, counts = run_judged(config, f"[{number}/{len(planned)}] {config.run_id}")
        except KeyboardInterrupt:
            _summary(rows, done, None)
            fail(f"interrupted; cleaned up. Finished runs are kept in {config.runs_dir}")
        verdicts[config.run_id] = verdict
        done.append(hunted)
        rows.append(table.run_row(hunted, verdict, counts))
        click.echo(rows[-1])
        if until == UNTIL_VIOLATION and verdict == VIOLATION:
            _summary(rows, done, hunted)
            return verdicts
    _summary(rows, done, None)
    return verdicts


def _summary(rows: Sequence[str], done: Sequence[HuntRun], found: HuntRun | None) -> None:
    """The table again, whole, and the command that replays each run (only the violating one's when the
    hunt stopped at it), written as kchaos was invoked, so it runs as printed."""
    program = program_name(sys.argv[0], Path.cwd())
    click.echo("")
    click.echo(f"hunt: {len(done)} run(s)")
    for row in rows:
        click.echo(f"  {row}")
    if found is not None:
        click.echo(f"stopped at the first violation; replay {found.config.run_id} with:")
        click.echo(f"  {replay_line(found.config.run_dir, program)}")
        return
    click.echo("replay a run with:")
    for hunted in done:
        click.echo(f"  {hunted.config.run_id}: {replay_line(hunted.config.run_dir, program)}")
