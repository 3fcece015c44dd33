"""A builder for synthetic histories whose ground truth the test states.

Rows have exactly the shape `kchaos.model.history.HistoryWriter` records, so the same scenario can become a
DataFrame directly (fast, for checker tests) or be replayed through a real writer into a run directory
(for end-to-end tests of `check_run` and the report).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import pandas as pd
from pyspark.sql import DataFrame, SparkSession

from kchaos.checkers.passes.frames import HISTORY_STRUCT
from kchaos.harness.leaders import Leadership
from kchaos.model.events import (
    ASSIGN,
    FINAL_READ,
    FINAL_READER_PROCESS,
    HARNESS_PROCESS,
    INFO,
    INVOKE,
    ISOLATION,
    LEADER,
    LEADER_WATCH_PROCESS,
    NEMESIS_PROCESS,
    OK,
    PHASE,
    POLL,
    READ_COMMITTED,
    READ_UNCOMMITTED,
    SEND,
    SKIPPED,
    TRANSACTIONAL_ID,
    TXN_BEGIN,
    TXN_POLL,
    TXN_SEND,
    Event,
    EventType,
    IsolationLevel,
    consumer_process,
    producer_process,
    takes_fields_of,
)
from kchaos.model.history import HistoryWriter
from kchaos.model.history_schema import COLUMNS, event_row
from kchaos.model.phase_record import STOPPED

TOPIC = "kchaos"
#: The processes a scenario's events come from unless it names others.
PRODUCER = producer_process(0)
CONSUMER = consumer_process(0)
#: Shorthand for the isolation levels a reader names.
RC: IsolationLevel = READ_COMMITTED
RU: IsolationLevel = READ_UNCOMMITTED


class HistoryBuilder:
    """Records events in order; `index` is the order of calls, and wall time advances `step` per event."""

    def __init__(
        self, run_id: str = "test-run", start_wall: float = 1_700_000_000.0, step: float = 0.01
    ) -> None:
        self.run_id = run_id
        self.wall = start_wall
        self.step = step
        self.events: list[Event] = []
        self.rows: list[dict[str, Any]] = []

    def add(self, event: Event) -> int:
        """Records one event as the next row; returns its index."""
        index = len(self.rows)
        self.events.append(event)
        self.rows.append(event_row(self.run_id, index, int(index * self.step * 1e9), self.wall, event))
        self.wall += self.step
        return index

    #: `add` for scenarios that spell the event: `event(process, type, f, topic=..., value=...)`.
    event = takes_fields_of(Event)(add)

    def stamp_before(self, index: int, other: int) -> None:
        """Stamps row `index` just before row `other` (`time_ns`), as a client process's row recorded when
        its line arrived but stamped when the process printed it (`kchaos.model.stamped_rows`)."""
        self.rows[index]["time_ns"] = self.rows[other]["time_ns"] - 1

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
        outcome: EventType = OK,
        process: str = PRODUCER,
        error: str | None = None,
    ) -> int:
        """An invoke and its outcome; only an `ok` says where the record landed. Returns its index."""
        self.invoke(value, partition=partition, topic=topic, process=process)
        if outcome == OK:
            return self.ack(value, offset, partition=partition, topic=topic, process=process)
        error = error or ("timed out" if outcome == INFO else "NOT_ENOUGH_REPLICAS")
        return self.event(
            process, outcome, SEND, topic=topic, partition=partition, key=value, value=value, error=error
        )

    def invoke(self, value: str, *, partition: int = 0, topic: str = TOPIC, process: str = PRODUCER) -> int:
        """A send's invoke row alone, for scenarios where other events come before its outcome."""
        return self.event(process, INVOKE, SEND, topic=topic, partition=partition, key=value, value=value)

    def ack(
        self,
        value: str,
        offset: int | None,
        *,
        partition: int = 0,
        topic: str = TOPIC,
        process: str = PRODUCER,
    ) -> int:
        """A send's `ok` row alone (see `invoke`)."""
        return self.event(
            process, OK, SEND, topic=topic, partition=partition, offset=offset, key=value, value=value
        )

    def read(
        self,
        value: str,
        offset: int,
        *,
        partition: int = 0,
        topic: str = TOPIC,
        process: str = CONSUMER,
        f: str = POLL,
    ) -> int:
        return self.event(
            process, OK, f, topic=topic, partition=partition, offset=offset, key=value, value=value
        )

    def final_read(self, value: str, offset: int, *, partition: int = 0, topic: str = TOPIC) -> int:
        return self.read(
            value, offset, partition=partition, topic=topic, process=FINAL_READER_PROCESS, f=FINAL_READ
        )

    def final_read_start(
        self,
        *,
        partition: int = 0,
        topic: str = TOPIC,
        low: int = 0,
        high: int = 0,
        isolation: IsolationLevel | None = None,
    ) -> int:
        """The final reader's `invoke` row for a partition: it covers the partition even when empty, and
        names the reader's isolation level when given."""
        detail: dict[str, Any] = {"from": low, "to": high}
        if isolation is not None:
            detail[ISOLATION] = isolation
        return self.event(
            FINAL_READER_PROCESS, INVOKE, FINAL_READ, topic=topic, partition=partition, detail=detail
        )

    def assign(
        self,
        process: str = CONSUMER,
        partitions: Iterable[int] = (0,),
        *,
        topic: str = TOPIC,
        start: Mapping[int, int | None] | None = None,
        isolation: IsolationLevel | None = None,
    ) -> int:
        """A consumer (re)assigning its partitions: poll order is judged afresh after it, and its reads
        until the next take the isolation level given (none given: not known)."""
        chosen = sorted(partitions)
        positions = {str(p): (start or {}).get(p) for p in chosen}
        detail: dict[str, Any] = {"partitions": chosen, "from": positions}
        if isolation is not None:
            detail[ISOLATION] = isolation
        return self.event(process, OK, ASSIGN, topic=topic, detail=detail)

    def poll_error(
        self, error: str, *, process: str = CONSUMER, partition: int | None = None, topic: str = TOPIC
    ) -> int:
        """An error a consumer was handed (e.g. an offset reset): recorded, but not a reassignment."""
        return self.event(process, INFO, POLL, topic=topic, partition=partition, error=error)

    def fault(self, f: str, key: str, phase: str, *, kind: str, nodes: Iterable[int] = (1,)) -> int:
        """A nemesis start or stop row, shaped like the nemesis records them."""
        detail = {"kind": kind, "nodes": list(nodes), "description": f"{f} on nodes {list(nodes)}"}
        return self.event(NEMESIS_PROCESS, INFO, f, key=key, value=phase, detail=detail)

    def leader(
        self,
        partition: int,
        broker: int,
        isr: Iterable[int],
        *,
        topic: str = TOPIC,
        elr: Iterable[int] | None = (),
        replicas: Iterable[int] | None = (1, 2, 3),
    ) -> int:
        """A leader-watch row, shaped like `kchaos.harness.leaders.LeaderWatcher` records it; `elr` or
        `replicas` None leaves that key out, as a watcher from before they were recorded did."""
        detail = Leadership(broker, tuple(isr), tuple(elr or ()), tuple(replicas or ())).detail()
        for key, given in (("elr", elr), ("replicas", replicas)):
            if given is None:
                del detail[key]
        return self.event(
            LEADER_WATCH_PROCESS, INFO, LEADER, topic=topic, partition=partition, key=str(broker),
            detail=detail,
        )  # fmt: skip

    def skipped(self, f: str, key: str, error: str) -> int:
        """A fault the nemesis could not apply: one row, shaped like the nemesis records it."""
        return self.event(NEMESIS_PROCESS, INFO, f, key=key, value=SKIPPED, error=error,
                          detail={"kind": "degrade"})  # fmt: skip

    def phases(self, *completed: str) -> None:
        """The harness's rows for phases the run completed, in order."""
        for phase in completed:
            self.event(HARNESS_PROCESS, OK, PHASE, value=phase)

    def stopped(self, during: str, error: str = "KeyboardInterrupt: signal 15") -> int:
        """The harness's row for a run that stopped before completing every phase."""
        return self.event(HARNESS_PROCESS, INFO, PHASE, value=STOPPED, error=error, detail={"during": during})

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

    def txn_begin(self, txn: str, *, process: str = PRODUCER, transactional_id: str = "kchaos-0") -> int:
        """A producer beginning transaction `txn`, shaped like `kchaos.workloads.in_harness.transactions`
        records it."""
        return self.event(process, OK, TXN_BEGIN, key=txn, detail={TRANSACTIONAL_ID: transactional_id})

    def txn_send(
        self,
        txn: str,
        value: str,
        offset: int | None = None,
        *,
        partition: int = 0,
        topic: str = TOPIC,
        outcome: EventType = OK,
        process: str = PRODUCER,
    ) -> int:
        """A record written in `txn`: its invoke and outcome, as `send`'s but keyed by the transaction.
        Only an `ok` says where it landed. Returns the outcome's index."""
        self.event(process, INVOKE, TXN_SEND, topic=topic, partition=partition, key=txn, value=value)
        error = None if outcome == OK else "timed out" if outcome == INFO else "_QUEUE_FULL"
        return self.event(
            process, outcome, TXN_SEND, topic=topic, partition=partition,
            offset=offset if outcome == OK else None, key=txn, value=value, error=error,
        )  # fmt: skip

    def txn_poll(
        self, txn: str, value: str, offset: int, *, partition: int = 0, topic: str = TOPIC,
        process: str = PRODUCER,
    ) -> int:  # fmt: skip
        """A record a poll inside `txn` returned (a read-write transaction's read)."""
        return self.event(
            process, OK, TXN_POLL, topic=topic, partition=partition, offset=offset, key=txn, value=value
        )

    def txn_end(
        self,
        f: str,
        txn: str,
        outcome: EventType | None = OK,
        *,
        process: str = PRODUCER,
        detail: dict[str, Any] | None = None,
    ) -> int:
        """A commit (`f` = TXN_COMMIT) or abort (TXN_ABORT) of `txn`: its invoke (with `detail`, e.g. the
        transaction protocol it used) and, unless `outcome` is None (no answer before the history ends), its
        outcome. Returns the invoke's index."""
        invoked = self.event(process, INVOKE, f, key=txn, detail=detail)
        if outcome is not None:
            error = None if outcome == OK else "timed out" if outcome == INFO else "INVALID_TXN_STATE"
            self.event(process, outcome, f, key=txn, error=error)
        return invoked

    def transaction(
        self, txn: str, records: Iterable[tuple[str, int, int]], *, process: str = PRODUCER
    ) -> list[tuple[str, int, int]]:
        """`txn` begun and its records (value, partition, offset) acknowledged; how it ends is the
        scenario's to say. Returns the records."""
        written = list(records)
        self.txn_begin(txn, process=process)
        for value, partition, offset in written:
            self.txn_send(txn, value, offset, partition=partition, process=process)
        return written

    @property
    def transactional(self) -> bool:
        """Some record was written inside a transaction: the transaction anomalies apply."""
        return any(row["f"] == TXN_SEND for row in self.rows)

    def frame(self, spark: SparkSession) -> DataFrame:
        return spark.createDataFrame(
            [tuple(row[c] for c in COLUMNS) for row in self.rows], schema=HISTORY_STRUCT
        )

    def pandas(self) -> pd.DataFrame:
        return pd.DataFrame(self.rows, columns=list(COLUMNS))

    def replay(self, writer: HistoryWriter) -> None:
        """Records every event through a real writer (which assigns its own index and clocks)."""
        for event in self.events:
            writer.write(event)
