"""`kchaos check`: judge a run directory again, e.g. after an upgrade of kchaos or a crashed run.

`--format verifiable` is the first name of `kchaos import-verifiable`, kept so that scripts written for it
still work; its options apply only in that form.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from kchaos.model.setting_bounds import MAX_EXAMPLES
from kchaos.runner.config_options import config_option
from kchaos.runner.failures import driver_memory, fail, spark_place
from kchaos.runner.run_dir_check import judge_run_dir
from kchaos.runner.verifiable_command import convert_verifiable, verifiable_options

#: What the Verifiable* options need on `check`.
_VERIFIABLE = "--format verifiable"


@click.command()
@click.argument("run_dir", required=False, type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option(
    "--format",
    "input_format",
    type=click.Choice(["kchaos", "verifiable"]),
    default="kchaos",
    show_default=True,
    help="kchaos: RUN_DIR is a kchaos run directory. verifiable: the same as `kchaos import-verifiable`, "
    "which converts Kafka's VerifiableProducer and VerifiableConsumer (--verbose) stdout into a run "
    "directory (--out), then checks it.",
)
@verifiable_options(only_with=f"only with {_VERIFIABLE}")
@config_option("spark_master")
@config_option("spark_remote")
@config_option("spark_driver_memory")
@config_option("max_examples", type=click.IntRange(min=1, max=MAX_EXAMPLES))
def check(
    run_dir: Path | None,
    input_format: str,
    producer_log: tuple[Path, ...],
    consumer_log: tuple[Path, ...],
    out: Path | None,
    spark_master: str,
    spark_remote: str | None,
    spark_driver_memory: str,
    max_examples: int,
    **oracle: Any,
) -> None:
    """Check (again) a run directory's history and rewrite results.json and report.html.

    With --format verifiable, first convert Kafka's VerifiableProducer / VerifiableConsumer output into
    the run directory --out, as `kchaos import-verifiable` does, for example:

    \b
      kchaos check --format verifiable --producer-log p1.out --producer-log p2.out \\
          --consumer-log c1.out --out runs/verifiable-1 --acks all --min-insync-replicas 2
    """
    spark = spark_place(spark_master, spark_remote)
    memory = driver_memory(spark_driver_memory)
    if input_format == "kchaos":
        given = [f"--{name.replace('_', '-')}" for name, value in oracle.items() if value is not None]
        given += [flag for flag, value in (("--producer-log", producer_log), ("--consumer-log", consumer_log),
                                           ("--out", out)) if value]  # fmt: skip
        if given:
            fail(f"{', '.join(given)} only apply with {_VERIFIABLE}")
        if run_dir is None:
            fail("name the run directory to check: kchaos check RUN_DIR")
        assert run_dir is not None
        judge_run_dir(run_dir, spark, max_examples, memory)
    if run_dir is not None:
        fail(f"with {_VERIFIABLE} the run directory is created: use --out {run_dir}, not an argument")
    converted = convert_verifiable(_VERIFIABLE, producer_log, consumer_log, out, oracle)
    judge_run_dir(converted, spark, max_examples, memory)
