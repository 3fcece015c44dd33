"""`kchaos spark-server`: a Spark Connect server on this machine that checks reuse (`--spark-remote`)."""

from __future__ import annotations

import click

from kchaos.model.config import DEFAULT_DRIVER_MEMORY
from kchaos.model.spark_settings import SPARK_SERVER_PORT, checked_driver_memory
from kchaos.runner.failures import fail, require_java
from kchaos.runner.foreground_child import ChildFailed, run_in_foreground


@click.command("spark-server")
@click.option("--port", type=click.IntRange(1024, 65535), default=SPARK_SERVER_PORT, show_default=True,
              help="Loopback port the server listens on.")  # fmt: skip
@click.option("--driver-memory", default=DEFAULT_DRIVER_MEMORY, show_default=True,
              help="The server's JVM heap: digits then m or g, e.g. 1g or 4g.")  # fmt: skip
def spark_server(port: int, driver_memory: str) -> None:
    """Run a Spark Connect server in the foreground on 127.0.0.1:PORT until Ctrl-C (or SIGTERM), exit 0.

    Each check then connects to it instead of starting a JVM of its own, so a warm server answers a check
    sooner: `kchaos check RUN_DIR --spark-remote sc://127.0.0.1:PORT`, and the same option on `kchaos run`,
    `report`, `matrix` and `import-verifiable`. The server reads run directories itself, so they must be on
    this machine.
    """
    from kchaos.checkers.runtime.spark_server import (
        port_problem,
        server_command,
        server_environment,
        server_url,
    )

    try:
        checked_driver_memory(driver_memory)
    except ValueError as exc:
        fail(f"--driver-memory {exc}")
    busy = port_problem(port)
    if busy is not None:
        fail(
            f"--port {port}: a server cannot listen on {server_url(port)} ({busy}); another server may be "
            f"there already (then use --spark-remote {server_url(port)}), or give another --port"
        )
    require_java()
    command = server_command(port, driver_memory)
    click.echo(f"* Spark Connect server at {server_url(port)}; use --spark-remote {server_url(port)}")
    click.echo("* Ctrl-C stops it")
    try:
        run_in_foreground(command, server_environment())
    except ChildFailed as exc:
        fail(f"the Spark Connect server (spark-submit) {exc}; its output above says why")
