"""Making the local Spark JVM's class-data archive beside a check: the check's own session is started asked
to write one when its JVM ends, and once the verdict is out the archive is put in place.

Apart from `kchaos spark-archive` (kchaos/runner/class_archive_command.py), which checks a copy of a run
to make one, because `kchaos check` does the same through `kchaos.runner.run_dir_check` and the command
also vets the run directory there: each of the two reads this module, neither the other.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from kchaos.model.config import DEFAULT_DRIVER_MEMORY

#: How long the JVM may take to write the archive once the check is done (about 15 s on 2 cores).
DUMP_TIMEOUT_S = 300


@dataclass(frozen=True)
class Archiving:
    """An archive being made: where it goes, and where this process's JVM writes it first."""

    path: Path
    partial: Path


def start_archiving(spark_master: str | None, driver_memory: str = DEFAULT_DRIVER_MEMORY) -> Archiving | None:
    """Starts this process's local session asked to write the class-data archive when its JVM ends, when
    there is none yet; None when there is nothing to make (a remote master, an archive in place, a JVM
    already running, no Java)."""
    from pyspark import SparkContext

    from kchaos.checkers.runtime.class_archive import ARCHIVE_DIR, archive_path, partial_path, sweep_unusable
    from kchaos.checkers.runtime.session import LOCAL_GC_OPTION, spark_session

    if spark_master is None or not spark_master.startswith("local"):
        return None
    if SparkContext._active_spark_context is not None:
        return None
    path = archive_path(LOCAL_GC_OPTION)
    if path is None or path.is_file():
        return None
    ARCHIVE_DIR.mkdir(parents=True, exist_ok=True)
    sweep_unusable()
    making = Archiving(path, partial_path(path))
    spark_session(spark_master, driver_memory, dump_classes=making.partial)
    return making


def finish_archiving(making: Archiving) -> Path | None:
    """Ends the session `start_archiving` started and puts the archive its JVM wrote in place; the
    archive, or None when the JVM did not write it whole (checks then run as before without one)."""
    from kchaos.checkers.runtime.class_archive import keep
    from kchaos.checkers.runtime.session import end_local_jvm

    try:
        code = end_local_jvm(DUMP_TIMEOUT_S)
        if code != 0 or not making.partial.is_file():
            return None
        keep(making.partial, making.path)
        return making.path
    finally:
        making.partial.unlink(missing_ok=True)
