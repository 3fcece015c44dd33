"""`kchaos import-verifiable`: judge the output of Kafka's VerifiableProducer and VerifiableConsumer like a
run's history.

The tools' logs become a run directory (kchaos/checkers/importers/verifiable.py), which is then checked as any
run is. `kchaos check --format verifiable` is the same command under its first name and takes the same options
(`verifiable_options`).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from kchaos.model.setting_bounds import MAX_EXAMPLES
from kchaos.runner.config_options import config_option
from kchaos.runner.failures import driver_memory, fail, spark_place
from kchaos.runner.run_dir_check import judge_run_dir

FC = TypeVar("FC", bound=Callable[..., Any])


def verifiable_options(only_with: str = "") -> Callable[[FC], FC]:
    """The tools' logs, the run directory to create and what the oracle must be told, which the logs do not
    say. `only_with` names the flag they need on a command that has other uses (`check`). Every default is
    None, so that such a command can tell what was given; the converter's defaults are in the help."""
    needs = f"; {only_with}" if only_with else ""
    options = [
        click.option(
            "--producer-log",
            multiple=True,
            type=click.Path(exists=True, dir_okay=False, path_type=Path),
            help=f"VerifiableProducer stdout, one file per producer (repeatable{needs}).",
        ),
        click.option(
            "--consumer-log",
            multiple=True,
            type=click.Path(exists=True, dir_okay=False, path_type=Path),
            help=f"VerifiableConsumer --verbose stdout, one file per consumer (repeatable{needs}).",
        ),
        click.option(
            "--out",
            type=click.Path(file_okay=False, path_type=Path),
            help=f"Run directory to create for the converted history; not one that holds a history{needs}.",
        ),
        click.option(
            "--acks",
            type=click.Choice(["all", "-1", "1"]),
            default=None,
            help=f"The producers' acks; -1 is all{needs}. [default: all, VerifiableProducer's default -1]",
        ),
        click.option(
            "--min-insync-replicas",
            type=click.IntRange(min=1),
            default=None,
            help=f"The topic's min.insync.replicas, at most --replication-factor{needs}. [default: 2]",
        ),
        click.option(
            "--replication-factor",
            type=click.IntRange(min=1),
            default=None,
            help=f"The topic's replication factor{needs}. [default: 3]",
        ),
        click.option(
            "--unclean-leader-election/--no-unclean-leader-election",
            default=None,
            help=f"Whether the topic allowed unclean leader election{needs}. [default: off]",
        ),
        click.option(
            "--idempotence/--no-idempotence",
            default=None,
            help=f"Whether the producers were idempotent{needs}. [default: off, since VerifiableProducer "
            "sets retries=0]",
        ),
    ]

    def apply(command: FC) -> FC:
        for option in reversed(options):
            command = option(command)
        return command

    return apply


@click.command("import-verifiable")
@verifiable_options()
@config_option("spark_master")
@config_option("spark_remote")
@config_option("spark_driver_memory")
@config_option("max_examples", type=click.IntRange(min=1, max=MAX_EXAMPLES))
def import_verifiable(
    producer_log: tuple[Path, ...],
    consumer_log: tuple[Path, ...],
    out: Path | None,
    spark_master: str,
    spark_remote: str | None,
    spark_driver_memory: str,
    max_examples: int,
    **oracle: Any,
) -> None:
    """Convert Kafka's VerifiableProducer and VerifiableConsumer (--verbose) stdout into a run directory
    (--out), then check it like a run, for example:

    \b
      kchaos import-verifiable --producer-log p1.out --producer-log p2.out --consumer-log c1.out \\
          --out runs/verifiable-1 --acks all --min-insync-replicas 2
    """
    spark = spark_place(spark_master, spark_remote)
    memory = driver_memory(spark_driver_memory)
    converted = convert_verifiable("import-verifiable", producer_log, consumer_log, out, oracle)
    judge_run_dir(converted, spark, max_examples, memory)


def convert_verifiable(
    command: str,
    producer_logs: tuple[Path, ...],
    consumer_logs: tuple[Path, ...],
    out: Path | None,
    oracle: dict[str, Any],
) -> Path:
    """Converts the tools' logs into `out`, which it returns, and prints what each log held, to compare
    with the tools' own counts. `command` names the command in the message that asks for a missing flag."""
    from kchaos.checkers.importers.verifiable import VerifiableInputError, convert, verifiable_inputs

    if not producer_logs or not consumer_logs or out is None:
        fail(
            f"{command} needs --producer-log FILE (VerifiableProducer stdout), --consumer-log FILE "
            "(VerifiableConsumer --verbose stdout) and --out RUN_DIR"
        )
    assert out is not None
    try:
        conversion = convert(producer_logs, consumer_logs, out, verifiable_inputs(**oracle))
    except (VerifiableInputError, ValueError, FileExistsError) as exc:
        fail(str(exc))
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
