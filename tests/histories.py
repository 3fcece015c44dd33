"""A builder for synthetic histories whose ground truth the test states.

Rows have exactly the shape `harness.history.HistoryWriter` records, so the same scenario can become a
DataFrame directly (fast, for checker tests) or be replayed through a real writer into a run directory
(for end-to-end tests of `check_run` and the report).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd
from pyspark.sql import DataFrame, SparkSession

from checkers.frames import HISTORY_STRUCT, REPLICA_STRUCT
from checkers.names import (
    ANOMALY_NAMES,
    DUPLICATE,
    INCONSISTENT_OFFSET,
    LOST_WRITE,
    NONMONOTONIC_POLL,
    NONMONOTONIC_SEND,
    OFFSET_DIFFERS,
    POLL_SKIP,
    REPLICA_DIVERGENCE,
    TRUNCATED_READ,
    UNSEEN,
    VALUES_DIFFER,
)
from harness.events import (
    ASSIGN,
    FINAL_READ,
    FINAL_READER_PROCESS,
    HARNESS_PROCESS,
    INFO,
    INVOKE,
    LEADER,
    LEADER_WATCH_PROCESS,
    NEMESIS_PROCESS,
    OK,
    PHASE,
    POLL,
    SEND,
    SKIPPED,
    Event,
    EventType,
    consumer_process,
    producer_process,
    takes_fields_of,
)
from harness.history import COLUMNS, HistoryWriter, event_row
from harness.phase_record import STOPPED
from workloads.leaders import Leadership

TOPIC = "kchaos"
#: The processes a scenario's events come from unless it names others.
PRODUCER = producer_process(0)
CONSUMER = consumer_process(0)


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

    def final_read_start(self, *, partition: int = 0, topic: str = TOPIC, low: int = 0, high: int = 0) -> int:
        """The final reader's `invoke` row for a partition: it covers the partition even when empty."""
        return self.event(
            FINAL_READER_PROCESS, INVOKE, FINAL_READ, topic=topic, partition=partition,
            detail={"from": low, "to": high},
        )  # fmt: skip

    def assign(
        self,
        process: str = CONSUMER,
        partitions: Iterable[int] = (0,),
        *,
        topic: str = TOPIC,
        start: Mapping[int, int | None] | None = None,
    ) -> int:
        """A consumer (re)assigning its partitions: poll order is judged afresh after it."""
        chosen = sorted(partitions)
        positions = {str(p): (start or {}).get(p) for p in chosen}
        return self.event(process, OK, ASSIGN, topic=topic, detail={"partitions": chosen, "from": positions})

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
        """A leader-watch row, shaped like `workloads.leaders.LeaderWatcher` records it; `elr` or `replicas`
        None leaves that key out, as a watcher from before they were recorded did."""
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


REPLICA_COLUMNS = tuple(REPLICA_STRUCT.fieldNames())


class ReplicasBuilder:
    """Replica records as `replicas/replicas.parquet` holds them: one row per record in each broker's log."""

    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []

    def record(
        self,
        broker: int,
        offset: int,
        value: str | None,
        *,
        partition: int = 0,
        topic: str = TOPIC,
        leader_epoch: int = 0,
    ) -> None:
        self.rows.append(
            {"broker": broker, "topic": topic, "partition": partition, "offset": offset,
             "leader_epoch": leader_epoch, "key": value, "value": value}
        )  # fmt: skip

    def log(
        self,
        broker: int,
        values: Iterable[tuple[str | None, int]],
        *,
        partition: int = 0,
        topic: str = TOPIC,
        leader_epoch: int = 0,
    ) -> None:
        """A broker's copy of a partition: (value, offset) pairs, e.g. what `HistoryBuilder.sends` wrote."""
        for value, offset in values:
            self.record(broker, offset, value, partition=partition, topic=topic, leader_epoch=leader_epoch)

    def replicated(
        self, values: Iterable[tuple[str | None, int]], brokers: Iterable[int] = (1, 2, 3), **where: Any
    ) -> None:
        """The same log on every broker: what healthy replicas hold."""
        pairs = list(values)
        for broker in brokers:
            self.log(broker, pairs, **where)

    def frame(self, spark: SparkSession) -> DataFrame:
        return spark.createDataFrame(
            [tuple(row[c] for c in REPLICA_COLUMNS) for row in self.rows], schema=REPLICA_STRUCT
        )

    def pandas(self) -> pd.DataFrame:
        return pd.DataFrame(self.rows, columns=list(REPLICA_COLUMNS))


# --- scenarios with stated ground truth, shared by the Spark and pandas tests ---------------------------


@dataclass
class Scenario:
    """A history (and replica dumps, if any) with the occurrence ids of every anomaly it holds."""

    history: HistoryBuilder
    replicas: ReplicasBuilder | None
    expected: dict[str, set[str]]

    def expected_ids(self) -> dict[str, set[str]]:
        """Every anomaly the scenario can be checked for, absent ones as empty sets."""
        names = [n for n in ANOMALY_NAMES if n != REPLICA_DIVERGENCE or self.replicas is not None]
        return {name: set(self.expected.get(name, set())) for name in names}


