"""`kchaos matrix`: run every combination of a matrix file's axes, then compare them on one page."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from kchaos.checkers.rules.verdict_names import UNCHECKED, VIOLATION, verdict_colour
from kchaos.model.matrix import KEY_HELP
from kchaos.model.matrix_time import CONFIRM_ABOVE, duration_text, estimate_text, estimated_seconds
from kchaos.runner.config_options import config_option
from kchaos.runner.failures import (
    EXIT_HARNESS_ERROR,
    EXIT_VIOLATION,
    fail,
    require_engine,
    require_java,
    require_runs_dir,
    spark_place,
)
from kchaos.runner.progress_echo import ProgressEcho

#: The help text: the command, then the file's keys from the table the loader checks them against, so the
#: help cannot list a key the loader refuses or miss one it accepts.
HELP = """Run every combination of a matrix file's axes, one after another, then compare them.

MATRIX_FILE is a path, or the name of a matrix file kchaos ships (example, nightly-partitions, ...);
without it, the shipped matrix files are listed, one line each.

Finished runs are skipped, so an interrupted matrix resumes where it stopped. Writes comparison.html and
comparison.json next to the runs. Exit status: 1 if any run has a violation, 2 if the harness could not
complete a run, else 0.

\b
MATRIX_FILE is YAML with these keys:
""" + "\n".join(f"  {key + ':':13}{text}" for key, text in KEY_HELP.items())


@click.command(help=HELP)
@click.argument("matrix_file", required=False)
@click.option(
    "--runs-dir",
    default="runs",
    show_default=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Runs go to RUNS_DIR/<matrix name>/<point>/, the comparison to RUNS_DIR/<matrix name>/.",
)
@click.option(
    "--axis",
    "axis_overrides",
    multiple=True,
    metavar="NAME=V1,V2",
    help="Replace one axis of the file, e.g. --axis kafka_version=4.1.1 (repeatable); NAME is a "
    "`kchaos run` flag with underscores for dashes.",
)
@click.option(
    "--yes",
    "-y",
    is_flag=True,
    help=f"Start more than {CONFIRM_ABOVE} runs; without it, such a matrix is refused after its count and "
    "estimated time are shown.",
)
@config_option(
    "spark_master", help="Spark master the comparison runs on (each run's check: its own setting)."
)
@config_option(
    "spark_remote",
    help="Spark Connect server every run's check and the comparison run on "
    "(sc://HOST:PORT, e.g. what `kchaos spark-server` serves); it must see the runs' directories.",
)
def matrix(
    matrix_file: str | None,
    runs_dir: Path,
    axis_overrides: tuple[str, ...],
    yes: bool,
    spark_master: str,
    spark_remote: str | None,
) -> None:
    """`kchaos matrix`; its help is `HELP`."""
    from kchaos.model.matrix import (
        MatrixError,
        find_matrix_file,
        load_matrix,
        parse_axis_override,
        point_summary,
    )

    if matrix_file is None:
        _list_shipped()
        return
    try:
        spec = load_matrix(find_matrix_file(matrix_file))
        spec = spec.with_axes(dict(parse_axis_override(text) for text in axis_overrides))
        if spark_remote is not None:
            spec = spec.with_base({"spark_remote": spark_remote})
        points = spec.points(runs_dir)
    except MatrixError as exc:
        fail(str(exc))
    require_runs_dir(runs_dir)
    spark_at = spark_place(spark_master, spark_remote)
    require_java(spark_at)  # every run is checked with Spark, and so is the comparison
    from kchaos.checkers.runtime.session import spark_session
    from kchaos.runner.matrix_run import is_finished, run_matrix
    from kchaos.spark_analysis.comparison import ComparedRun, write_comparison

    try:
        unfinished = [point for point in points if not is_finished(point)]
    except MatrixError as exc:
        fail(str(exc))
    click.echo(f"* matrix {spec.name}: {point_summary(points)} into {runs_dir / spec.name}")
    click.echo(f"* {estimate_text(unfinished)}")
    if len(unfinished) > CONFIRM_ABOVE and not yes:
        fail(
            f"matrix {spec.name}: {len(unfinished)} runs to go, estimated "
            f"{duration_text(estimated_seconds(unfinished))}; more than {CONFIRM_ABOVE} runs start only "
            "with --yes (or narrow the axes, leave combinations out with `exclude`, lower `repetitions`)"
        )
    if unfinished:
        require_engine()  # else every point would fail on its own with the same connection error
    try:
        with ProgressEcho() as shown:  # in place on a terminal, each point and milestone alone elsewhere
            outcome = run_matrix(spec, runs_dir, progress=shown)
    except MatrixError as exc:
        fail(str(exc))
    except KeyboardInterrupt:
        fail(f"interrupted; finished runs are kept in {runs_dir / spec.name}; run the same command to resume")
    click.echo("* comparing the runs with Spark")
    compared = [
        ComparedRun(point.run_id, point.key, point.settings, point.config.run_dir)
        for point in outcome.finished
    ]
    page = write_comparison(
        spark_session(spark_place(spark_master, spark_remote)),
        outcome.directory,
        compared,
        spec.name,
        failed=outcome.failed,
    )
    verdicts = _print_comparison(outcome.directory)
    click.echo(f"comparison: {page}")
    if outcome.failed:
        click.secho(
            f"{len(outcome.failed)} run(s) could not be completed: {', '.join(outcome.failed)}", fg="red"
        )
    if VIOLATION in verdicts:
        sys.exit(EXIT_VIOLATION)
    unjudged = verdicts.count(UNCHECKED)
    if unjudged:
        click.secho(f"{unjudged} configuration(s) could not be judged (verdict unchecked): see their reports")
    sys.exit(EXIT_HARNESS_ERROR if outcome.failed or unjudged else 0)


def _list_shipped() -> None:
    """The matrix files kchaos ships, a line each: its name (what MATRIX_FILE takes) and its description."""
    from kchaos.model.matrix import MatrixError, load_matrix, shipped_matrices

    try:
        shipped = {name: load_matrix(path).description for name, path in shipped_matrices().items()}
    except MatrixError as exc:
        fail(str(exc))
    width = max(len(name) for name in shipped)
    click.echo("shipped matrix files (`kchaos matrix NAME` runs one, `--help` describes the format):")
    for name, description in shipped.items():
        click.echo(f"  {name:<{width}}  {description}")


def _print_comparison(directory: Path) -> list[str]:
    """One line per configuration from comparison.json; returns their verdicts."""
    from kchaos.spark_analysis.comparison import COMPARISON_JSON

    document = json.loads((directory / COMPARISON_JSON).read_text(encoding="utf-8"))
    verdicts = []
    for row in document["configurations"]:
        rate = row["loss_rate"]
        loss = "—" if rate is None else f"{100 * rate:.3f}%"
        lost = "n/a" if row["lost"] is None else row["lost"]
        written = "n/a" if row["acknowledged"] is None else row["acknowledged"]
        click.echo(
            f"  {row['key']}: {written} acknowledged, {lost} lost ({loss}), "
            f"p99 {row['latency_ms'].get('p99', '—')} ms -> "
            + click.style(row["verdict"], fg=verdict_colour(row["verdict"]).terminal, bold=True)
        )
        verdicts.append(row["verdict"])
    return verdicts
