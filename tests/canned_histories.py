"""Canned histories with stated ground truth, shared by the Spark and pandas tests: each `Scenario` is a
history (and replica dumps, if any) with the occurrence ids of every anomaly it holds.

`SCENARIOS` holds the non-transactional ones; the transactional ones are in `tests.transaction_histories`.
"""

from __future__ import annotations

from dataclasses import dataclass

from kchaos.checkers.rules.anomaly_names import (
    ANOMALY_NAMES,
    DUPLICATE,
    INCONSISTENT_OFFSET,
    LOST_WRITE,
    NONMONOTONIC_POLL,
    NONMONOTONIC_SEND,
    OFFSET_DIFFERS,
    POLL_SKIP,
    REPLICA_DIVERGENCE,
    TRANSACTION_ANOMALY_NAMES,
    TRUNCATED_READ,
    UNSEEN,
    VALUES_DIFFER,
)
from tests.histories import TOPIC, HistoryBuilder
from tests.replica_dumps import ReplicasBuilder


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
