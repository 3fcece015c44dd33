"""`kchaos explain`: tell what happened to a run's violating records, or to one record named by its value.

A verdict says that records were lost; the story says how: when each was sent and acknowledged and by
which leader, the faults and leader changes around it, what every replica holds at its offset, and the
brokers' own log lines about its partition (`kchaos.checkers.story`). Nothing is checked again and no
Spark starts, so it answers in a moment; without --record it reads the examples `kchaos check` wrote."""

from __future__ import annotations

import json
from pathlib import Path

import click

from kchaos.model.run_files import HISTORY_FILES, RESULTS_NAME, RunDir
from kchaos.runner.failures import fail, working_in

#: Stories told without --record when --max-examples is not given.
DEFAULT_EXAMPLES = 5


@click.command()
@click.argument("run_dir", type=click.Path(path_type=Path))
@click.option(
    "--record",
    "value",
    metavar="VALUE",
    help="Explain the record with this value (e.g. producer-1-77), an anomaly or not.",
)
@click.option(
    "--max-examples",
    type=click.IntRange(min=1),
    default=DEFAULT_EXAMPLES,
    show_default=True,
    help="Without --record: how many of the violating records to explain.",
)
def explain(run_dir: Path, value: str | None, max_examples: int) -> None:
    """Tell the story of a run's violating records: their send and acknowledgement, the faults and leader
    changes around them, each replica's record at their offset, and the brokers' log lines about them.

    \b
      kchaos explain runs/<run-id>
      kchaos explain runs/<run-id> --record producer-1-77
    """
    from kchaos.checkers.story import RunEvidence, Subject, tell, violating_records
    from kchaos.model.history import HistoryCorrupt

    files = RunDir(run_dir)
    if not run_dir.is_dir():
        fail(f"{run_dir} is not a directory; name a run directory, e.g. runs/<run-id>")
    if not files.has_history():
        fail(
            f"{run_dir} is not a run directory: no {HISTORY_FILES}; name a run directory, e.g. runs/<run-id>"
        )
    working_in(run_dir)
    if value is None:
        try:
            results = json.loads(files.results.read_text(encoding="utf-8"))
        except FileNotFoundError:
            fail(
                f"{run_dir} has no {RESULTS_NAME}, so no violation is known; "
                f"check it first: kchaos check {run_dir}"
            )
        except ValueError as exc:
            fail(f"{files.results} is not valid JSON ({exc}); rewrite it: kchaos check {run_dir}")
        if not isinstance(results, dict):
            fail(f"{files.results} holds no results object; rewrite it: kchaos check {run_dir}")
        subjects, total, untold = violating_records(results, max_examples)
        if untold:
            click.echo(
                f"{', '.join(untold)}: violated, but no example names a record, and explain tells records' "
                "stories only; see results.json or report.html"
            )
        if not subjects:
            if not untold:
                click.echo(
                    f"verdict {results.get('verdict', 'unknown')}: no violation to explain "
                    f"(explain any record with --record VALUE)"
                )
            return
    else:
        subjects, total = [Subject(value, _anomalies_naming(files, value))], 1
    try:
        evidence = RunEvidence.load(run_dir, [subject.value for subject in subjects])
    except (HistoryCorrupt, OSError) as exc:
        fail(f"{exc}; explain another run directory, or restore its history")
    if value is not None and value not in evidence.record_rows:
        fail(
            f"no record with value {value!r} was sent in {run_dir}; name one the history holds "
            "(a producer's values look like producer-0-44)"
        )
    for number, subject in enumerate(subjects):
        if number:
            click.echo("")
        click.echo("\n".join(tell(evidence, subject)))
    if value is None and total > len(subjects):
        click.echo(f"\n{len(subjects)} of {total} violating records explained; --max-examples N for more")


def _anomalies_naming(files: RunDir, value: str) -> str | None:
    """The anomalies of the run's results.json that name `value`, if it was checked: a record asked for by
    value needs no results, so one that cannot be read names none."""
    from kchaos.checkers.story import anomalies_naming

    try:
        results = json.loads(files.results.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return anomalies_naming(results, value) if isinstance(results, dict) else None
