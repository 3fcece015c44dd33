"""`kchaos explain`: tell what happened to a run's violations, or to one record, place or transaction.

A verdict says that records were lost; the story says how: when each was sent and acknowledged and by
which leader, the faults and leader changes around it, what every replica holds at its offset, and the
brokers' own log lines about its partition (`kchaos.checkers.stories.record_story`). A replica divergence is
told as the offsets where the replicas differ, what each side holds and who led it (`divergence_story`); a
transaction anomaly as the transaction's rows and what its readers saw (`transaction_story`); a cycle
between read-write transactions as each of its edges and the rows it rests on (`cycle_story`).
Nothing is checked again and no Spark starts, so it answers in a moment; without --record it reads the
examples `kchaos check` wrote."""

from __future__ import annotations

import json
from pathlib import Path

import click

from kchaos.model.run_files import HISTORY_FILES, RESULTS_NAME, RunDir
from kchaos.model.terminal_text import printable
from kchaos.runner.failures import fail

#: Stories told without --record when --max-examples is not given.
DEFAULT_EXAMPLES = 5


@click.command()
@click.argument("run_dir", type=click.Path(path_type=Path))
@click.option(
    "--record",
    "value",
    metavar="ID",
    help="Explain the record with this value (producer-1-77), the place where replicas differ "
    "(kchaos/2/28), the transaction (producer-0-txn-3) or the cycle an example names "
    "(G0:producer-0-txn-117), an anomaly or not.",
)
@click.option(
    "--max-examples",
    type=click.IntRange(min=1),
    default=DEFAULT_EXAMPLES,
    show_default=True,
    help="Without --record: how many of the violations to explain.",
)
def explain(run_dir: Path, value: str | None, max_examples: int) -> None:
    """Tell the story of a run's violations: a record's send and acknowledgement, the faults and leader
    changes around it, each replica's record at its offset, and the brokers' log lines about it; where
    replicas differ, what each side holds and who led it; a transaction's rows and what readers saw; a
    cycle's edges and the rows each rests on.

    \b
      kchaos explain runs/<run-id>
      kchaos explain runs/<run-id> --record producer-1-77
      kchaos explain runs/<run-id> --record kchaos/2/28
      kchaos explain runs/<run-id> --record G0:producer-0-txn-117
    """
    from kchaos.model.history_files import reading_history

    files = RunDir(run_dir)
    if not run_dir.is_dir():
        fail(f"{run_dir} is not a directory; name a run directory, e.g. runs/<run-id>")
    if not files.has_history():
        fail(
            f"{run_dir} is not a run directory: no {HISTORY_FILES}; name a run directory, e.g. runs/<run-id>"
        )
    # No `working_in`: explain only reads the run directory, so a failure's traceback is not written into it,
    # and a crashed run's history is converted into a temporary directory, not into the run.
    with reading_history():
        _explain(run_dir, value, max_examples)


def _explain(run_dir: Path, value: str | None, max_examples: int) -> None:
    """`explain` of a run directory that holds a history."""
    from kchaos.checkers.stories.record_story import Subject
    from kchaos.checkers.stories.teller import Chosen, StorySubject, choose, subject_named, tell_all
    from kchaos.model.history_files import HistoryCorrupt
    from kchaos.model.history_vet import vet_history

    files = RunDir(run_dir)
    try:
        vet_history(run_dir)  # what `kchaos check` refuses, explain refuses in the same words
    except HistoryCorrupt as exc:
        fail(str(exc))
    subjects: list[StorySubject]
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
        chosen = choose(results, max_examples)
        if chosen.untold:
            click.echo(
                printable(
                    f"{', '.join(chosen.untold)}: violated, but no example names a record, a place or a "
                    "transaction, which is what explain tells the story of; see results.json or report.html"
                )
            )
        if not chosen.subjects:
            if not chosen.untold:
                click.echo(
                    printable(
                        f"verdict {results.get('verdict', 'unknown')}: no violation to explain "
                        f"(explain any record with --record VALUE)"
                    )
                )
            return
        subjects = chosen.subjects
    else:
        try:
            subjects = [subject_named(run_dir, value, _results(files))]
        except (HistoryCorrupt, OSError) as exc:
            fail(f"{exc}; explain another run directory, or restore its history")
        chosen = Chosen(subjects, 1, [])
    try:
        told = tell_all(run_dir, subjects)
    except (HistoryCorrupt, OSError) as exc:
        fail(f"{exc}; explain another run directory, or restore its history")
    if value is not None and isinstance(subjects[0], Subject) and _never_sent(told[0][1]):
        fail(
            f"no record with value {value!r} was sent in {run_dir}; name one the history holds "
            "(a producer's values look like producer-0-44), a transaction's id (producer-0-txn-3) or "
            "a place where replicas differ (kchaos/2/28)"
        )
    for number, (_, story) in enumerate(told):
        if number:
            click.echo("")
        click.echo("\n".join(printable(line) for line in story))
    if value is None and chosen.total > len(told):
        click.echo(f"\n{len(told)} of {chosen.total} violations explained; --max-examples N for more")


def _never_sent(story: list[str]) -> bool:
    """Whether a record's story says the history holds no send of it
    (`kchaos.checkers.stories.record_story.tell`)."""
    return story[1:] == ["  the history holds no send of this record"]


def _results(files: RunDir) -> dict[str, object] | None:
    """The run's results.json if it was checked: a story asked for by id needs no results, so one that
    cannot be read names no anomaly."""
    try:
        results = json.loads(files.results.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return results if isinstance(results, dict) else None
