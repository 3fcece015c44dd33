"""The history as a client process records into it: rows stamped with the time the process itself said.

A client process (a Java or librdkafka worker in a container of its own) prints a line per event, and the
harness records the line when it arrives, a few milliseconds later and in no order against the harness's
own threads. Stamped at arrival, a worker's `txn-commit` invoke could be recorded after a reader in the
harness returned the committed record, and the read would look uncommitted. So each line carries the
worker's reading of the host's monotonic clock (`System.nanoTime()`, Python's `time.monotonic_ns()`: both
CLOCK_MONOTONIC, one clock for every process on the host, containers included), taken as the event
happened, and that reading is the row's `time_ns`. Checks that order events of different processes
(`kchaos.checkers.passes.transaction_passes`: a read before the commit was asked for) compare `time_ns`, not
`index`.
"""

from __future__ import annotations

from dataclasses import dataclass

from kchaos.model.events import Event, takes_fields_of
from kchaos.model.history import HistoryWriter


@dataclass(frozen=True)
class StampedRows:
    """Records events into `history` stamped `time_ns` (when a client process said they happened)."""

    history: HistoryWriter
    time_ns: int

    def write(self, event: Event) -> int:
        """Records one event at this stamp; returns its index."""
        return self.history.write(event, at_ns=self.time_ns)

    #: `write` for callers that spell the event: `record(process, type, f, topic=..., value=...)`.
    record = takes_fields_of(Event)(write)
