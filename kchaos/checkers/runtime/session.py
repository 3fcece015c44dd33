"""The Spark session the checkers and reports share.

The harness runs on small machines next to a Kafka cluster it is abusing, so Spark gets a modest,
local footprint: two cores, a handful of shuffle partitions (histories are millions of rows, not
billions; the default of 200 partitions would be all overhead), no UI port to collide with, and a
log level that leaves the run's own output readable.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import warnings
from collections.abc import Mapping
from pathlib import Path

from pyspark import SparkConf, SparkContext
from pyspark.java_gateway import launch_gateway
from pyspark.sql import SparkSession

from kchaos.checkers.runtime.class_archive import dump_option, use_option
from kchaos.checkers.runtime.java_home import require_java_home
from kchaos.checkers.runtime.jvm_output import jvm_output
from kchaos.model.config import DEFAULT_DRIVER_MEMORY, DEFAULT_SPARK_MASTER
from kchaos.model.spark_settings import SPARK_REMOTE_SCHEME

APP_NAME = "kchaos"

#: Where a local session's driver, and `kchaos spark-server`, listen.
LOOPBACK = "127.0.0.1"

#: A local JVM's driver, a check's own or `kchaos spark-server`'s, never needs a routable address: it binds
#: to loopback and says so, which exposes no port on the host's networks. Settings, not `SPARK_LOCAL_IP`,
#: so that the process's environment (a pytest suite hosting the plugin, say) is left as it was.
LOOPBACK_DRIVER_CONF = {"spark.driver.host": LOOPBACK, "spark.driver.bindAddress": LOOPBACK}

#: The collector of a local session's JVM. Checking is batch work: throughput, not pause times, decides how
#: long a check takes, and the JVM's default (G1) spends a fifth more of a 10M-send check than the parallel
#: collector does on two cores (`bench/RESULTS.md`). Only a local JVM gets it: on a cluster the executors'
#: JVMs, which the cluster configures, do the work.
LOCAL_GC_OPTION = "-XX:+UseParallelGC"

#: The setting a check's history size decides (`sized`).
SHUFFLE_PARTITIONS = "spark.sql.shuffle.partitions"

#: The SQL settings every check runs with, wherever its session lives (a JVM started here, a cluster, or a
#: Spark Connect server, where they are set on the session).
SQL_CONF = {
    # Histories are millions of rows, not billions: a handful of partitions on two cores.
    SHUFFLE_PARTITIONS: "4",
    # Adaptive execution re-plans a query at each exchange, running each stage as a job of its own: an
    # ordinary run's check ran 52 jobs with it and 31 without, at a tenth of a second or more each,
    # and the passes' exchanges are explicit and their partitions few, so it has nothing to adapt
    # (a 10M-send check took as long either way, `bench/RESULTS.md`).
    "spark.sql.adaptive.enabled": "false",
    "spark.sql.session.timeZone": "UTC",
}

#: The static settings a check runs with: fixed when the JVM starts, so a session on a Spark Connect server
#: cannot set them; a local session and `kchaos spark-server` start with them.
STATIC_CONF = {
    # PySpark 4 wraps every DataFrame and column function to send the Python call site to the JVM for
    # error messages: five calls into the JVM and a walk of the Python stack each, some 5,500 of a default
    # run's 9,000 JVM calls and about 1 s of its check. A check's failures name their anomaly without it.
    "spark.python.sql.dataFrameDebugging.enabled": "false",
}

#: The shuffle partitions of a check of a small history (`SMALL_HISTORY_ROWS`), in place of `SQL_CONF`'s: a
#: pass over such a history is mostly fixed cost per task, and a second partition only doubles it. One
#: took about 1.3 s off the one job of a default run's counts (60,015 history rows) and was no slower at
#: 1M rows (27.4 s against 29.7 s for the whole check, `docs/benchmark.md`).
SMALL_HISTORY_SHUFFLE_PARTITIONS = "1"

#: Log4j2 configuration for the driver JVM. Spark prints its startup chatter (default profile,
#: native-hadoop loader) before `setLogLevel` can run, so the level must be set when the JVM starts.
_LOG4J2 = """\
rootLogger.level = warn
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n
logger.hadoop.name = org.apache.hadoop
logger.hadoop.level = error
logger.sparkutils.name = org.apache.spark.util.Utils
logger.sparkutils.level = error
"""


def log4j2_file() -> Path:
    """Writes the log configuration once per machine; a fixed name keeps repeated runs from littering /tmp."""
    path = Path(tempfile.gettempdir()) / "kchaos-spark-log4j2.properties"
    if not path.exists() or path.read_text(encoding="utf-8") != _LOG4J2:
        path.write_text(_LOG4J2, encoding="utf-8")
    return path


#: The JIT of a local JVM that checks a small history: the quick compiler only. Such a JVM lives seconds,
#: which the optimizing compiler (C2) spends compiling code that never runs long enough to pay it back; on
#: a big history C2's code is what makes the check fast (`bench/RESULTS.md`: a default run's check took
#: about 3 s less with C1 only, a 10M-send check 224 s against 127 s).
QUICK_JIT_OPTION = "-XX:TieredStopAtLevel=1"

#: Up to how many history rows a history is small: its local JVM gets `QUICK_JIT_OPTION` (C1 alone still
#: checked 1M sends, 4M history rows and 3M replica rows, as fast as C1 and C2 together, so this is well
#: inside what it gains on), and its check `SMALL_HISTORY_SHUFFLE_PARTITIONS`.
SMALL_HISTORY_ROWS = 1_000_000


def spark_session(
    master: str | None = DEFAULT_SPARK_MASTER,
    driver_memory: str = DEFAULT_DRIVER_MEMORY,
    history_rows: int | None = None,
    dump_classes: Path | None = None,
) -> SparkSession:
    """Returns the process's Spark session, creating it on first use.

    `getOrCreate` means every checker and report in one process shares one JVM; settings only take
    effect for the call that actually starts it, which is why they are all fixed here.

    `master` None leaves the master to whoever launched Python: `spark-submit --master URL` (see
    `kchaos/runner/submit.py`), else PySpark's own default. `driver_memory` (`--spark-driver-memory`,
    1g unless told) sizes the heap of a JVM this call starts; under spark-submit, whose JVM is running before
    this is called, its `--driver-memory` decides. 1g checks a few million history rows comfortably; beyond
    that the sorts spill to disk, which is slower but still correct. `history_rows`, the size of the history
    the session is started for, when known, chooses the local JVM's compiler (`SMALL_HISTORY_ROWS`); in a
    process that checks several runs (a matrix) the first one decides. It also sets the session's shuffle
    partitions (`sized`), a runtime setting, so there each check's own history decides. A `$JAVA_HOME` with no
    Java raises `JavaHomeError` before any JVM. A local JVM maps in the class-data archive when there is one
    (`kchaos.checkers.runtime.class_archive`); `dump_classes` makes it write one there instead, when it exits
    (`end_local_jvm`).
    """
    if master is not None and master.startswith(SPARK_REMOTE_SCHEME):
        return sized(remote_session(master), history_rows)
    if SparkContext._active_spark_context is None:  # a JVM is about to start from $JAVA_HOME
        require_java_home()
    local = master is not None and master.startswith("local")
    _quiet_pandas_warning()
    java_options = [f"-Dlog4j2.configurationFile=file:{log4j2_file()}"]
    if local:
        java_options.append(LOCAL_GC_OPTION)
        java_options += dump_option(dump_classes) if dump_classes else use_option(LOCAL_GC_OPTION)
        if history_rows is not None and history_rows <= SMALL_HISTORY_ROWS:
            java_options.append(QUICK_JIT_OPTION)
    options: dict[str, bool | float | int | str | None] = {
        **({"spark.master": master} if master is not None else {}),
        "spark.app.name": APP_NAME,
        "spark.driver.memory": driver_memory,
        **SQL_CONF,
        **STATIC_CONF,
        **(LOOPBACK_DRIVER_CONF if local else {}),
        "spark.default.parallelism": "2",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        # How long the JVM waits for Python to fetch a collect()'s rows (default 15 s): on two cores shared
        # with three brokers a starved driver took longer once, and the collect failed with "connection
        # refused" in the middle of a check.
        "spark.python.authenticate.socketTimeout": "120s",
        "spark.driver.extraJavaOptions": " ".join(java_options),
    }
    _start_jvm(options)
    spark = SparkSession.builder.config(map=options).getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    return sized(spark, history_rows)


def sized(spark: SparkSession, history_rows: int | None) -> SparkSession:
    """`spark`, its shuffle partitions set for checking a history of `history_rows` rows: one for a small
    history (`SMALL_HISTORY_SHUFFLE_PARTITIONS`), else `SQL_CONF`'s. Left as it is when the size is not
    known (a report, which follows its run's check in the same session)."""
    if history_rows is not None:
        small = history_rows <= SMALL_HISTORY_ROWS
        partitions = SMALL_HISTORY_SHUFFLE_PARTITIONS if small else SQL_CONF[SHUFFLE_PARTITIONS]
        spark.conf.set(SHUFFLE_PARTITIONS, partitions)
    return spark


def remote_session(url: str) -> SparkSession:
    """A session on the Spark Connect server at `url` (`sc://HOST:PORT`): no JVM starts in this process,
    the server's does the work. It reads the run directory's files itself, so it must see them at the same
    paths (a server on this machine does: `kchaos spark-server`). The check's SQL settings are set on the
    session; memory and parallelism are the server's."""
    _quiet_pandas_warning()
    spark = SparkSession.builder.remote(url).getOrCreate()
    for key, value in SQL_CONF.items():
        spark.conf.set(key, value)
    return spark


def _quiet_pandas_warning() -> None:
    """PySpark warns about pandas 3 at session start; the checkers never hand data to pandas through
    Spark (only small collected series), so the warning is noise in every run's output."""
    warnings.filterwarnings(
        "ignore", message="PySpark does not yet fully support pandas", category=FutureWarning
    )


def _start_jvm(options: Mapping[str, bool | float | int | str | None]) -> None:
    """Starts the JVM with `options`, its stdout and stderr in the process's JVM output file
    (`kchaos.checkers.runtime.jvm_output`), unless this process has one already or was handed one by
    spark-submit; `getOrCreate` then uses it. A JVM that does not start raises with what it printed."""
    if SparkContext._gateway is not None or "PYSPARK_GATEWAY_PORT" in os.environ:
        return
    output = jvm_output()
    conf = SparkConf(loadDefaults=False).setAll([(key, str(value)) for key, value in options.items()])
    try:
        gateway = launch_gateway(conf, popen_kwargs=output.popen_kwargs())  # type: ignore[no-untyped-call]
    except Exception as exc:
        raise RuntimeError(
            f"Spark's JVM did not start ({exc}); it printed:\n{output.unread()[-4000:]}"
        ) from exc
    SparkContext._ensure_initialized(gateway=gateway)


def end_local_jvm(timeout: float) -> int | None:
    """Stops the session and ends the JVM this process started, waiting up to `timeout` seconds for it to
    exit (it writes a class-data archive asked for first); its exit code, None if it did not end in time
    or this process started none. PySpark's JVM ends when its stdin closes, which is otherwise when Python
    exits, without waiting for it."""
    process = getattr(SparkContext._gateway, "proc", None)
    if SparkContext._active_spark_context is not None:
        SparkContext._active_spark_context.stop()
    if process is None or process.stdin is None:
        return None
    process.stdin.close()
    try:
        return int(process.wait(timeout))
    except subprocess.TimeoutExpired:
        return None
