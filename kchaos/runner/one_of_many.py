"""One run of several that a command makes one after another (a hunt's seeds, a shrink's replays): run and
judged, its progress labelled with its place, or, when the harness failed, said so and marked
`harness-failed`, so the command goes on with the next. A Ctrl-C is the command's to handle.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from kchaos.model.config import RunConfig
from kchaos.model.progress import labelled
from kchaos.runner.failures import working_in
from kchaos.runner.progress_echo import ProgressEcho

if TYPE_CHECKING:
    from kchaos.runner.replay import Replay

#: The verdict column of a run the harness could not complete (no verdict: a failure, not a pass).
HARNESS_FAILED = "harness-failed"


def run_judged(config: RunConfig, label: str, replay: Replay | None = None) -> tuple[str, str]:
    """Runs `config` (replaying `replay` when given); its verdict and what it acknowledged, lost and found
    (`RunOutcome.counts_text`), or `HARNESS_FAILED` and nothing when the harness failed (the run's own
    harness.log holds the traceback: execute logs it)."""
    from kchaos.runner import run as run_module  # the harness: loaded once a run is made

    working_in(config.run_dir)
    try:
        with ProgressEcho() as shown:  # cleared before the caller prints the run's line
            outcome = run_module.execute(
                config, progress=lambda message: shown(labelled(label, message)), replay=replay
            )
    except Exception as exc:  # not a Ctrl-C (a BaseException): that is the command's to handle
        click.secho(f"* {label}: the harness failed ({type(exc).__name__}: {exc}); going on", fg="red")
        return HARNESS_FAILED, ""
    return outcome.verdict, outcome.counts_text()
