"""The `kchaos` command.

Exit status: 0 when the verdict is `ok` or `permitted`, 1 on a `violation` (so CI fails on a broken
guarantee) and for nothing else, 2 when the harness itself could not do its job (bad flags, no Docker, a
cluster that never became ready, an unreadable run directory, any unexpected error) or the run could not
be judged (verdict `unchecked`: no requested fault applied, or a partial run). A harness failure
prints what failed and the fix where there is one, never a traceback: that goes to the run's
`logs/harness.log`, or to the terminal too with `KCHAOS_DEBUG=1`.
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback
from pathlib import Path
from typing import Any, NoReturn

import click
import docker.errors

from harness.config import DEFAULT_KAFKA_VERSION, ConfigError, load_config
from harness.fault_spec import FAULT_NAMES, TARGETS
from harness.run_files import CONFIG_NAME, HISTORY_DIR, HISTORY_FILES, RunDir

EXIT_VIOLATION = 1
EXIT_HARNESS_ERROR = 2

#: Set to 1 to see the traceback of a harness failure on the terminal as well.
DEBUG_ENV = "KCHAOS_DEBUG"

#: `ctx.meta` key: the run directory the command works in, where a failure's traceback is kept.
_RUN_DIR = "kchaos.run_dir"


def _fail(message: str) -> NoReturn:
    click.secho(f"kchaos: {message}", fg="red", err=True)
    sys.exit(EXIT_HARNESS_ERROR)


def _debug() -> bool:
    return os.environ.get(DEBUG_ENV, "").strip() not in ("", "0")


def _working_in(run_dir: Path) -> None:
    """Names the run directory a failure from here on belongs to; its logs/harness.log gets the traceback."""
    click.get_current_context().meta[_RUN_DIR] = run_dir


def _keep_traceback(exc: BaseException, run_dir: Path | None) -> Path | None:
    """Appends the traceback to the run's harness.log; returns that path, or None without a run directory."""
    if run_dir is None or not run_dir.is_dir():
        return None
    path = RunDir(run_dir).harness_log
    try:
        path.parent.mkdir(exist_ok=True)
        with path.open("a", encoding="utf-8") as fh:
            fh.write(f"{time.strftime('%Y-%m-%d %H:%M:%S')} ERROR runner.cli: kchaos failed\n")
            fh.write("".join(traceback.format_exception(exc)))
    except OSError:
        return None
    return path


def _harness_failed(exc: BaseException, what: str, run_dir: Path | None) -> NoReturn:
    """Exits 2 with `what` failed, the run directory and where the traceback is; no traceback here."""
    lines = [what]
    log = _keep_traceback(exc, run_dir)
    if run_dir is not None and run_dir.is_dir():
        lines.append(f"run directory: {run_dir}")
    if log is not None:
        lines.append(f"harness log (with the traceback): {log}")
    elif not _debug():
        lines.append(f"for the traceback, run again with {DEBUG_ENV}=1")
    if _debug():
        traceback.print_exception(exc, file=sys.stderr)
    _fail("\n".join(lines))


