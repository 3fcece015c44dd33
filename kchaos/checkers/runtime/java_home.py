"""Whether the JAVA_HOME a local Spark session would start its JVM from can start one.

PySpark launches `spark-submit`, whose `spark-class` runs `$JAVA_HOME/bin/java` whenever JAVA_HOME is set
(the `java` on PATH only when it is not). A JAVA_HOME pointing at no Java showed as shell errors and
`JAVA_GATEWAY_EXITED` after Spark's start-up; this names the variable and the fix before anything starts.
Kept free of PySpark, so a command can ask before it imports Spark.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

JAVA_HOME_ENV = "JAVA_HOME"

#: Set by spark-submit for the Python driver it launches: the JVM is already running, JAVA_HOME is spent.
GATEWAY_PORT_ENV = "PYSPARK_GATEWAY_PORT"


def java_home_problem() -> str | None:
    """What is wrong with `$JAVA_HOME` and the fix, or None when it is unset, empty, names a Java, or the JVM
    is already running (under spark-submit)."""
    home = os.environ.get(JAVA_HOME_ENV, "")
    if not home or os.environ.get(GATEWAY_PORT_ENV):
        return None
    java = Path(home) / "bin" / "java"
    if java.is_file() and os.access(java, os.X_OK):
        return None
    if not Path(home).exists():
        why = f"{home} does not exist"
    elif not Path(home).is_dir():
        why = f"{home} is a file, not a folder"
    elif not java.is_file():
        why = f"there is no file {java}"
    else:
        why = f"{java} is not executable"
    return (
        f"JAVA_HOME={home} names no Java ({why}), and Spark starts its JVM from $JAVA_HOME/bin/java; "
        "unset JAVA_HOME to use the java on PATH, or point it at a JDK or JRE 17 or newer"
    )


def session_java() -> Path | None:
    """The `java` a local session starts, resolved: `$JAVA_HOME/bin/java` when JAVA_HOME is set and names
    one, else the PATH's; None when there is neither."""
    home = os.environ.get(JAVA_HOME_ENV, "")
    java = Path(home) / "bin" / "java" if home else None
    if java is None or not java.is_file():
        found = shutil.which("java")
        java = Path(found) if found else None
    return java.resolve() if java is not None else None


class JavaHomeError(RuntimeError):
    """`$JAVA_HOME` cannot start the JVM a local Spark session needs; the message says why and the fix."""


def require_java_home() -> None:
    """Raises `JavaHomeError` naming what is wrong with `$JAVA_HOME` and the fix, if anything is."""
    problem = java_home_problem()
    if problem is not None:
        raise JavaHomeError(problem)
