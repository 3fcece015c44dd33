"""A builder for synthetic histories whose ground truth the test states.

Rows have exactly the shape `harness.history.HistoryWriter` records, so the same scenario can become a
DataFrame directly (fast, for checker tests) or be replayed through a real writer into a run directory
(for end-to-end tests of `check_run` and the report).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from checkers.frames import HISTORY_STRUCT
from harness.history import COLUMNS, NEMESIS_PROCESS, EventType, HistoryWriter, event_row

TOPIC = "kchaos"


class HistoryBuilder:
    """Records events in order; `index` is the order of calls, and wall time advances `step` per event."""

    def __init__(
        self, run_id: str = "test-run", start_wall: float = 1_700_000_000.0, step: float = 0.01
    ) -> None:
        self.run_id = run_id
        self.wall = start_wall
        self.step = step
        self.rows: list[dict[str, Any]] = []
        self._details: list[Mapping[str, Any] | None] = []

    def event(
        self,
        process: str,
        type: EventType,
        f: str,
        *,
        topic: str | None = None,
        partition: int | None = None,
        offset: int | None = None,
        key: str | None = None,
        value: str | None = None,
        error: str | None = None,
        detail: Mapping[str, Any] | None = None,
    ) -> int:
        index = len(self.rows)
        self.rows.append(
            event_row(
                self.run_id,
                index,
                int(index * self.step * 1e9),
                self.wall,
                process,
                type,
                f,
                topic=topic,
                partition=partition,
                offset=offset,
                key=key,
                value=value,
                error=error,
                detail=detail,
            )
        )
        self._details.append(detail)
        self.wall += self.step
        return index

    def advance(self, seconds: float) -> None:
        """Lets time pass with no events, e.g. while a fault is active."""
        self.wall += seconds

    def send(
        self,
        value: str,
        offset: int | None = None,
        *,
        partition: int = 0,
        topic: str = TOPIC,
        outcome: EventType = "ok",
        process: str = "producer-0",
        error: str | None = None,
    ) -> int:
        """An invoke and its outcome; only an `ok` says where the record landed. Returns its index."""
        self.event(process, "invoke", "send", topic=topic, partition=partition, key=value, value=value)
        if outcome == "ok":
            return self.event(
                process, "ok", "send", topic=topic, partition=partition, offset=offset, key=value, value=value
            )
        error = error or ("timed out" if outcome == "info" else "NOT_ENOUGH_REPLICAS")
        return self.event(
            process, outcome, "send", topic=topic, partition=partition, key=value, value=value, error=error
        )

    def read(
        self,
        value: str,
        offset: int,
        *,
        partition: int = 0,
        topic: str = TOPIC,
        process: str = "consumer-0",
        f: str = "poll",
    ) -> int:
        return self.event(
            process, "ok", f, topic=topic, partition=partition, offset=offset, key=value, value=value
        )

    def final_read(self, value: str, offset: int, *, partition: int = 0, topic: str = TOPIC) -> int:
        return self.read(
            value, offset, partition=partition, topic=topic, process="final-reader", f="final-read"
        )

    def fault(self, f: str, key: str, phase: str, *, kind: str, nodes: Iterable[int] = (1,)) -> int:
        """A nemesis start or stop row, shaped like the nemesis records them."""
        detail = {"kind": kind, "nodes": list(nodes), "description": f"{f} on nodes {list(nodes)}"}
        return self.event(NEMESIS_PROCESS, "info", f, key=key, value=phase, detail=detail)

    def sends(
        self, count: int, *, partition: int = 0, first_offset: int = 0, prefix: str = "v"
    ) -> list[tuple[str, int]]:
        """`count` acknowledged sends at consecutive offsets; returns (value, offset) pairs."""
        written = []
        for n in range(count):
            value, offset = f"{prefix}{partition}-{first_offset + n}", first_offset + n
            self.send(value, offset, partition=partition)
            written.append((value, offset))
        return written

    def final_reads(self, written: Iterable[tuple[str, int]], *, partition: int = 0) -> None:
        for value, offset in written:
            self.final_read(value, offset, partition=partition)

    def frame(self, spark: SparkSession) -> DataFrame:
        return spark.createDataFrame(
            [tuple(row[c] for c in COLUMNS) for row in self.rows], schema=HISTORY_STRUCT
        )

    def replay(self, writer: HistoryWriter) -> None:
        """Records every event through a real writer (which assigns its own index and clocks)."""
        for row, detail in zip(self.rows, self._details, strict=True):
            writer.record(
                row["process"],
                row["type"],
                row["f"],
                topic=row["topic"],
                partition=row["partition"],
                offset=row["offset"],
                key=row["key"],
                value=row["value"],
                error=row["error"],
                detail=detail,
            )
