"""A builder for synthetic histories whose ground truth the test states.

Rows have exactly the shape `kchaos.model.history.HistoryWriter` records, so the same scenario can become a
DataFrame directly (fast, for checker tests) or be replayed through a real writer into a run directory
(for end-to-end tests of `check_run` and the report).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd
from pyspark.sql import DataFrame, SparkSession

from kchaos.checkers.frames import HISTORY_STRUCT, REPLICA_STRUCT
from kchaos.checkers.names import (
    ABORTED_READ,
    ANOMALY_NAMES,
    DUPLICATE,
    INCONSISTENT_OFFSET,
    LOST_COMMITTED,
    LOST_WRITE,
    NONMONOTONIC_POLL,
    NONMONOTONIC_SEND,
    OFFSET_DIFFERS,
    PARTIAL_TRANSACTION,
    POLL_SKIP,
    REPLICA_DIVERGENCE,
    TRANSACTION_ANOMALY_NAMES,
    TRUNCATED_READ,
    UNCOMMITTED_READ,
    UNSEEN,
    VALUES_DIFFER,
)
from kchaos.model.events import (
    ASSIGN,
    FAIL,
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
    TXN_ABORT,
    TXN_BEGIN,
    TXN_COMMIT,
    TXN_SEND,
    Event,
    EventType,
    IsolationLevel,
    consumer_process,
    producer_process,
    takes_fields_of,
)
from kchaos.model.history import COLUMNS, HistoryWriter, event_row
from kchaos.model.phase_record import STOPPED
from kchaos.workloads.leaders import Leadership

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
        """A leader-watch row, shaped like `kchaos.workloads.leaders.LeaderWatcher` records it; `elr` or
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
        """A producer beginning transaction `txn`, shaped like `kchaos.workloads.transactions` records it."""
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

    def txn_end(self, f: str, txn: str, outcome: EventType | None = OK, *, process: str = PRODUCER) -> int:
        """A commit (`f` = TXN_COMMIT) or abort (TXN_ABORT) of `txn`: its invoke and, unless `outcome` is
        None (no answer before the history ends), its outcome. Returns the invoke's index."""
        invoked = self.event(process, INVOKE, f, key=txn)
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
        """Every anomaly the scenario can be checked for, absent ones as empty sets: replica divergence
        only with replica dumps, the transaction anomalies only in a history with transactions."""
        names = [
            n
            for n in ANOMALY_NAMES
            if (n != REPLICA_DIVERGENCE or self.replicas is not None)
            and (n not in TRANSACTION_ANOMALY_NAMES or self.history.transactional)
        ]
        return {name: set(self.expected.get(name, set())) for name in names}

    def expected_transaction_ids(self) -> dict[str, set[str]]:
        """Every transaction anomaly, absent ones as empty sets."""
        return {name: set(self.expected.get(name, set())) for name in TRANSACTION_ANOMALY_NAMES}


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


# --- transactions: scenarios with stated ground truth for the transaction anomalies ---------------------
# Offsets leave room for the control records Kafka writes: each commit or abort puts a marker at the next
# offset of every partition its transaction wrote to.

RC: IsolationLevel = READ_COMMITTED
RU: IsolationLevel = READ_UNCOMMITTED


def _final_read_committed(h: HistoryBuilder, reads: Iterable[tuple[str, int, int]], partitions: int) -> None:
    """A read_committed final reader covering partitions 0 .. `partitions`-1 and returning `reads`
    (value, partition, offset)."""
    for partition in range(partitions):
        h.final_read_start(partition=partition, isolation=RC)
    for value, partition, offset in reads:
        h.final_read(value, offset, partition=partition)