class _Kchaos(click.Group):
    """Turns whatever escapes a command into a harness failure (exit 2, one line, no traceback), so exit
    status 1 always means a violation. Click's own errors and exits pass through unchanged."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.ClickException, click.exceptions.Exit):
            raise
        except (KeyboardInterrupt, click.Abort):
            run_dir = ctx.meta.get(_RUN_DIR)
            _fail("interrupted" + (f" (run directory: {run_dir})" if run_dir else ""))
        except Exception as exc:
            _harness_failed(exc, f"the harness failed: {_named(exc)}", ctx.meta.get(_RUN_DIR))


def _named(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _require_engine() -> None:
    from harness.engine import EngineError, require_engine

    try:
        require_engine()
    except EngineError as exc:
        _fail(str(exc))


def echo_outcome(outcome: Any) -> int:
    """Prints where the run is, what it found and what that rests on; returns the exit code its verdict
    calls for (2 for `unchecked`: the run could not test what was asked, which is not a pass)."""
    from runner.run import RunOutcome

    assert isinstance(outcome, RunOutcome)
    summary = outcome.results.get("summary", {})
    colour = {"ok": "green", "permitted": "yellow", "violation": "red"}.get(outcome.verdict, "white")
    click.echo(f"run directory: {outcome.run_dir}")
    click.echo(f"report:        {outcome.report}")
    click.echo(
        f"acknowledged writes: {summary.get('sends_acknowledged', '?')}, "
        f"lost writes: {outcome.shown_count('lost-write')} ({outcome.verdict_of('lost-write')})"
    )
    for name, anomaly in outcome.occurred().items():
        click.echo(f"  {outcome.judged(name, anomaly)}")
    for name, anomaly in outcome.unchecked().items():
        click.echo(f"  {outcome.judged(name, anomaly)}")
    for line in outcome.run_lines():
        click.secho(line, fg="yellow" if line.startswith(("partial", "the run acknowledged")) else None)
    click.secho(outcome.verdict_line(), fg=colour, bold=True)
    if outcome.verdict == "violation":
        return EXIT_VIOLATION
    return EXIT_HARNESS_ERROR if outcome.verdict == "unchecked" else 0


@click.group(cls=_Kchaos, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 110})
def main() -> None:
    """Chaos tests for real Apache Kafka: what does your configuration lose when brokers fail?"""


@main.command()
@click.option(
    "--kafka-version",
    default=DEFAULT_KAFKA_VERSION,
    show_default=True,
    help="Kafka release for the locally built image kchaos/kafka:<version>.",
)
@click.option(
    "--kafka-image", default=None, help="Use this image instead (e.g. apache/kafka:4.1.1) if you have it."
)
@click.option("--brokers", default=3, show_default=True, help="KRaft nodes (each broker and controller).")
@click.option("--partitions", default=3, show_default=True)
@click.option("--replication-factor", default=3, show_default=True)
@click.option("--min-insync-replicas", default=2, show_default=True)
@click.option("--unclean-leader-election/--no-unclean-leader-election", default=False, show_default=True)
@click.option("--acks", type=click.Choice(["all", "1"]), default="all", show_default=True)
@click.option(
    "--idempotence/--no-idempotence", default=None, help="Default: on for acks=all, off for acks=1."
)
@click.option("--producers", default=2, show_default=True, help="Concurrent producer clients.")
@click.option(
    "--consumers",
    default=1,
    show_default=True,
    help="Clients reading every partition during the run (0: only the final read).",
)
@click.option("--rate", default=200.0, show_default=True, help="Sends per second, all producers together.")
@click.option("--duration", default=60.0, show_default=True, help="Seconds the producers write.")
@click.option(
    "--nemesis",
    default="kill-leader,isolate-leader",
    show_default=True,
    help=f"Comma-separated faults, each NAME[:OPTION=VALUE]... (e.g. pause:target=controller); names: "
    f"{', '.join(FAULT_NAMES)}; targets: {', '.join(TARGETS)} or node ids like 2 or 1+3; "
    "'none' for no faults. "
    "See the README for every fault's options.",
)
@click.option(
    "--schedule",
    type=click.Choice(["fixed", "random"]),
    default="fixed",
    show_default=True,
    help="fixed: the faults in turn, in a seeded order; random: each fault drawn with the seed.",
)
@click.option(
    "--fault-duration-max",
    type=float,
    default=None,
    help="With it, each fault holds a seeded random time between --fault-duration and this.",
)
@click.option(
    "--fault-interval-max",
    type=float,
    default=None,
    help="With it, each quiet period is a seeded random time between --fault-interval and this.",
)
@click.option(
    "--fault-partition", default=0, show_default=True, help="Partition whose leader the faults target."
)
@click.option("--fault-duration", default=15.0, show_default=True, help="Seconds each fault is held.")
@click.option("--fault-interval", default=10.0, show_default=True, help="Quiet seconds before each fault.")
@click.option("--seed", default=0, show_default=True, help="Seeds the fault order; same seed, same schedule.")
@click.option(
    "--message-timeout-ms",
    default=30000,
    show_default=True,
    help="Producer delivery timeout; a send unanswered by then is recorded as indeterminate.",
)
@click.option(
    "--broker-config", multiple=True, metavar="KEY=VALUE", help="Extra broker property (repeatable)."
)
@click.option("--broker-heap", default="256m", show_default=True)
@click.option("--runs-dir", default="runs", show_default=True, type=click.Path(path_type=Path))
@click.option("--run-id", default=None, help="Default: timestamp plus a random suffix.")
@click.option("--spark-master", default="local[2]", show_default=True)
@click.option(
    "--recovery-timeout",
    default=180.0,
    show_default=True,
    help="Seconds to wait after healing for every partition to be led and fully in sync.",
)
def run(broker_config: tuple[str, ...], run_id: str | None, **options: Any) -> None:
    """Start a cluster, write under faults, heal, read everything back and judge the result."""
    extra: dict[str, str] = {}
    for item in broker_config:
        key, sep, value = item.partition("=")
        if not sep or not key:
            _fail(f"--broker-config {item!r}: write it as KEY=VALUE, e.g. log.flush.interval.messages=1")
        extra[key.strip()] = value.strip()
    values = {k: v for k, v in options.items() if v is not None}
    if run_id:
        values["run_id"] = run_id
    try:
        config = load_config(broker_config=extra, **values)
    except ConfigError as exc:
        _fail(str(exc))
    if config.run_dir.exists():
        _fail(
            f"{config.run_dir} already exists (an earlier run?); pick another --run-id, or remove that "
            "directory to run again under this id"
        )
    _require_engine()  # before the run directory is created: no empty directory is left behind
    from harness.cluster import ClusterError
    from harness.engine import EngineError
    from harness.image import ImageError
    from harness.waiting import WaitTimeout
    from runner.run import execute

    _working_in(config.run_dir)
    try:
        outcome = execute(config, progress=lambda message: click.echo(f"* {message}"))
    except KeyboardInterrupt:
        _fail(
            f"interrupted; cleaned up. What was recorded is in {config.run_dir}; `kchaos check "
            f"{config.run_dir}` judges it as the partial run it is"
        )
    except (ImageError, ClusterError, WaitTimeout, EngineError, docker.errors.DockerException) as exc:
        _harness_failed(exc, str(exc), config.run_dir)
    sys.exit(echo_outcome(outcome))


@main.command()
@click.argument("run_dir", required=False, type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option(
    "--format",
    "input_format",
    type=click.Choice(["kchaos", "verifiable"]),
    default="kchaos",
    show_default=True,
    help="kchaos: RUN_DIR is a kchaos run directory. verifiable: convert Kafka's VerifiableProducer and "
    "VerifiableConsumer (--verbose) stdout into a run directory (--out), then check it.",
)
@click.option(
    "--producer-log",
    multiple=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="VerifiableProducer stdout, one file per producer (repeatable; --format verifiable).",
)
@click.option(
    "--consumer-log",
    multiple=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="VerifiableConsumer --verbose stdout, one file per consumer (repeatable; --format verifiable).",
)
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    help="Run directory to create for the converted history (--format verifiable).",
)
@click.option(
    "--acks",
    type=click.Choice(["all", "-1", "1"]),
    default=None,
    help="The producers' acks (--format verifiable). [default: all, VerifiableProducer's default -1]",
)
@click.option(
    "--min-insync-replicas",
    type=click.IntRange(min=1),
    default=None,
    help="The topic's min.insync.replicas (--format verifiable). [default: 2]",
)
@click.option(
    "--replication-factor",
    type=click.IntRange(min=1),
    default=None,
    help="The topic's replication factor (--format verifiable). [default: 3]",
)
@click.option(
    "--unclean-leader-election/--no-unclean-leader-election",
    default=None,
    help="Whether the topic allowed unclean leader election (--format verifiable). [default: off]",
)
@click.option(
    "--idempotence/--no-idempotence",
    default=None,
    help="Whether the producers were idempotent (--format verifiable). [default: off, since "
    "VerifiableProducer sets retries=0]",
)
@click.option("--spark-master", default="local[2]", show_default=True)
def check(
    run_dir: Path | None,
    input_format: str,
    producer_log: tuple[Path, ...],
    consumer_log: tuple[Path, ...],
    out: Path | None,
    spark_master: str,
    **oracle: Any,
) -> None:
    """Check (again) a run directory's history and rewrite results.json and report.html.

    With --format verifiable, first convert Kafka's VerifiableProducer / VerifiableConsumer output into
    the run directory --out, for example:

    \b
      kchaos check --format verifiable --producer-log p1.out --producer-log p2.out \\
          --consumer-log c1.out --out runs/verifiable-1 --acks all --min-insync-replicas 2
    """
    from harness.history import HistoryCorrupt
    from runner.run import check_and_report

    if input_format == "kchaos":
        given = [f"--{name.replace('_', '-')}" for name, value in oracle.items() if value is not None]
        given += [flag for flag, value in (("--producer-log", producer_log), ("--consumer-log", consumer_log),
                                           ("--out", out)) if value]  # fmt: skip
        if given:
            _fail(f"{', '.join(given)} only apply with --format verifiable")
        if run_dir is None:
            _fail("name the run directory to check: kchaos check RUN_DIR")
        assert run_dir is not None
        target = run_dir
    else:
        target = _convert_verifiable(run_dir, producer_log, consumer_log, out, oracle)
    _working_in(target)
    _vet_run_dir(target)
    try:
        outcome = check_and_report(target, spark_master)
    except (FileNotFoundError, HistoryCorrupt) as exc:
        _fail(str(exc))
    sys.exit(echo_outcome(outcome))


def _vet_run_dir(run_dir: Path) -> None:
    """Fails with what is wrong and the fix unless `run_dir` holds a readable config.json and history;
    before Spark starts, so a wrong directory is reported at once."""
    from harness.history import HistoryCorrupt, history_path

    files = RunDir(run_dir)
    config = files.config
    if not (config.exists() or files.history.exists()):
        _fail(f"{run_dir} is not a run directory: it has no {CONFIG_NAME} and no {HISTORY_DIR}/")
    if not config.is_file():
        _fail(
            f"{run_dir} has no {CONFIG_NAME} (the run's settings, which the oracle judges by); a run that "
            "failed before starting its cluster has none, and nothing to check"
        )
    try:
        settings = json.loads(config.read_text(encoding="utf-8"))
    except (ValueError, OSError) as exc:
        _fail(
            f"{config} is not valid JSON ({exc}); restore it (it holds the run's settings) or check "
            "another run directory"
        )
    if not isinstance(settings, dict):
        _fail(
            f"{config} holds a JSON {type(settings).__name__}, not the object of the run's settings; "
            "restore it or check another run directory"
        )
    if not files.has_history():
        _fail(
            f"{run_dir} has no {HISTORY_FILES}: nothing was recorded "
            "(the run died before it wrote), so there is nothing to check"
        )
    try:
        history_path(run_dir)  # converts a crashed run's staging file, refusing a damaged one
    except HistoryCorrupt as exc:
        _fail(str(exc))


@main.command()
@click.argument("run_dirs", metavar="RUN_DIR...", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--spark-master", default="local[2]", show_default=True)
def report(run_dirs: tuple[Path, ...], spark_master: str) -> None:
    """Regenerate report.html of checked run directories from their results.json and history.

    Nothing is checked again (that is `kchaos check RUN_DIR`), so a report can be redrawn quickly, e.g.
    after an upgrade of kchaos that draws more. Prints the path of each report written.
    """
    from spark_analysis.report import read_results, write_report

    checked: list[tuple[Path, dict[str, Any]]] = []
    for run_dir in run_dirs:  # every directory is vetted before Spark starts, so a typo fails at once
        if not run_dir.is_dir():
            _fail(f"{run_dir} is not a directory; name a run directory, e.g. runs/<run-id>")
        if not RunDir(run_dir).has_history():
            _fail(f"{run_dir} is not a run directory: no {HISTORY_FILES}")
        try:
            checked.append((run_dir, read_results(run_dir)))
        except FileNotFoundError as exc:
            _fail(str(exc))
        except ValueError as exc:
            _fail(f"{RunDir(run_dir).results} is not valid JSON ({exc}); rewrite it: kchaos check {run_dir}")
    from checkers.spark import spark_session

    spark = spark_session(spark_master)
    for run_dir, results in checked:
        _working_in(run_dir)
        try:
            click.echo(str(write_report(run_dir, results, spark)))
        except FileNotFoundError as exc:
            _fail(str(exc))


def _convert_verifiable(
    run_dir: Path | None,
    producer_logs: tuple[Path, ...],
    consumer_logs: tuple[Path, ...],
    out: Path | None,
    oracle: dict[str, Any],
) -> Path:
    """Converts the tools' logs into `out` and prints what each log held, to compare with the tools' own
    counts."""
    from checkers.verifiable import OracleSettings, VerifiableInputError, convert

    if run_dir is not None:
        _fail(f"with --format verifiable the run directory is created: use --out {run_dir}, not an argument")
    if not producer_logs or not consumer_logs or out is None:
        _fail(
            "--format verifiable needs --producer-log FILE (VerifiableProducer stdout), --consumer-log FILE "
            "(VerifiableConsumer --verbose stdout) and --out RUN_DIR"
        )
    assert out is not None
    settings = {key: value for key, value in oracle.items() if value is not None}
    if settings.get("acks") == "-1":
        settings["acks"] = "all"
    try:
        conversion = convert(producer_logs, consumer_logs, out, OracleSettings(**settings))
    except (VerifiableInputError, ValueError, FileExistsError) as exc:
        _fail(str(exc))
    for log in conversion.logs:
        if log.role == "producer":
            tool = (
                f" (tool_data: sent {log.tool_sent}, acked {log.tool_acked})"
                if log.tool_acked is not None
                else ""
            )
            click.echo(
                f"* {log.path} -> {log.process}: {log.sends_acknowledged} acknowledged, "
                f"{log.sends_indeterminate} indeterminate, {log.sends_failed} failed sends{tool}"
            )
        else:
            click.echo(
                f"* {log.path} -> {log.process}: {log.records} records read, {log.assignments} assignments"
            )
    click.echo(f"* converted into {out} ({conversion.rows} history rows); checking with Spark")
    return out


@main.command()
@click.argument("matrix_file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
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
    help="Replace one axis of the file, e.g. --axis kafka_version=4.1.1 (repeatable).",
)
@click.option("--spark-master", default="local[2]", show_default=True)
def matrix(matrix_file: Path, runs_dir: Path, axis_overrides: tuple[str, ...], spark_master: str) -> None:
    """Run every combination of a matrix file's axes, one after another, then compare them.

    Finished runs are skipped, so an interrupted matrix resumes where it stopped. Writes
    comparison.html and comparison.json next to the runs. Exit status: 1 if any run has a violation,
    2 if the harness could not complete a run, else 0.
    """
    from harness.matrix import MatrixError, load_matrix, parse_axis_override, point_summary

    try:
        spec = load_matrix(matrix_file)
        spec = spec.with_axes(dict(parse_axis_override(text) for text in axis_overrides))
        points = spec.points(runs_dir)
    except MatrixError as exc:
        _fail(str(exc))
    from checkers.spark import spark_session
    from runner.matrix_run import is_finished, run_matrix
    from spark_analysis.comparison import ComparedRun, write_comparison

    try:
        unfinished = [point for point in points if not is_finished(point)]
    except MatrixError as exc:
        _fail(str(exc))
    if unfinished:
        _require_engine()  # else every point would fail on its own with the same connection error

    click.echo(f"* matrix {spec.name}: {point_summary(points)} into {runs_dir / spec.name}")
    try:
        outcome = run_matrix(spec, runs_dir, progress=lambda message: click.echo(f"* {message}"))
    except MatrixError as exc:
        _fail(str(exc))
    except KeyboardInterrupt:
        _fail(
            f"interrupted; finished runs are kept in {runs_dir / spec.name}; run the same command to resume"
        )
    click.echo("* comparing the runs with Spark")
    compared = [
        ComparedRun(point.run_id, point.key, point.settings, point.config.run_dir)
        for point in outcome.finished
    ]
    page = write_comparison(
        spark_session(spark_master), outcome.directory, compared, spec.name, failed=outcome.failed
    )
    verdicts = _print_comparison(outcome.directory)
    click.echo(f"comparison: {page}")
    if outcome.failed:
        click.secho(
            f"{len(outcome.failed)} run(s) could not be completed: {', '.join(outcome.failed)}", fg="red"
        )
    if "violation" in verdicts:
        sys.exit(EXIT_VIOLATION)
    unjudged = verdicts.count("unchecked")
    if unjudged:
        click.secho(f"{unjudged} configuration(s) could not be judged (verdict unchecked): see their reports")
    sys.exit(EXIT_HARNESS_ERROR if outcome.failed or unjudged else 0)


def _print_comparison(directory: Path) -> list[str]:
    """One line per configuration from comparison.json; returns their verdicts."""
    import json

    from spark_analysis.comparison import COMPARISON_JSON

    document = json.loads((directory / COMPARISON_JSON).read_text(encoding="utf-8"))
    colours = {"ok": "green", "permitted": "yellow", "violation": "red"}
    verdicts = []
    for row in document["configurations"]:
        rate = row["loss_rate"]
        loss = "—" if rate is None else f"{100 * rate:.3f}%"
        click.echo(
            f"  {row['key']}: {row['sends_acknowledged']} acknowledged, {row['lost_writes']} lost ({loss}), "
            f"p99 {row['latency_ms'].get('p99', '—')} ms -> "
            + click.style(row["verdict"], fg=colours.get(row["verdict"], "white"), bold=True)
        )
        verdicts.append(row["verdict"])
    return verdicts


@main.command()
@click.option(
    "--all", "everything", is_flag=True, help="Also remove containers of runs that are still going."
)
def clean(everything: bool) -> None:
    """Remove containers and networks left behind by crashed runs."""
    from harness.labels import sweep

    _require_engine()
    removed = sweep(everything=everything)
    for item in removed:
        click.echo(f"removed {item}")
    click.echo(f"{len(removed)} removed")


@main.group()
def image() -> None:
    """Build the Kafka image locally (Debian base via debootstrap, Kafka jars from Maven Central)."""


@image.command("build")
@click.option("--kafka-version", default=DEFAULT_KAFKA_VERSION, show_default=True)
def image_build(kafka_version: str) -> None:
    """Build kchaos/kafka:<version> (and the base) if missing or out of date."""
    from harness.image import ImageError, ensure_kafka_image

    _require_engine()
    try:
        tag = ensure_kafka_image(kafka_version)
    except (ImageError, docker.errors.DockerException) as exc:
        _fail(str(exc))
    click.echo(f"image ready: {tag}")


if __name__ == "__main__":
    main()
