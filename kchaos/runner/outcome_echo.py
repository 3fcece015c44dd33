"""What the terminal shows of a checked run, and the exit status its verdict calls for.

`kchaos run`, `kchaos check`, `kchaos import-verifiable` and the spark-submit entry all end this way, so
one run reads the same whichever way it was judged.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from kchaos.checkers.rules.anomaly_names import LOST_COMMITTED
from kchaos.checkers.rules.verdict_names import UNCHECKED, VIOLATION, verdict_colour
from kchaos.model.terminal_text import printable
from kchaos.runner.failures import EXIT_HARNESS_ERROR, EXIT_VIOLATION

if TYPE_CHECKING:  # kchaos.runner.run loads the whole harness; `kchaos --help` should not wait for it
    from kchaos.runner.outcome import RunOutcome


def echo_outcome(outcome: RunOutcome) -> int:
    """Prints where the run is, what it found and what that rests on; returns the exit code its verdict
    calls for (2 for `unchecked`: the run could not test what was asked, which is not a pass).

    Only what matters to the person at the terminal: each anomaly found or not judged for a reason they
    can act on, by rule id (the rule's text is in the report), and those that do not apply to what the
    run did in one line."""
    summary = outcome.results.get("summary", {})
    click.echo(printable(f"run directory: {outcome.run_dir}"))
    click.echo(printable(f"report:        {outcome.report}"))
    click.echo(printable(f"acknowledged writes: {outcome.acknowledged()}, {outcome.lost_text()}"))
    if "txn_records_acknowledged" in summary:
        lost = f"{outcome.shown_count(LOST_COMMITTED)} ({outcome.verdict_of(LOST_COMMITTED)})"
        click.echo(
            f"records acknowledged in transactions: {summary['txn_records_acknowledged']}, "
            f"lost committed: {lost}"
        )
    for name, anomaly in {**outcome.occurred(), **outcome.unchecked()}.items():
        click.echo(printable(f"  {outcome.judged(name, anomaly)}"))
    inapplicable = outcome.not_applicable_line()
    if inapplicable:
        click.echo(printable(f"  {inapplicable}"))
    for line in outcome.run_lines():
        click.secho(
            printable(line), fg="yellow" if line.startswith(("partial", "the run acknowledged")) else None
        )
    click.secho(printable(outcome.verdict_line()), fg=verdict_colour(outcome.verdict).terminal, bold=True)
    if outcome.verdict == VIOLATION:
        return EXIT_VIOLATION
    return EXIT_HARNESS_ERROR if outcome.verdict == UNCHECKED else 0