def clean_scenario() -> Scenario:
    """Two partitions, a consumer polling part of them, a final read of everything, identical replicas."""
    h, r = HistoryBuilder(), ReplicasBuilder()
    h.assign("consumer-0", [0, 1])
    written = {p: h.sends(20, partition=p) for p in (0, 1)}
    for p, pairs in written.items():
        for value, offset in pairs[:12]:
            h.read(value, offset, partition=p)
    for p, pairs in written.items():
        h.final_reads(pairs, partition=p)
        r.replicated(pairs, partition=p)
    return Scenario(h, r, {})


def nonmonotonic_send_scenario() -> Scenario:
    """`late` is invoked before `early` but lands after it: `early` goes back below `late`."""
    h = HistoryBuilder()
    written = h.sends(3)
    h.invoke("late")
    h.invoke("early")
    h.ack("early", 3)
    h.ack("late", 4)
    h.final_reads([*written, ("early", 3), ("late", 4)])
    return Scenario(h, None, {NONMONOTONIC_SEND: {"early"}})


def poll_order_scenario() -> Scenario:
    """consumer-0 jumps from 1 to 4, then back to 2; consumer-1's replay after a reassignment is fine, but
    after a mere poll error it is not."""
    h = HistoryBuilder()
    written = h.sends(6)
    h.assign("consumer-0")
    at = {offset: h.read(value, offset) for value, offset in [written[0], written[1], written[4]]}
    back = h.read(*written[2])
    h.assign("consumer-1")
    for value, offset in written[:3]:
        h.read(value, offset, process="consumer-1")
    h.assign("consumer-1")  # a reassignment: reading from 0 again is expected
    for value, offset in written[:2]:
        h.read(value, offset, process="consumer-1")
    h.poll_error("_AUTO_OFFSET_RESET: fetch position out of range", process="consumer-1", partition=0)
    again = h.read(*written[0], process="consumer-1")  # an error is not a reassignment
    h.final_reads(written)
    return Scenario(
        h,
        None,
        {
            POLL_SKIP: {f"consumer-0:{at[4]}"},
            NONMONOTONIC_POLL: {f"consumer-0:{back}", f"consumer-1:{again}"},
        },
    )


def truncated_read_scenario() -> Scenario:
    """A consumer polled `ghost` at offset 3, which the final read finds holding `v0-3` instead; it also
    polled `covered` in partition 1, which the final read covered (its invoke row) but found empty, and
    `uncovered` in partition 2, which the final read never reached (so nothing is claimed about it)."""
    h = HistoryBuilder()
    written = h.sends(5)
    h.send("ghost", outcome="info")
    h.send("covered", outcome="info", partition=1)
    h.send("uncovered", outcome="info", partition=2)
    h.assign("consumer-0", [0, 1, 2])
    for value, offset in written[:3]:
        h.read(value, offset)
    h.read("ghost", 3)
    h.read("covered", 0, partition=1)
    h.read("uncovered", 0, partition=2)
    h.final_read_start(partition=0, high=5)
    h.final_reads(written)
    h.final_read_start(partition=1)
    return Scenario(
        h,
        None,
        {
            TRUNCATED_READ: {"ghost", "covered"},
            INCONSISTENT_OFFSET: {f"{VALUES_DIFFER}:{TOPIC}/0/3"},
        },
    )


def replica_divergence_scenario() -> Scenario:
    """Three replicas of a 10-record log. Broker 3 holds another value at 7; broker 2 lacks offset 4; all
    hold a transaction marker at 10; at 11 broker 1 holds a marker where broker 2 holds data (broker 3's
    range ends before 11); broker 1 alone reaches 12 (a lagging follower is not divergent)."""
    h, r = HistoryBuilder(), ReplicasBuilder()
    written = h.sends(10)
    h.final_reads(written)
    r.log(1, [*written, (None, 10), (None, 11), ("tail", 12)])
    r.log(2, [*(pair for pair in written if pair[1] != 4), (None, 10), ("eleven", 11)], leader_epoch=1)
    r.log(3, [*(pair if pair[1] != 7 else ("other", 7) for pair in written), (None, 10)])
    return Scenario(h, r, {REPLICA_DIVERGENCE: {f"{TOPIC}/0/4", f"{TOPIC}/0/7", f"{TOPIC}/0/11"}})


def loss_scenario() -> Scenario:
    """Offset reuse after a truncation: `old` (acknowledged at 3) is replaced by `new`; the tail 8..9 is
    gone; `retried` landed twice; `moved` is only read one place up from where it was acknowledged."""
    h = HistoryBuilder()
    written = h.sends(3)
    h.send("old", 3)
    h.send("new", 3)
    h.send("retried", 5)  # the first attempt landed at 4 too
    h.send("moved", 6)
    h.send("tail-8", 8)
    h.send("tail-9", 9)
    h.final_reads([*written, ("new", 3), ("retried", 4), ("retried", 5), ("filler", 6), ("moved", 7)])
    return Scenario(
        h,
        None,
        {
            LOST_WRITE: {"old"},
            UNSEEN: {"tail-8", "tail-9"},
            DUPLICATE: {"retried"},
            INCONSISTENT_OFFSET: {f"{OFFSET_DIFFERS}:moved"},
            NONMONOTONIC_SEND: {"new"},
        },
    )


SCENARIOS = {
    "clean": clean_scenario,
    "nonmonotonic-send": nonmonotonic_send_scenario,
    "poll-order": poll_order_scenario,
    "truncated-read": truncated_read_scenario,
    "replica-divergence": replica_divergence_scenario,
    "loss": loss_scenario,
}
