"""`kchaos hunt --shrink RUN_DIR`, on the command line: refuses what cannot be shrunk before any container
starts, runs the replays the search asks for (`kchaos.runner.shrink`), a line as each ends, and prints the
fewest faults that still violate, their hit rate and the command that replays them.
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import Any

import click

from kchaos.model.config import RUN_ID, ConfigError
from kchaos.runner.failures import (
    EXIT_VIOLATION,
    fail,
    require_engine,
    require_java,
    require_runs_dir,
)
from kchaos.runner.one_of_many import run_judged
from kchaos.runner.replay import SHRINKS, Replay, ReplayRefused, read_replay, replay_config
from kchaos.runner.run_command import given_flags
from kchaos.runner.shrink import (
    Shrinker,
    ShrinkRefused,
    Shrunk,
    original_verdict,
    planned_keys,
)


def shrink_run(ctx: click.Context, source: Path, repeat: int, values: dict[str, Any], program: str) -> None:
    """Shrinks the run in `source`; `values` are the run flags given beside `--shrink` (each replay takes
    them as `kchaos run --replay` does, refusing those that would change the plan); `program` is how the
    printed replay names kchaos."""
    given = given_flags(ctx, values)
    base = str(given.pop("run_id", f"{source.name[:80]}-shrink"))
    if not RUN_ID.fullmatch(base):
        fail(
            f"--run-id {base!r}: names the shrink's replays (<id>-1, ...); use letters, digits, '.', '_', '-'"
        )
    try:
        original_verdict(source)
        planned = planned_keys(source)
        original, replay = read_replay(source)
        first = replay_config(original, {**given, "run_id": f"{base}-1"}, replay)
    except (ShrinkRefused, ReplayRefused, ConfigError) as exc:
        fail(str(exc))
    if first.run_dir.exists():
        fail(
            f"{first.run_dir} already exists (an earlier shrink?); name this one with --run-id, or remove it"
        )
    require_runs_dir(first.runs_dir)
    require_java(first.spark_url)
    require_engine()
    already = tuple(original.get(SHRINKS) or ())
    shrinker = Shrinker(planned, tuple(replay.pins), already, repeat)
    kept = shrinker.result.kept
    click.echo(f"* shrink: {len(kept)} fault(s) that started in {source}: {' '.join(kept)}")
    left_out = [key for key in shrinker.result.without if key not in already]
    if left_out:
        click.echo(f"  left out at once, as they never started: {' '.join(left_out)}")

    def replayed(without: tuple[str, ...], run_id: str) -> str:
        return _replay(original, given, replay, without, run_id)

    result = shrinker.run(replayed, lambda n: f"{base}-{n}")
    _summary(source, result, program)
    sys.exit(EXIT_VIOLATION if result.final is not None and result.final.violates else 0)


def _replay(
    original: dict[str, Any], given: dict[str, Any], replay: Replay, without: tuple[str, ...], run_id: str
) -> str:
    """One replay without the faults `without`; its verdict, printed with what it left out."""
    config = replay_config(original, {**given, SHRINKS: without, "run_id": run_id}, replay)
    verdict, _ = run_judged(config, run_id, replay)
    click.echo(f"  {run_id}  without {','.join(without) or '-'}  {verdict}")
    return verdict


def _summary(source: Path, result: Shrunk, program: str) -> None:
    """Each candidate's outcome, then the fewest faults that violate, their hit rate and replay."""
    click.echo("")
    click.echo(f"shrink of {source}:")
    for trial in result.trials:
        dropped = trial.without[-1]
        outcome = "still violates: left out" if trial.violates else "no violation: kept"
        click.echo(f"  without {dropped}: {trial.rate()} replays violated, {outcome}")
    final = result.final
    assert final is not None
    click.echo(
        f"smallest schedule: {' '.join(result.kept)} ({len(result.kept)} of {len(result.planned)} faults); "
        f"{final.rate()} replays of it violated"
    )
    line = [program, "run", "--replay", str(source)]
    if result.without:
        line += [f"--{SHRINKS}", ",".join(result.without)]
    click.echo(f"replay it with:\n  {shlex.join(line)}")
    if not final.violates:
        click.echo(f"  (it did not violate again in {len(final.verdicts)} replays: the race is narrow)")
