"""The proxy's events: one JSON object a line, numbered, sent to every connected control client and appended
to the events file.

The file is the record: it is flushed after every line, so a controller that disconnects, or a proxy that
is stopped, loses nothing the proxy saw. The control clients get the same lines live, so a scenario can
wait for a `held` without polling. `seq` numbers the events in the order the proxy emitted them, across
connections, so the lead can order them without trusting clocks; `at` is time.time() for the history.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any, TextIO


class EventLog:
    """Numbers, writes and broadcasts events."""

    def __init__(self, path: Path | None) -> None:
        self.seq = 0
        self._file: TextIO | None = path.open("a", encoding="utf-8") if path is not None else None
        self._listeners: set[asyncio.StreamWriter] = set()

    def listen(self, writer: asyncio.StreamWriter) -> None:
        self._listeners.add(writer)

    def forget(self, writer: asyncio.StreamWriter) -> None:
        self._listeners.discard(writer)

    def emit(self, event: str, **fields: Any) -> dict[str, Any]:
        """Records one event; returns it as written."""
        self.seq += 1
        record = {"event": event, "seq": self.seq, "at": time.time(), **fields}
        line = json.dumps(record, sort_keys=True) + "\n"
        if self._file is not None:
            self._file.write(line)
            self._file.flush()
        for writer in list(self._listeners):
            if writer.is_closing():
                self._listeners.discard(writer)
                continue
            try:
                writer.write(line.encode("utf-8"))
            except (ConnectionError, RuntimeError) as error:
                print(f"request proxy: a control client went away: {error}", file=sys.stderr)
                self._listeners.discard(writer)
        return record

    def close(self) -> None:
        if self._file is not None:
            self._file.flush()
            self._file.close()
            self._file = None