def txn_clean_scenario() -> Scenario:
    """Everything a transactional run may show: a read_uncommitted reader returns records before their
    commit and records of an aborted transaction; a read_committed reader returns a record after its
    commit was asked for but before the answer (markers may be written first); the final read returns
    exactly the committed records, of a transaction spanning two partitions too."""
    h = HistoryBuilder()
    h.assign("consumer-0", [0, 1], isolation=RC)
    h.assign("consumer-1", [0, 1], isolation=RU)
    h.transaction("t1", [("a", 0, 0), ("b", 1, 0)])
    h.read("a", 0, process="consumer-1")
    h.txn_end(TXN_COMMIT, "t1")
    h.read("a", 0)
    h.read("b", 0, partition=1)
    h.transaction("t2", [("c", 0, 2), ("d", 1, 2)])
    h.txn_end(TXN_ABORT, "t2")
    h.read("c", 2, process="consumer-1")
    h.transaction("t3", [("e", 0, 4)])
    h.txn_end(TXN_COMMIT, "t3", outcome=None)
    h.read("e", 4)
    h.event(PRODUCER, OK, TXN_COMMIT, key="t3")
    _final_read_committed(h, [("a", 0, 0), ("e", 0, 4), ("b", 1, 0)], partitions=2)
    return Scenario(h, None, {})


def txn_aborted_read_scenario() -> Scenario:
    """Records of aborted transactions read at read_committed: `x1` (abort acknowledged), `y1` (commit
    definitely failed, the abort indeterminate), `v1` (read by consumer-2 once reassigned at
    read_committed). Not: `x2` (read_uncommitted), `z1` (commit indeterminate, then an acknowledged
    abort: undecided), `w1` (commit left without an answer), `u1` (consumer-3's level is not known after
    its reassignment)."""
    h = HistoryBuilder()
    h.assign("consumer-0", [0, 1], isolation=RC)
    h.assign("consumer-1", [0, 1], isolation=RU)
    h.assign("consumer-2", [0])
    h.assign("consumer-3", [0], isolation=RC)
    h.transaction("t1", [("x1", 0, 0), ("x2", 1, 0)])
    h.txn_end(TXN_ABORT, "t1")
    h.read("x1", 0)
    h.read("x2", 0, partition=1, process="consumer-1")
    h.transaction("t2", [("y1", 0, 2)])
    h.txn_end(TXN_COMMIT, "t2", outcome=FAIL)
    h.txn_end(TXN_ABORT, "t2", outcome=INFO)
    h.transaction("t3", [("z1", 0, 4)])
    h.txn_end(TXN_COMMIT, "t3", outcome=INFO)
    h.txn_end(TXN_ABORT, "t3")
    h.transaction("t5", [("v1", 0, 6)])
    h.txn_end(TXN_ABORT, "t5")
    h.read("v1", 6, process="consumer-2")
    h.assign("consumer-2", [0], isolation=RC)
    h.read("v1", 6, process="consumer-2")
    h.transaction("t6", [("u1", 0, 8)])
    h.txn_end(TXN_ABORT, "t6")
    h.assign("consumer-3", [0])
    h.read("u1", 8, process="consumer-3")
    h.transaction("t4", [("w1", 1, 2)])
    h.txn_end(TXN_COMMIT, "t4", outcome=None)
    h.read("w1", 2, partition=1)
    _final_read_committed(h, [("y1", 0, 2), ("z1", 0, 4), ("w1", 1, 2)], partitions=2)
    return Scenario(h, None, {ABORTED_READ: {"x1", "y1", "v1"}})


