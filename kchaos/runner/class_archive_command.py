"""`kchaos spark-archive`: the local Spark JVM's class-data archive, made once (`./setup.sh` runs it), so
every later local check starts its JVM sooner (`kchaos.checkers.class_archive`)."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import click

from kchaos.model.config import DEFAULT_SPARK_MASTER
from kchaos.runner.failures import fail, require_java

#: How long the JVM may take to write the archive once the check is done (about 15 s on 2 cores).
DUMP_TIMEOUT_S = 300


@click.command("spark-archive")
@click.argument("run_dir", type=click.Path(path_type=Path))
def spark_archive(run_dir: Path) -> None:
    """Make the class-data archive of the local Spark JVM by checking a copy of RUN_DIR.

    A local check (`kchaos check`, `run`, `report`, ...) then maps Spark's classes in from the archive
    instead of loading them from its jars: the check of a 40 s run took 20.3 s without and 15.8 s with it
    on 2 cores. The archive belongs to this Java and this PySpark (`~/.cache/kchaos/spark-classes-*.jsa`);
    with another, checks run as before until this is run again. Making it takes a check and about 15 s more;
    RUN_DIR is left as it is. Does nothing when the archive exists; removes the archives of a PySpark that
    is gone. `./setup.sh` runs it on the recorded run directory `tests/run_dirs/kip101-0.10.2.2`.
    """
    from kchaos.checkers.class_archive import ARCHIVE_DIR, archive_path, keep, partial_path, sweep_unusable
    from kchaos.checkers.spark import LOCAL_GC_OPTION, end_local_jvm, spark_session
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
    ARCHIVE_DIR.mkdir(parents=True, exist_ok=True)
    for removed in sweep_unusable():
        click.echo(f"removed an archive of a PySpark that is gone: {removed}")
    partial = partial_path(path)
    scratch = Path(tempfile.mkdtemp(prefix="kchaos-spark-archive-"))
    try:
        copy = scratch / run_dir.name
        shutil.copytree(run_dir, copy)
        spark_session(DEFAULT_SPARK_MASTER, dump_classes=partial)
        check_and_report(copy, DEFAULT_SPARK_MASTER)
        code = end_local_jvm(DUMP_TIMEOUT_S)
        if code != 0 or not partial.is_file():
            fail(f"Spark's JVM did not write the archive (exit {code}); checks run as before without one")
        keep(partial, path)
    finally:
        partial.unlink(missing_ok=True)
        shutil.rmtree(scratch, ignore_errors=True)
    click.echo(f"spark archive made: {path} ({path.stat().st_size // 2**20} MB)")
