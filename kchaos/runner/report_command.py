"""`kchaos report`: redraw report.html of checked run directories without checking them again."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from kchaos.model.run_files import HISTORY_FILES, RESULTS_NAME, RunDir
from kchaos.runner.config_options import config_option
from kchaos.runner.failures import driver_memory, fail, require_java, spark_place, working_in


@click.command()
@click.argument("run_dirs", metavar="RUN_DIR...", nargs=-1, required=True, type=click.Path(path_type=Path))
@config_option("spark_master")
@config_option("spark_remote")
@config_option("spark_driver_memory")
def report(
    run_dirs: tuple[Path, ...], spark_master: str, spark_remote: str | None, spark_driver_memory: str
) -> None:
    """Regenerate report.html of checked run directories from their results.json and history.

    Nothing is checked again (that is `kchaos check RUN_DIR`), so a report can be redrawn quickly, e.g.
    after an upgrade of kchaos that draws more. Prints the path of each report written.
    """
    from kchaos.model.history_files import reading_history

    # A report reads the history and writes only report.html: a crashed run's history is converted into a
    # temporary directory for as long as the report is drawn, not into the run.
    with reading_history():
        _report(run_dirs, spark_master, spark_remote, spark_driver_memory)


def _report(
    run_dirs: tuple[Path, ...], spark_master: str, spark_remote: str | None, spark_driver_memory: str
) -> None:
    """`report` of the named run directories."""
    from kchaos.model.history_files import HistoryCorrupt
    from kchaos.model.history_vet import vet_history
    from kchaos.spark_analysis.report import read_results, write_report

    memory = driver_memory(spark_driver_memory)
    checked: list[tuple[Path, dict[str, Any]]] = []
    for run_dir in run_dirs:  # every directory is vetted before Spark starts, so a typo fails at once
        if not run_dir.is_dir():
            fail(f"{run_dir} is not a directory; name a run directory, e.g. runs/<run-id>")
        if not RunDir(run_dir).has_history():
            fail(f"{run_dir} is not a run directory: no {HISTORY_FILES}")
        try:
            results = read_results(run_dir)
        except FileNotFoundError as exc:
            fail(str(exc))
        except ValueError as exc:
            fail(f"{RunDir(run_dir).results} is not valid JSON ({exc}); rewrite it: kchaos check {run_dir}")
        problem = results_problem(results)
        if problem is not None:
            fail(f"{RunDir(run_dir).results}: {problem}; rewrite it: kchaos check {run_dir}")
        try:
            vet_history(run_dir)
        except HistoryCorrupt as exc:
            fail(str(exc))
        checked.append((run_dir, results))
    place = spark_place(spark_master, spark_remote)
    require_java(place)
    from kchaos.checkers.runtime.session import spark_session

    spark = spark_session(place, memory)
    for run_dir, results in checked:
        working_in(run_dir)
        try:
            click.echo(str(write_report(run_dir, results, spark)))
        except FileNotFoundError as exc:
            fail(str(exc))


#: What a report cannot be drawn without, each with the type `kchaos check` writes it as.
REQUIRED_RESULTS: dict[str, type] = {"run_id": str, "verdict": str, "anomalies": dict}


def results_problem(results: object) -> str | None:
    """Why `results` is no results.json of `kchaos check`, or None. A report drawn from `{}` said nothing
    and exited 0, as if the run had been judged."""
    if not isinstance(results, dict):
        return f"holds a JSON {type(results).__name__}, not the object {RESULTS_NAME} is"
    missing = [key for key in REQUIRED_RESULTS if key not in results]
    if missing:
        return f"lacks {', '.join(missing)}, so it is not what kchaos check writes and no report can be drawn"
    wrong = [f"{key} is a {type(results[key]).__name__}" for key, kind in REQUIRED_RESULTS.items()
             if not isinstance(results[key], kind)]  # fmt: skip
    if wrong:
        return f"is not what kchaos check writes ({'; '.join(wrong)})"
    return _count_problem(results)


def _count_problem(results: dict[str, Any]) -> str | None:
    """Why a count the report draws is no count (negative, NaN, a string: a hand-edited file), or None.
    Such a report drew nonsense or failed in a template with no word on which field."""
    counts: list[tuple[str, object]] = []
    lost = results.get("lost")
    if lost is not None:
        if not isinstance(lost, dict):
            return f"lost must be an object with a count, got {lost!r}"
        counts.append(("lost.count", lost.get("count")))
    for name, anomaly in results["anomalies"].items():
        if not isinstance(anomaly, dict):
            return f"anomalies.{name} must be an object with a count, got {anomaly!r}"
        counts.append((f"anomalies.{name}.count", anomaly.get("count")))
    for field, count in counts:
        if count is not None and (not isinstance(count, int) or isinstance(count, bool) or count < 0):
            return f"{field} must be a whole number >= 0 (or null: not checked), got {count!r}"
    return None
