"""How a `kchaos` command fails: its exit statuses, and one line saying what failed and the fix.

Exit status 1 means a violation and nothing else, so CI can fail on a broken guarantee alone; everything
the harness could not do exits 2. A failure never prints a traceback: that goes to the run's
`logs/harness.log`, or to the terminal too with `kchaos --debug`.
"""

from __future__ import annotations

import os
import sys
import time
import traceback
from pathlib import Path
from typing import Any, NoReturn

import click

from kchaos.checkers.runtime.java_home import JavaHomeError, java_home_problem
from kchaos.model.run_files import RunDir, irregular
from kchaos.model.spark_settings import (
    SPARK_REMOTE_SCHEME,
    checked_driver_memory,
    checked_spark_master,
    spark_url,
)
from kchaos.model.terminal_text import printable

EXIT_VIOLATION = 1
EXIT_HARNESS_ERROR = 2

#: The option of `kchaos` itself (before the command) that shows a harness failure's traceback on the
#: terminal as well: an option rather than an environment variable, so installing kchaos reads none.
DEBUG_OPTION = "--debug"
#: `ctx.meta` key: the `--debug` the command was given.
_DEBUG = "kchaos.debug"

#: `ctx.meta` key: the run directory the command works in, where a failure's traceback is kept.
_RUN_DIR = "kchaos.run_dir"


def fail(message: str) -> NoReturn:
    """Exits 2 with `message` in red on stderr, prefixed `kchaos:`; control characters from data (a
    record value, a file name) are shown escaped (`kchaos.model.terminal_text`)."""
    click.secho(printable(f"kchaos: {message}", newlines=True), fg="red", err=True)
    sys.exit(EXIT_HARNESS_ERROR)


def set_debug(ctx: click.Context, debug: bool) -> None:
    """Keeps `kchaos --debug` where a failure of any command reads it."""
    ctx.meta[_DEBUG] = debug


def _debug() -> bool:
    ctx = click.get_current_context(silent=True)
    return bool(ctx is not None and ctx.meta.get(_DEBUG))


def working_in(run_dir: Path) -> None:
    """Names the run directory a failure from here on belongs to; its logs/harness.log gets the traceback."""
    click.get_current_context().meta[_RUN_DIR] = run_dir


def _keep_traceback(exc: BaseException, run_dir: Path | None) -> Path | None:
    """Appends the traceback to the run's harness.log; returns that path, or None without a run directory."""
    if run_dir is None or not run_dir.is_dir():
        return None
    path = RunDir(run_dir).harness_log
    try:
        path.parent.mkdir(exist_ok=True)
        with path.open("a", encoding="utf-8") as fh:
            fh.write(f"{time.strftime('%Y-%m-%d %H:%M:%S')} ERROR kchaos.runner.cli: kchaos failed\n")
            fh.write("".join(traceback.format_exception(exc)))
    except OSError:
        return None
    return path


def harness_failed(exc: BaseException, what: str, run_dir: Path | None) -> NoReturn:
    """Exits 2 with `what` failed, the run directory and where the traceback is; no traceback here."""
    lines = [what]
    log = _keep_traceback(exc, run_dir)
    if run_dir is not None and run_dir.is_dir():
        lines.append(f"run directory: {run_dir}")
    if log is not None:
        lines.append(f"harness log (with the traceback): {log}")
    elif not _debug():
        lines.append(f"for the traceback, run again as kchaos {DEBUG_OPTION} ...")
    if _debug():
        traceback.print_exception(exc, file=sys.stderr)
    fail("\n".join(lines))