def txn_uncommitted_read_scenario() -> Scenario:
    """read_committed reads before the transaction's commit was asked for: `a` (committed later), `d`
    (never ended), `f` (never asked to commit; its abort indeterminate), `h2` (one partition of a
    transaction spanning two, read early while `h1` is read after the commit was asked for). Not: `b`
    (read between the commit's invoke and its answer), `c` (commit indeterminate, read after asking),
    `g` (read_uncommitted). `e` is read after a commit that definitely failed and before the retry that
    succeeded: a real early read, but the definition bounds reads by the first commit row, whatever its
    outcome, and so misses it rather than resolve which attempt was which."""
    h = HistoryBuilder()
    h.assign("consumer-0", [0, 1], isolation=RC)
    h.assign("consumer-1", [0, 1], isolation=RU)
    h.transaction("t1", [("a", 0, 0)])
    h.read("a", 0)
    h.txn_end(TXN_COMMIT, "t1")
    h.transaction("t2", [("b", 0, 2)])
    h.txn_end(TXN_COMMIT, "t2", outcome=None)
    h.read("b", 2)
    h.event(PRODUCER, OK, TXN_COMMIT, key="t2")
    h.transaction("t3", [("c", 0, 4)])
    h.txn_end(TXN_COMMIT, "t3", outcome=INFO)
    h.read("c", 4)
    h.transaction("t4", [("d", 1, 0)], process="producer-1")
    h.read("d", 0, partition=1)
    h.transaction("t5", [("e", 0, 6)])
    h.txn_end(TXN_COMMIT, "t5", outcome=FAIL)
    h.read("e", 6)
    h.txn_end(TXN_COMMIT, "t5")
    h.transaction("t6", [("f", 0, 8)])
    h.read("f", 8)
    h.txn_end(TXN_ABORT, "t6", outcome=INFO)
    h.transaction("t7", [("g", 0, 10)])
    h.read("g", 10, process="consumer-1")
    h.txn_end(TXN_COMMIT, "t7")
    h.transaction("t8", [("h1", 0, 12), ("h2", 1, 2)])
    h.read("h2", 2, partition=1)
    h.txn_end(TXN_COMMIT, "t8")
    h.read("h1", 12)
    _final_read_committed(
        h,
        [("a", 0, 0), ("b", 0, 2), ("c", 0, 4), ("e", 0, 6), ("g", 0, 10), ("h1", 0, 12), ("h2", 1, 2)],
        partitions=2,
    )
    return Scenario(h, None, {UNCOMMITTED_READ: {"a", "d", "f", "h2"}})


def txn_lost_scenario() -> Scenario:
    """Committed transactions the final read (partitions 0 and 1) returned only part of: `t1` lacks `a2`
    in partition 1, `t3` lacks `c2`, which a consumer read during the run (so `c2` is not lost-committed:
    it was read; the existing `truncated-read` is its anomaly). `t2` lost both records: two
    `lost-committed`, not partial. Not: `t4`'s missing `d2` (its send indeterminate), `t5`'s `e1` (in
    partition 2, which the final read did not cover), `t6`'s `f2` (commit indeterminate), `t7` (aborted)."""
    h = HistoryBuilder()
    h.assign("consumer-0", [0, 1], isolation=RC)
    h.transaction("t1", [("a1", 0, 0), ("a2", 1, 0)])
    h.txn_end(TXN_COMMIT, "t1")
    h.transaction("t2", [("b1", 0, 2), ("b2", 1, 2)])
    h.txn_end(TXN_COMMIT, "t2")
    h.transaction("t3", [("c1", 0, 4), ("c2", 0, 5)])
    h.txn_end(TXN_COMMIT, "t3")
    h.read("c2", 5)
    h.transaction("t4", [("d1", 0, 7)])
    h.txn_send("t4", "d2", partition=1, outcome=INFO)
    h.txn_end(TXN_COMMIT, "t4")
    h.transaction("t5", [("e1", 2, 0)])
    h.txn_end(TXN_COMMIT, "t5")
    h.transaction("t6", [("f1", 0, 9), ("f2", 1, 4)])
    h.txn_end(TXN_COMMIT, "t6", outcome=INFO)
    h.transaction("t7", [("g1", 0, 11)])
    h.txn_end(TXN_ABORT, "t7")
    _final_read_committed(h, [("a1", 0, 0), ("c1", 0, 4), ("d1", 0, 7), ("f1", 0, 9)], partitions=2)
    return Scenario(h, None, {PARTIAL_TRANSACTION: {"t1", "t3"}, LOST_COMMITTED: {"a2", "b1", "b2"}})


TRANSACTION_SCENARIOS = {
    "txn-clean": txn_clean_scenario,
    "txn-aborted-read": txn_aborted_read_scenario,
    "txn-uncommitted-read": txn_uncommitted_read_scenario,
    "txn-lost": txn_lost_scenario,
}
