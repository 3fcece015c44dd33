"""The local Spark JVM's class-data archive (`kchaos.checkers.runtime.class_archive`): made by the first local
`kchaos check` of a machine, or on demand by `kchaos spark-archive`, so every later local check starts
its JVM sooner.

The first `kchaos check` without an archive starts its JVM asked to write one when it exits; once the
verdict is printed, the check ends that JVM and puts the archive in place (about 15 s, once per Java and
PySpark). Nothing else waits for it: `./setup.sh` makes none, and `kchaos run` starts its session while the
run writes, where the JVM's start costs nothing.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import click

from kchaos.model.config import DEFAULT_SPARK_MASTER
from kchaos.runner.class_archiving import finish_archiving, start_archiving
from kchaos.runner.failures import fail, require_java


@click.command("spark-archive")
@click.argument("run_dir", type=click.Path(path_type=Path))
def spark_archive(run_dir: Path) -> None:
    """Make the class-data archive of the local Spark JVM by checking a copy of RUN_DIR.

    A local check (`kchaos check`, `report`, ...) then maps Spark's classes in from the archive instead of
    loading them from its jars: the check of a 40 s run took 20.3 s without and 15.8 s with it on 2 cores.
    The first local `kchaos check` of a machine makes it too, once its verdict is printed. The archive
    belongs to this Java and this PySpark (`~/.cache/kchaos/spark-classes-*.jsa`); with another, checks run
    as before until one is made again. Making it takes a check and about 15 s more; RUN_DIR is left as it
    is. Does nothing when the archive exists; removes the archives of a PySpark that is gone.
    """
    from kchaos.checkers.runtime.class_archive import archive_path
    from kchaos.checkers.runtime.session import LOCAL_GC_OPTION
    from kchaos.runner.outcome import check_and_report
    from kchaos.runner.run_dir_check import vet_run_dir

    require_java()
    path = archive_path(LOCAL_GC_OPTION)
    if path is None:
        fail("no java found: set JAVA_HOME to a Java 17 or later")
    if path.is_file():
        click.echo(f"spark archive ready: {path}")
        return
    vet_run_dir(run_dir)
    scratch = Path(tempfile.mkdtemp(prefix="kchaos-spark-archive-"))
    try:
        copy = scratch / run_dir.name
        shutil.copytree(run_dir, copy)
        making = start_archiving(DEFAULT_SPARK_MASTER)
        if making is None:
            fail("a Spark session was already running; run kchaos spark-archive in a process of its own")
        check_and_report(copy, DEFAULT_SPARK_MASTER)
        made = finish_archiving(making)
        if made is None:
            fail("Spark's JVM did not write the archive; checks run as before without one")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    click.echo(f"spark archive made: {made} ({made.stat().st_size // 2**20} MB)")