class KchaosGroup(click.Group):
    """Turns whatever escapes a command into a harness failure (exit 2, one line, no traceback), so exit
    status 1 always means a violation. Click's own errors and exits pass through unchanged."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.ClickException, click.exceptions.Exit):
            raise
        except BrokenPipeError:
            reader_gone()
        except JavaHomeError as exc:  # a Spark session refused to start its JVM; commands ask before that
            fail(str(exc))
        except (KeyboardInterrupt, click.Abort):
            run_dir = ctx.meta.get(_RUN_DIR)
            fail("interrupted" + (f" (run directory: {run_dir})" if run_dir else ""))
        except Exception as exc:
            harness_failed(exc, f"the harness failed: {_named(exc)}", ctx.meta.get(_RUN_DIR))


def reader_gone() -> NoReturn:
    """Exits 0 quietly: whoever read the output closed the pipe (`kchaos faults | head -1`).

    A reader that has seen enough is no failure of the harness; exiting 2 with a message would fail a
    `set -o pipefail` script for nothing. Standard output is pointed at /dev/null first, so the
    interpreter's last flush at exit does not raise the same error again.
    """
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # no real file descriptor (output captured in a test): nothing to flush
        pass
    sys.exit(0)


def _named(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def require_engine() -> None:
    """Fails with the fix unless a Docker engine answers; before anything is created that it would need."""
    from kchaos.harness.engine import EngineError
    from kchaos.harness.engine import require_engine as engine_answers

    try:
        engine_answers()
    except EngineError as exc:
        fail(str(exc))


def require_java(spark_at: str | None = None) -> None:
    """Fails with the fix when `$JAVA_HOME` names no Java: before Spark starts, which would die of it with
    shell errors and JAVA_GATEWAY_EXITED, and before a run spends its cluster on a history it cannot check.
    A check on a Spark Connect server (`spark_at` sc://...) starts no JVM here, so needs none; the server
    must answer instead (`require_spark_server`)."""
    if spark_at is not None and spark_at.startswith(SPARK_REMOTE_SCHEME):
        require_spark_server(spark_at)
        return
    problem = java_home_problem()
    if problem is not None:
        fail(problem)


def require_spark_server(url: str) -> None:
    """Fails with the fix unless the Spark Connect server at `url` accepts a connection within a few
    seconds: before a run starts, or a check or report. Spark's client waited 10 minutes and more in
    silence for one that was not there, and a run spent its cluster on a history it then could not check."""
    from kchaos.checkers.runtime.spark_server import ANSWER_SECONDS, answer_problem

    problem = answer_problem(url)
    if problem is not None:
        fail(
            f"--spark-remote {url}: no Spark Connect server answers there ({problem}, within "
            f"{ANSWER_SECONDS:g} s); start one with `kchaos spark-server` (it prints the URL to give), or "
            "leave --spark-remote out to check in a JVM of the command's own"
        )


def spark_place(spark_master: str, spark_remote: str | None) -> str:
    """Where a command's check runs (`kchaos.model.config.spark_url`): the Spark Connect server when
    `--spark-remote` is given, else the master; a malformed `--spark-master` or `--spark-remote` fails the
    command, naming it, before anything starts (not Spark, after a whole matrix)."""
    try:
        checked_spark_master(spark_master)
    except ValueError as exc:
        fail(f"--spark-master {exc}")
    try:
        return spark_url(spark_master, spark_remote)
    except ValueError as exc:
        fail(str(exc).replace("spark_remote:", "--spark-remote:", 1))


def driver_memory(value: str) -> str:
    """`--spark-driver-memory`'s value when it is a JVM heap size; else the command fails, naming the flag
    and what a size looks like, before Spark starts."""
    try:
        return checked_driver_memory(value)
    except ValueError as exc:
        fail(f"--spark-driver-memory {exc}")


def require_runs_dir(runs_dir: Path, flag: str = "--runs-dir") -> None:
    """Fails with the fix unless `runs_dir` is a folder that runs can be written into, or one that can be
    created: a file there (`--runs-dir /etc/passwd`) or on its way, or a folder that is not writable, failed
    as a bare NotADirectoryError or PermissionError once the run started. Looks only, creates nothing."""
    fix = f"name a folder for the run directories (created if missing), e.g. {flag} runs"
    kind = irregular(runs_dir)
    if runs_dir.exists() and kind != "a directory":
        fail(f"{flag} {runs_dir} is {kind or 'a file'}, not a folder; {fix}")
    existing = next(path for path in (runs_dir, *runs_dir.absolute().parents) if path.exists())
    if existing != runs_dir and not existing.is_dir():
        fail(
            f"{flag} {runs_dir} cannot be created: {existing} is {irregular(existing) or 'a file'}, not a "
            f"folder; {fix}"
        )
    if not os.access(existing, os.W_OK | os.X_OK):
        what = "is not writable" if existing == runs_dir else f"cannot be created: {existing} is not writable"
        fail(f"{flag} {runs_dir} {what}; make it writable (chmod u+w {existing}), or {fix}")
