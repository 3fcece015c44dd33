"""How `kchaos run` shows a run's progress: in one line rewritten in place on a terminal, as its
milestones alone anywhere else.

A default run printed sixteen progress lines before its verdict, a status line every ten seconds among
them, so the verdict scrolled away from its own command. On a terminal every message now rewrites one
status line (carriage return, line cleared), which is cleared when the run ends; where output is not a
terminal (CI, a pipe, a file) only milestones (`kchaos.model.progress.Milestone`: what the run is about to
do, and what went wrong on the way) are printed, each on a line of its own, on a terminal too. Every
message, shown or not, is in the run's `logs/harness.log` (`kchaos.runner.run.execute` writes it there).
"""

from __future__ import annotations

import shutil
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import TracebackType
from typing import TextIO

import click

from kchaos.model.progress import Milestone, fit_line

#: Back to the start of the line, then erase it: what rewrites the status line in place.
_REWRITE = "\r\x1b[K"


class ProgressEcho:
    """A progress callback for a terminal, or for whatever stdout is; used as a context manager, so the
    status line is gone before anything after the run (its outcome, or a failure) is printed.

    `tty` None asks stdout whether it is a terminal. The status line is cut to the terminal's width: one
    that wrapped could not be rewritten in place. The ticker thread and the run's thread both report, so a
    lock keeps their lines whole."""

    def __init__(self, stream: TextIO | None = None, tty: bool | None = None) -> None:
        self.stream: TextIO = stream if stream is not None else sys.stdout
        self.tty = self.stream.isatty() if tty is None else tty
        self._lock = threading.Lock()
        self._status_shown = False

    def __call__(self, message: str) -> None:
        with self._lock:
            if isinstance(message, Milestone):
                self._clear()
                click.echo(f"* {message}", file=self.stream)
            elif self.tty:
                width = max(20, shutil.get_terminal_size().columns - 1)
                line = "* " + fit_line(message, width - 2)
                click.echo(_REWRITE + line, file=self.stream, nl=False, color=True)
                self.stream.flush()
                self._status_shown = True

    @contextmanager
    def aside(self) -> Iterator[None]:
        """Clears the status line and keeps it clear while the block prints lines of its own (a run's
        verdict, shown while its report is still being written)."""
        with self._lock:
            self._clear()
            yield

    def _clear(self) -> None:
        if self._status_shown:
            click.echo(_REWRITE, file=self.stream, nl=False, color=True)
            self.stream.flush()
            self._status_shown = False

    def __enter__(self) -> ProgressEcho:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        with self._lock:
            self._clear()
