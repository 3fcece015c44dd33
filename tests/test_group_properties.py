"""Properties: generated consumer-group histories, checked by Spark and by the pandas reference.

The generator is a small model of a group: members are given the partitions at each rebalance and resume
from the offset the group last committed (as the coordinator applied it: an `ok` commit was, a `fail` one
was not, an `info` one may or may not have been), are handed records in order and commit their position
with a drawn outcome. Such a group redelivers (everything after the last applied commit, to whoever
resumes) but loses nothing and never goes back. Then faults of the group itself may be planted: a member
that skips a record, a member that commits a stale offset. The model knows what it handed and what was
committed, so the expected ids follow from it without running either engine, and both must find exactly
those.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.sql import SparkSession

from kchaos.checkers.rules.anomaly_names import (
    EOS_ANOMALY_NAMES,
    EOS_DUPLICATE,
    EOS_LOST,
    GROUP_ANOMALY_NAMES,
    GROUP_DUPLICATE,
    GROUP_LOST,
    OFFSET_REGRESSION,
)
from kchaos.model.events import (
    FAIL,
    FINAL_READ,
    FINAL_READER_PROCESS,
    INFO,
    OK,
    TXN_ABORT,
    TXN_COMMIT,
    EventType,
    group_process,
    output_topic,
    output_value,
    processor_process,
    transaction_id,
)
from tests.checker_ids import group_anomaly_ids
from tests.group_histories import commit, join, regression_id, revoke
from tests.histories import RC, TOPIC, HistoryBuilder
from tests.reference.groups import reference_group_anomaly_ids

#: The group anomalies of a group that writes no transactions: the end-to-end ones do not apply to it.
PLAIN_GROUP_ANOMALY_NAMES = tuple(n for n in GROUP_ANOMALY_NAMES if n not in EOS_ANOMALY_NAMES)


@dataclass
class Group:
    """The model while a history is drawn."""

    h: HistoryBuilder
    logs: dict[int, list[str]]
    applied: dict[int, int] = field(default_factory=dict)  # the offset the coordinator holds, per partition
    owner: dict[int, str] = field(default_factory=dict)
    position: dict[int, int] = field(default_factory=dict)  # the owner's next offset, per partition
    handed: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    highest_ok: dict[int, int] = field(default_factory=dict)
    regressions: set[str] = field(default_factory=set)

    def rebalance(self, draw: st.DrawFn, members: list[str]) -> None:
        for member in sorted(set(self.owner.values())):
            revoke(self.h, member, sorted(p for p, m in self.owner.items() if m == member))
        self.owner = {p: draw(st.sampled_from(members)) for p in self.logs}
        for member in sorted(set(self.owner.values())):
            join(self.h, member, sorted(p for p, m in self.owner.items() if m == member))
        self.position = {p: self.applied.get(p, 0) for p in self.logs}

    def read(self, partition: int, count: int, skip: bool) -> None:
        log, member = self.logs[partition], self.owner[partition]
        if skip and self.position[partition] < len(log):
            self.position[partition] += 1  # a record the member is never handed
        for offset in range(self.position[partition], min(len(log), self.position[partition] + count)):
            self.h.read(log[offset], offset, partition=partition, process=member)
            self.handed[log[offset]] += 1
            self.position[partition] = offset + 1

    def commit(self, draw: st.DrawFn, partition: int, stale: bool) -> None:
        member = self.owner[partition]
        offset = self.position[partition]
        if stale:
            offset = draw(st.integers(0, max(0, offset - 1)))
        outcome: EventType = draw(st.sampled_from([OK, OK, OK, FAIL, INFO]))
        index = commit(self.h, member, {partition: offset}, outcome=outcome)
        if outcome == OK or (outcome == INFO and draw(st.booleans())):
            self.applied[partition] = offset
        if outcome == OK:
            if offset < self.highest_ok.get(partition, -1):
                self.regressions.add(regression_id(index, partition))
            self.highest_ok[partition] = max(offset, self.highest_ok.get(partition, -1))

    def expected(self) -> dict[str, set[str]]:
        lost = {
            value
            for p, log in self.logs.items()
            for offset, value in enumerate(log)
            if offset < self.highest_ok.get(p, -1) and not self.handed[value]
        }
        twice = {value for value, times in self.handed.items() if times > 1}
        return {GROUP_LOST: lost, GROUP_DUPLICATE: twice, OFFSET_REGRESSION: self.regressions}


@dataclass
class Drawn:
    history: HistoryBuilder
    expected: dict[str, set[str]]
    planted: list[str]


@st.composite
def group_histories(draw: st.DrawFn) -> Drawn:
    h = HistoryBuilder()
    logs = {
        p: [value for value, _ in h.sends(draw(st.integers(1, 12)), partition=p)]
        for p in range(draw(st.integers(1, 2)))
    }
    members = [group_process(n) for n in range(draw(st.integers(1, 3)))]
    group = Group(h, logs)
    planted: list[str] = []
    group.rebalance(draw, members)
    for _ in range(draw(st.integers(1, 16))):
        partition = draw(st.sampled_from(sorted(logs)))
        step = draw(
            st.sampled_from(
                ["read", "read", "read", "commit", "commit", "rebalance", "skip", "stale", "stale"]
            )
        )
        if step == "rebalance":
            group.rebalance(draw, members)
        elif step in ("read", "skip"):
            group.read(partition, draw(st.integers(1, 5)), skip=step == "skip")
            planted.append(step)
        else:
            group.commit(draw, partition, stale=step == "stale")
            planted.append(step)
    return Drawn(h, group.expected(), planted)


@dataclass
class Processing:
    """The eos model on top of the group's: the owner of a partition processes what it is handed in a
    transaction that commits its position, or aborts and rewinds to the group's offset. Its faults: a
    processor that starts behind the group's offset (it processes records again), one that skips a record,
    and a committed output record the final read lacks."""

    group: Group
    out: str = output_topic(TOPIC)
    next_offset: int = 0  # of the output topic's single partition
    txns: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    #: Every committed output record: (input value, output value, offset).
    committed: list[tuple[str, str, int]] = field(default_factory=list)
    dropped: set[str] = field(default_factory=set)

    def process(self, draw: st.DrawFn, partition: int, count: int, skip: bool) -> None:
        g, member = self.group, self.group.owner[partition]
        start = g.position[partition]
        g.read(partition, count, skip)
        batch = g.logs[partition][start + int(skip) : g.position[partition]]
        txn = transaction_id(member, self.txns[member])
        self.txns[member] += 1
        g.h.txn_begin(txn, process=member)
        written = []
        for value in batch:
            written.append((value, output_value(value, txn), self.next_offset))
            g.h.txn_send(txn, written[-1][1], self.next_offset, topic=self.out, process=member)
            self.next_offset += 1
        self.next_offset += 1  # the marker
        committed = draw(st.sampled_from([True, True, False]))
        g.h.txn_end(TXN_COMMIT if committed else TXN_ABORT, txn, process=member)
        offset = g.position[partition]
        index = commit(
            g.h, member, {partition: offset}, outcome=OK if committed else FAIL, mode="transaction"
        )
        if committed:
            self.committed.extend(written)
            g.applied[partition] = offset
            if offset < g.highest_ok.get(partition, -1):
                g.regressions.add(regression_id(index, partition))
            g.highest_ok[partition] = max(offset, g.highest_ok.get(partition, -1))
        else:
            join(g.h, member, sorted(p for p, m in g.owner.items() if m == member))  # the rewind
            g.position[partition] = g.applied.get(partition, 0)

    def start_behind(self, draw: st.DrawFn, partition: int) -> None:
        g = self.group
        g.position[partition] = draw(st.integers(0, g.applied.get(partition, 0)))

    def drop(self, draw: st.DrawFn) -> None:
        if self.committed:
            self.dropped.add(draw(st.sampled_from(self.committed))[1])

    def final_read(self) -> None:
        g = self.group
        for partition, log in g.logs.items():
            g.h.final_read_start(partition=partition, high=len(log), isolation=RC)
            g.h.final_reads([(value, offset) for offset, value in enumerate(log)], partition=partition)
        g.h.final_read_start(topic=self.out, high=self.next_offset, isolation=RC)
        for _, value, offset in self.committed:
            if value not in self.dropped:
                g.h.read(value, offset, topic=self.out, process=FINAL_READER_PROCESS, f=FINAL_READ)

    def expected(self) -> dict[str, set[str]]:
        g = self.group
        kept: dict[str, int] = defaultdict(int)
        for source, value, _ in self.committed:
            kept[source] += value not in self.dropped
        below = {
            value
            for p, log in g.logs.items()
            for offset, value in enumerate(log)
            if offset < g.highest_ok.get(p, -1)
        }
        return {
            **g.expected(),
            EOS_LOST: {value for value in below if not kept[value]},
            EOS_DUPLICATE: {value for value, n in kept.items() if n > 1},
        }


@st.composite
def eos_histories(draw: st.DrawFn) -> Drawn:
    h = HistoryBuilder()
    logs = {
        p: [value for value, _ in h.sends(draw(st.integers(1, 10)), partition=p)]
        for p in range(draw(st.integers(1, 2)))
    }
    members = [processor_process(n) for n in range(draw(st.integers(1, 2)))]
    model = Processing(Group(h, logs))
    planted: list[str] = []
    model.group.rebalance(draw, members)
    for _ in range(draw(st.integers(1, 12))):
        partition = draw(st.sampled_from(sorted(logs)))
        step = draw(st.sampled_from(["process", "process", "process", "rebalance", "behind", "skip", "drop"]))
        if step == "rebalance":
            model.group.rebalance(draw, members)
        elif step == "behind":
            model.start_behind(draw, partition)
        elif step == "drop":
            model.drop(draw)
        else:
            model.process(draw, partition, draw(st.integers(1, 4)), skip=step == "skip")
        planted.append(step)
    model.final_read()
    return Drawn(h, model.expected(), planted)


#: A Spark check per example (about two seconds): the README's test command draws a few, the nightly
#: workflow many (the tests marked `nightly`); the reference alone is cheap enough for more.
FEW = settings(max_examples=3, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
MANY = settings(FEW, max_examples=40)
REFERENCE_ONLY = settings(max_examples=100, deadline=None, database=None)


@FEW
@given(group_histories())
def test_both_engines_find_exactly_what_the_group_model_did(spark: SparkSession, drawn: Drawn) -> None:
    both_engines_find_exactly_what_the_group_model_did(spark, drawn)


@pytest.mark.nightly
@MANY
@given(group_histories())
def test_both_engines_find_exactly_what_the_group_model_did_in_many_histories(
    spark: SparkSession, drawn: Drawn
) -> None:
    both_engines_find_exactly_what_the_group_model_did(spark, drawn)


def both_engines_find_exactly_what_the_group_model_did(spark: SparkSession, drawn: Drawn) -> None:
    expected = {name: drawn.expected[name] for name in PLAIN_GROUP_ANOMALY_NAMES}
    assert reference_group_anomaly_ids(drawn.history.pandas()) == expected
    assert group_anomaly_ids(drawn.history.frame(spark)) == expected


@REFERENCE_ONLY
@given(group_histories())
def test_reference_finds_exactly_what_the_group_model_did(drawn: Drawn) -> None:
    """The same property on many more histories, for the reference alone (no Spark, so cheap)."""
    assert reference_group_anomaly_ids(drawn.history.pandas()) == {
        n: drawn.expected[n] for n in PLAIN_GROUP_ANOMALY_NAMES
    }


def judged(drawn: Drawn) -> dict[str, set[str]]:
    """What both engines must find: the end-to-end anomalies only once a processor wrote a transaction."""
    names = GROUP_ANOMALY_NAMES if drawn.history.transactional else PLAIN_GROUP_ANOMALY_NAMES
    return {name: drawn.expected[name] for name in names}


@FEW
@given(eos_histories())
def test_both_engines_find_exactly_what_the_processing_model_did(spark: SparkSession, drawn: Drawn) -> None:
    both_engines_find_exactly_what_the_processing_model_did(spark, drawn)


@pytest.mark.nightly
@MANY
@given(eos_histories())
def test_both_engines_find_exactly_what_the_processing_model_did_in_many_histories(
    spark: SparkSession, drawn: Drawn
) -> None:
    both_engines_find_exactly_what_the_processing_model_did(spark, drawn)


def both_engines_find_exactly_what_the_processing_model_did(spark: SparkSession, drawn: Drawn) -> None:
    assert reference_group_anomaly_ids(drawn.history.pandas()) == judged(drawn)
    assert group_anomaly_ids(drawn.history.frame(spark)) == judged(drawn)


@REFERENCE_ONLY
@given(eos_histories())
def test_reference_finds_exactly_what_the_processing_model_did(drawn: Drawn) -> None:
    """Every group anomaly of an eos group, the end-to-end ones included, on many histories (no Spark)."""
    assert reference_group_anomaly_ids(drawn.history.pandas()) == judged(drawn)
