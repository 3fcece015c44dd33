"""Where Spark's local JVM prints: a file of this process, copied into each checked run's harness.log.

The JVM pyspark starts inherited the terminal, so every run's verdict came after lines of the JVM's own
(`WARNING: Using incubator modules: jdk.incubator.vector`, log4j's `WARN SparkSession: Using an existing
Spark session`), none of which a user can act on. Its stdout and stderr go to a file instead. One JVM
serves every check in a process (a test session, a matrix), so the file cannot be one run's: each check
copies what the JVM wrote since the last one into its own run's `logs/harness.log`
(`jvm_output_into`), where a JVM error is still found next to the run's other logs.

A JVM started by someone else (`spark-submit`, which hands pyspark a running gateway) prints where its
starter decided; nothing here touches it.
"""

from __future__ import annotations

import datetime as dt
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

#: Each copied line is marked as the JVM's, in harness.log's own format.
_SOURCE = "spark-jvm"


class JvmOutput:
    """An unnamed file the JVM appends to, and a reader of it that remembers how far it has read.

    The file is unlinked at once: it lives as long as this process and its JVM hold it open, and leaves
    nothing in the temporary directory. The JVM's handle appends (O_APPEND), so the reader's position,
    an open file of its own, never moves where the JVM writes."""

    def __init__(self) -> None:
        fd, path = tempfile.mkstemp(prefix="kchaos-spark-jvm-", suffix=".log")
        os.close(fd)
        try:
            self.sink: IO[bytes] = open(path, "ab")  # noqa: SIM115 - held for the JVM's lifetime
            self._reader: IO[bytes] = open(path, "rb")  # noqa: SIM115
        finally:
            os.unlink(path)

    def popen_kwargs(self) -> dict[str, Any]:
        """What `pyspark.java_gateway.launch_gateway` passes to the JVM's Popen: both streams here."""
        return {"stdout": self.sink, "stderr": self.sink}

    def unread(self) -> str:
        """What the JVM wrote since the last call."""
        self.sink.flush()
        return self._reader.read().decode("utf-8", errors="replace")


_OUTPUT: JvmOutput | None = None


def jvm_output() -> JvmOutput:
    """The process's one JVM output file, made on first use."""
    global _OUTPUT
    if _OUTPUT is None:
        _OUTPUT = JvmOutput()
    return _OUTPUT


def copy_unread(log: Path) -> None:
    """Appends what the JVM wrote since the last copy to `log`, each line marked as the JVM's."""
    if _OUTPUT is None:
        return  # no JVM started by this process
    text = _OUTPUT.unread()
    if not text.strip():
        return
    stamp = dt.datetime.now().strftime("%Y-%m-%d %H:%M:%S,%f")[:-3]
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("a", encoding="utf-8") as out:
        out.writelines(f"{stamp} INFO {_SOURCE}: {line}\n" for line in text.splitlines() if line.strip())


@contextmanager
def jvm_output_into(log: Path) -> Iterator[None]:
    """Copies what the JVM writes during the block (and any left since the last copy) to `log`, also when
    the block fails: a JVM's error belongs with the run it failed."""
    try:
        yield
    finally:
        copy_unread(log)
