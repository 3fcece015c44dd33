"""A run's check made ready while the run still writes: its Spark JVM started, and a first check done.

A check in a fresh JVM pays for the JVM's start, for loading Spark's classes and for compiling the code
its queries run: a default run's check took 11 s cold against 4 s in a JVM that had checked before. A
run spends a minute writing with most of two cores idle, so it starts the check's session then, and
checks and reports a copy of the history recorded so far (`scratch`), which has the run's own shape (its
workload's rows, its faults, its configuration), with stand-in replica dumps (`stand_in_replicas`) so that
the replica passes are compiled too. When the run is done, its own check finds everything loaded and
compiled, and the verdict follows the replica dump within seconds.

Only a local Spark master is warmed: a Spark Connect server or a cluster is already running. A process
that has a session already (the pytest plugin's, or a matrix's or a hunt's after its first run) has
nothing to warm. What the warm-up finds is thrown away; a warm-up that fails costs the run nothing but the
time its own check then takes, and is logged.
"""

from __future__ import annotations

import logging
import shutil
import threading
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyspark import SparkContext

from kchaos.checkers.runtime.session import spark_session
from kchaos.model.config import DEFAULT_DRIVER_MEMORY
from kchaos.model.events import OK, SEND
from kchaos.model.history_files import read_staging
from kchaos.model.replica_records import REPLICA_SCHEMA
from kchaos.model.run_files import RunDir
from kchaos.runner.outcome import check_and_report

log = logging.getLogger(__name__)

#: How long the run writes before its history is copied for the warm-up: long enough to hold sends, reads
#: and the run's first fault rows of every kind the workload writes, early enough to be done long before a
#: default run's writing ends.
WARM_AFTER_S = 3.0
#: How long a run's own check waits for an unfinished warm-up: a JVM that is still compiling the warm-up's
#: queries would only make the check wait on a lock.
JOIN_TIMEOUT_S = 60.0
#: The warm-up's copy of the run, inside the run directory: whatever ends the process, nothing of it is
#: left anywhere else (it is removed when the warm-up ends).
SCRATCH_NAME = ".warm-check"
#: The brokers of the warm-up's stand-in replica dumps: a default cluster's.
STAND_IN_BROKERS = 3


def needs_warming(spark_url: str) -> bool:
    """A local master in a process with no session yet: only then is there a JVM to start early."""
    return spark_url.startswith("local") and SparkContext._active_spark_context is None


class WarmCheck:
    """Starts the session, then checks and reports a copy of the run's history so far, in a thread of its
    own. `wait` before the run's own check; `close` when the run ends, however it ends."""

    def __init__(
        self,
        run_dir: Path,
        spark_url: str,
        history_rows: int | None,
        driver_memory: str = DEFAULT_DRIVER_MEMORY,
    ) -> None:
        self.run = RunDir(run_dir)
        self.scratch = RunDir(run_dir / SCRATCH_NAME)
        self.spark_url = spark_url
        self.history_rows = history_rows
        self.driver_memory = driver_memory
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._warm, name="warm-check", daemon=True)

    def start(self) -> WarmCheck:
        self._thread.start()
        return self

    def wait(self) -> None:
        """Returns once the warm-up is over (or after `JOIN_TIMEOUT_S`); one still waiting for the history
        to grow gives up at once."""
        self._stop.set()
        if self._thread.ident is not None:
            self._thread.join(JOIN_TIMEOUT_S)

    def close(self) -> None:
        """Ends the warm-up now, its Spark jobs cancelled: the run failed or was stopped, and nothing
        waits for its verdict."""
        self._stop.set()
        if self._thread.is_alive() and SparkContext._active_spark_context is not None:
            SparkContext._active_spark_context.cancelAllJobs()
        if self._thread.ident is not None:
            self._thread.join(JOIN_TIMEOUT_S)
        shutil.rmtree(self.scratch.path, ignore_errors=True)

    def _warm(self) -> None:
        started = time.monotonic()
        try:
            spark_session(self.spark_url, self.driver_memory, history_rows=self.history_rows)
            if self._stop.wait(WARM_AFTER_S) or not copy_so_far(self.run, self.scratch):
                return
            write_stand_in_replicas(self.scratch)
            check_and_report(self.scratch.path, self.spark_url, max_examples=1)
            log.info("the check's session is warm after %.1f s", time.monotonic() - started)
        except Exception:  # the run's own check starts the session itself if it must
            log.warning("warming the check's session failed", exc_info=True)
        finally:
            shutil.rmtree(self.scratch.path, ignore_errors=True)


def copy_so_far(run: RunDir, scratch: RunDir) -> bool:
    """Copies the run's configuration, plan and the whole lines of its staged history into `scratch`;
    False when there is no staged history yet."""
    staging = run.history_staging
    if not staging.is_file() or not run.config.is_file():
        return False
    text = staging.read_bytes()
    whole = text[: text.rfind(b"\n") + 1]
    if not whole:
        return False
    scratch.history.mkdir(parents=True, exist_ok=True)
    scratch.history_staging.write_bytes(whole)
    shutil.copyfile(run.config, scratch.config)
    if run.schedule.is_file():
        shutil.copyfile(run.schedule, scratch.schedule)
    return True


def write_stand_in_replicas(scratch: RunDir) -> None:
    """The copy's replica dumps (`stand_in_replicas`), from its history."""
    scratch.replicas.mkdir(parents=True, exist_ok=True)
    pq.write_table(stand_in_replicas(read_staging(scratch.history_staging)), scratch.replicas_parquet)


def stand_in_replicas(history: pa.Table, brokers: int = STAND_IN_BROKERS) -> pa.Table:
    """Replica records as `brokers` brokers that agree would hold them: one per acknowledged send, at the
    offset it was acknowledged at, on each broker. Only the warm-up checks them: they make its check take
    the replica passes (the screen, the by-offset pass) that the run's own check takes after the dump."""
    acknowledged = pc.and_(
        pc.and_(pc.equal(history["f"], SEND), pc.equal(history["type"], OK)), pc.is_valid(history["offset"])
    )
    sends = history.filter(acknowledged)
    columns = {
        "topic": sends["topic"],
        "partition": sends["partition"].cast(pa.int32()),
        "offset": sends["offset"],
        "key": sends["key"],
        "value": sends["value"],
    }
    copies = [
        pa.table(
            {
                "broker": pa.array([broker] * sends.num_rows, pa.int32()),
                **columns,
                "leader_epoch": pa.array([0] * sends.num_rows, pa.int32()),
            }
        ).select(REPLICA_SCHEMA.names)
        for broker in range(1, brokers + 1)
    ]
    return pa.concat_tables(copies).cast(REPLICA_SCHEMA)
