"""Where and how a check runs Spark: the master URLs Spark accepts, a Spark Connect server's URL, the
driver's heap. Checked as the settings are read, so a typo fails before a run or a check starts rather than
when Spark is asked, after the whole run.

Pure (no Spark import): the configuration and the commands check these values; the judge's runtime
(`kchaos.checkers.runtime`) uses them.
"""

from __future__ import annotations

import re

#: Where a check runs unless told otherwise: Spark inside this process, on two cores, which leaves the rest
#: of a small machine to the brokers of the run beside it. The one spelling of it: every default names this.
DEFAULT_SPARK_MASTER = "local[2]"
#: The driver JVM's heap when nothing asks for more (a check's own JVM, `kchaos spark-server`). Local Spark
#: runs its executors inside the driver, so this is all the memory checking gets; it stays small because the
#: brokers of a run may share the machine.
DEFAULT_DRIVER_MEMORY = "1g"

#: The master URLs Spark accepts (local mode with threads and max failures, standalone, YARN, Kubernetes,
#: Mesos); anything else fails only when the check starts, after the whole run.
SPARK_MASTER = re.compile(
    r"local(\[(\*|[1-9][0-9]*)(,[1-9][0-9]*)?\])?"
    r"|spark://[^\s/:,]+:[0-9]+(,[^\s/:,]+:[0-9]+)*"
    r"|yarn|k8s://\S+|mesos://\S+"
)
#: What a Spark Connect server's URL starts with (`--spark-remote`, `kchaos spark-server`).
SPARK_REMOTE_SCHEME = "sc://"
#: The port `kchaos spark-server` listens on unless told: Spark Connect's own default.
SPARK_SERVER_PORT = 15002
#: A Spark Connect server's URL: `sc://HOST:PORT`, optionally followed by `/;key=value;...` parameters.
SPARK_REMOTE = re.compile(r"sc://[^\s/:]+:[0-9]+(/;\S*)?")


#: A JVM heap size as the flags take it: ASCII digits then m or g (256m, 1g). `str.isdigit` also takes
#: digits of other scripts (a fullwidth one), which the JVM refuses, exiting 1 as if it were a violation.
_JVM_SIZE = re.compile(r"([0-9]+)([mMgG])")
#: The largest heap kchaos passes on, in megabytes (1 TiB): a bigger one (`99999999999g`) is a typo that the
#: JVM refuses only after starting.
MAX_HEAP_MB = 1024 * 1024


def is_jvm_size(value: str) -> bool:
    """A JVM heap size as the flags take it: digits then m or g (256m, 1g), not 0 and at most 1 TiB."""
    size = jvm_size_mb(value)
    return size is not None and 0 < size <= MAX_HEAP_MB


def jvm_size_mb(value: str) -> int | None:
    """A JVM heap size (`256m`, `1g`) in MiB, None when it is not one (`_JVM_SIZE`: ASCII digits only)."""
    match = _JVM_SIZE.fullmatch(value)
    if match is None:
        return None
    return int(match.group(1)) * (1024 if match.group(2).lower() == "g" else 1)


def checked_spark_master(value: str) -> str:
    """`value` if it is a Spark master URL, else ValueError saying what one looks like: refused before a
    run, a check or a matrix starts, not by Spark after it."""
    if not SPARK_MASTER.fullmatch(value):
        raise ValueError(
            f"{value!r} is not a Spark master URL; use local, local[N], local[*], local[N,F] (N from 1), "
            "spark://HOST:PORT, yarn, k8s://... or mesos://..., e.g. local[2]"
        )
    return value


def checked_driver_memory(value: str) -> str:
    """`value` if it is a JVM heap size, else ValueError saying what one looks like: refused before a run
    or a check starts, not by the JVM after it."""
    if not is_jvm_size(value):
        raise ValueError(
            f"{value!r} is not a JVM heap size; use ASCII digits then m or g, more than 0 and at most "
            f"{MAX_HEAP_MB // 1024}g, e.g. 512m or 8g"
        )
    return value


def checked_spark_remote(value: str) -> str:
    """`value` if it is a Spark Connect URL, else ValueError saying what one looks like."""
    if not SPARK_REMOTE.fullmatch(value):
        raise ValueError(
            f"spark_remote: {value!r} is not a Spark Connect URL; use sc://HOST:PORT, e.g. "
            "sc://127.0.0.1:15002 (what `kchaos spark-server` serves)"
        )
    return value


def spark_url(spark_master: str, spark_remote: str | None) -> str:
    """Where a check runs: the Spark Connect server `spark_remote` when given (checked), else
    `spark_master`."""
    return spark_master if spark_remote is None else checked_spark_remote(spark_remote)
