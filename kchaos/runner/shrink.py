"""`kchaos hunt --shrink RUN_DIR`: the fewest faults of a violating run's schedule that still violate.

A hunt that finds a violation hands over a schedule of many faults, most of which did nothing to it.
Shrinking replays the run (`kchaos run --replay`: its settings, its topics' placement, each fault on the
nodes it hit) with faults left out (`--without`), one at a time, keeping each removal after which the run
still violates, until no single fault can go. Runs are not deterministic, so a candidate is tried up to
`repeat` times and kept at its first violation; the schedule left is then replayed `repeat` times more for
its hit rate. A fault that never started in the original (skipped, or fired on a state that never came)
is left out at once: it cannot have mattered.

The search is the pure `Shrinker`, over a function that runs one replay and answers its verdict, so the
order of removals and what is kept are tested without a cluster.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from kchaos.checkers.rules.verdict_names import VIOLATION
from kchaos.model.run_files import RunDir

#: Replays per candidate, and for the final hit rate, unless `--repeat` says otherwise.
DEFAULT_REPEAT = 3

#: Runs a replay of the original without the given fault keys, named `run_id`; answers its verdict.
Replayer = Callable[[tuple[str, ...], str], str]


class ShrinkRefused(ValueError):
    """A run that cannot be shrunk; the message names why and the fix."""


@dataclass(frozen=True)
class Trial:
    """One candidate: the faults left out, and the verdict of each replay of it, in order."""

    without: tuple[str, ...]
    verdicts: tuple[str, ...]

    @property
    def hits(self) -> int:
        return sum(verdict == VIOLATION for verdict in self.verdicts)

    @property
    def violates(self) -> bool:
        return self.hits > 0

    def rate(self) -> str:
        return f"{self.hits} of {len(self.verdicts)}"


@dataclass
class Shrunk:
    """What a shrink found: the faults kept and left out, each trial in order, and the final hit rate."""

    planned: tuple[str, ...]
    kept: list[str]
    without: tuple[str, ...]
    trials: list[Trial] = field(default_factory=list)
    final: Trial | None = None


class Shrinker:
    """Leaves out one fault at a time, keeping each removal after which a replay still violates."""

    def __init__(
        self, planned: Sequence[str], started: Sequence[str], already_without: Sequence[str], repeat: int
    ) -> None:
        self.repeat = repeat
        absent = tuple(already_without) + tuple(
            key for key in planned if key not in started and key not in already_without
        )
        self.result = Shrunk(tuple(planned), [key for key in planned if key not in absent], absent)
        self._count = 0

    def run(self, replay: Replayer, name: Callable[[int], str]) -> Shrunk:
        """Passes over the kept faults, in plan order, until a pass removes none (a single fault is never
        removed: a run without faults is another finding), then measures the schedule left."""
        result = self.result
        changed = True
        while changed and len(result.kept) > 1:
            changed = False
            for key in list(result.kept):
                if len(result.kept) == 1:
                    break
                trial = self._try((*result.without, key), replay, name, stop_at_hit=True)
                result.trials.append(trial)
                if trial.violates:
                    result.kept.remove(key)
                    result.without = trial.without
                    changed = True
        result.final = self._try(result.without, replay, name, stop_at_hit=False)
        return result

    def _try(
        self, without: tuple[str, ...], replay: Replayer, name: Callable[[int], str], stop_at_hit: bool
    ) -> Trial:
        verdicts: list[str] = []
        for _ in range(self.repeat):
            self._count += 1
            verdicts.append(replay(without, name(self._count)))
            if stop_at_hit and verdicts[-1] == VIOLATION:
                break
        return Trial(without, tuple(verdicts))


def planned_keys(run_dir: Path) -> tuple[str, ...]:
    """The fault keys of the run's plan, as its `schedule.json` lists them (`without` ones are gone)."""
    files = RunDir(run_dir)
    try:
        planned = json.loads(files.schedule.read_text(encoding="utf-8"))
        return tuple(str(item["key"]) for item in planned)
    except (OSError, ValueError, TypeError, KeyError) as exc:
        raise ShrinkRefused(
            f"--shrink {run_dir}: its schedule.json cannot be read ({exc}); shrink a run kchaos made"
        ) from None


def original_verdict(run_dir: Path) -> str:
    """The verdict the run's check wrote; a run that was never checked (or not to a violation) is refused,
    as there is nothing to keep violating."""
    try:
        verdict = json.loads(RunDir(run_dir).results.read_text(encoding="utf-8")).get("verdict")
    except (OSError, ValueError, AttributeError) as exc:
        raise ShrinkRefused(
            f"--shrink {run_dir}: its results.json cannot be read ({exc}); check the run first "
            "(kchaos check), then shrink it if it violates"
        ) from None
    if verdict != VIOLATION:
        raise ShrinkRefused(
            f"--shrink {run_dir}: its verdict is {verdict}, not {VIOLATION}; shrink a run that violates"
        )
    return str(verdict)
