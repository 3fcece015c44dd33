"""The `kchaos` command: its commands, each in a module of its own, under one group.

Exit status: 0 when the verdict is `ok` or `permitted`, 1 on a `violation` (so CI fails on a broken
guarantee) and for nothing else, 2 when the harness itself could not do its job (bad flags, no Docker, a
cluster that never became ready, an unreadable run directory, any unexpected error) or the run could not
be judged (verdict `unchecked`: no requested fault applied, or a partial run). A harness failure
prints what failed and the fix where there is one, never a traceback: that goes to the run's
`logs/harness.log`, or to the terminal too with `kchaos --debug` (kchaos/runner/failures.py).
"""

from __future__ import annotations

import click

from kchaos.runner.check_command import check
from kchaos.runner.class_archive_command import spark_archive
from kchaos.runner.engine_commands import clean, image
from kchaos.runner.explain_command import explain
from kchaos.runner.failures import DEBUG_OPTION, KchaosGroup, set_debug
from kchaos.runner.faults_command import faults
from kchaos.runner.hunt_command import hunt
from kchaos.runner.matrix_command import matrix
from kchaos.runner.report_command import report
from kchaos.runner.rules_command import rules
from kchaos.runner.run_command import run
from kchaos.runner.scenario_command import scenario
from kchaos.runner.spark_server_command import spark_server
from kchaos.runner.verifiable_command import import_verifiable

#: The distribution whose installed version `kchaos --version` prints.
DISTRIBUTION = "kchaos"


@click.group(
    cls=KchaosGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 110}
)
@click.version_option(package_name=DISTRIBUTION, prog_name="kchaos")
@click.option(DEBUG_OPTION, is_flag=True, help="On a harness failure, print its traceback here as well.")
@click.pass_context
def main(ctx: click.Context, debug: bool) -> None:
    """Chaos tests for real Apache Kafka: what does your configuration lose when brokers fail?"""
    set_debug(ctx, debug)


for command in (
    run,
    check,
    import_verifiable,
    report,
    explain,
    rules,
    matrix,
    hunt,
    spark_server,
    spark_archive,
    clean,
    image,
    faults,
    scenario,
):
    main.add_command(command)


if __name__ == "__main__":
    main()
