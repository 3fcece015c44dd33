"""Consumer-group histories whose ground truth each scenario states, for the group checks of both engines.

Rows are shaped as `kchaos.workloads.in_harness.group_consumer` records them: an `assign` row per assignment
(`detail`: partitions, group, member id), a `revoke` row per revocation (`info` when the partitions were
lost), the records a member is handed as `poll` rows, and a `commit` row per commit (`detail`: offsets by
partition, group, mode).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from kchaos.checkers.rules.anomaly_names import (
    AFTER_REBALANCE,
    ANOMALY_NAMES,
    EOS_ANOMALY_NAMES,
    EOS_DUPLICATE,
    EOS_LOST,
    GROUP_ANOMALY_NAMES,
    GROUP_DUPLICATE,
    GROUP_LOST,
    LOST_COMMITTED,
    NONMONOTONIC_POLL,
    OFFSET_REGRESSION,
    PARTIAL_TRANSACTION,
    POLL_SKIP,
    REPLICA_DIVERGENCE,
    TRANSACTION_ANOMALY_NAMES,
    WITHIN_ASSIGNMENT,
)
from kchaos.model.events import (
    ASKED_NS,
    ASSIGN,
    COMMIT,
    FINAL_READ,
    FINAL_READER_PROCESS,
    INFO,
    OK,
    REVOKE,
    TXN_ABORT,
    TXN_COMMIT,
    EventType,
    group_process,
    output_topic,
    output_value,
    processor_process,
    transaction_id,
)
from tests.histories import RC, TOPIC, HistoryBuilder

GROUP = "kchaos-test-run-group"
MEMBER_0 = group_process(0)
MEMBER_1 = group_process(1)


def join(
    h: HistoryBuilder, process: str, partitions: Iterable[int], *, group: str = GROUP, topic: str = TOPIC
) -> int:
    """A rebalance gives `process` these partitions."""
    detail = {"partitions": sorted(partitions), "group": group, "member": f"rdkafka-{process}"}
    return h.event(process, OK, ASSIGN, topic=topic, detail=detail)


def revoke(
    h: HistoryBuilder,
    process: str,
    partitions: Iterable[int],
    *,
    lost: bool = False,
    group: str = GROUP,
    topic: str = TOPIC,
) -> int:
    """A rebalance takes these partitions from `process` (`lost`: its client reported them lost)."""
    detail = {"partitions": sorted(partitions), "group": group, "lost": lost}
    return h.event(process, INFO if lost else OK, REVOKE, topic=topic, detail=detail)


def commit(
    h: HistoryBuilder,
    process: str,
    offsets: Mapping[int, int],
    *,
    outcome: EventType = OK,
    group: str = GROUP,
    topic: str = TOPIC,
    mode: str = "sync",
    asked_at: int | None = None,
) -> int:
    """A commit of the next offset to read per partition, with its outcome; returns its index. `asked_at`:
    the index of an earlier row at whose time the commit was asked for (else it is asked and answered at
    once)."""
    error = None if outcome == OK else "REBALANCE_IN_PROGRESS" if outcome == "fail" else "_TIMED_OUT"
    detail: dict[str, object] = {
        "offsets": {str(p): o for p, o in offsets.items()},
        "group": group,
        "mode": mode,
    }
    if asked_at is not None:
        detail[ASKED_NS] = h.rows[asked_at]["time_ns"]
    return h.event(process, outcome, COMMIT, topic=topic, error=error, detail=detail)


#: What a group without transactions is found to hold when it holds nothing: no end-to-end anomalies.
NOTHING = {name: set[str]() for name in GROUP_ANOMALY_NAMES if name not in EOS_ANOMALY_NAMES}


def regression_id(index: int, partition: int = 0, topic: str = TOPIC) -> str:
    return f"{topic}/{partition}@{index}"


def two_groups_history() -> tuple[HistoryBuilder, int]:
    """Two groups read partition 0 (`v0-0` .. `v0-3`), each member handed every record once; group G
    commits 4, group `other` commits 2 and then 1, a regression of its own. Returns the history and the
    index of the lower commit."""
    h = HistoryBuilder()
    written = h.sends(4)
    join(h, MEMBER_0, [0])
    join(h, MEMBER_1, [0], group="other")
    for process in (MEMBER_0, MEMBER_1):
        for value, offset in written:
            h.read(value, offset, process=process)
    commit(h, MEMBER_0, {0: 4})
    commit(h, MEMBER_1, {0: 2}, group="other")
    return h, commit(h, MEMBER_1, {0: 1}, group="other")


@dataclass
class GroupScenario:
    """A group history with the ids of every anomaly it holds, and `group-duplicate`'s values by kind."""

    history: HistoryBuilder
    expected: dict[str, set[str]]
    kinds: dict[str, set[str]] = field(default_factory=dict)

    def expected_ids(self) -> dict[str, set[str]]:
        """Every anomaly a history without replica dumps (as these are) is checked for, absent ones as empty
        sets: the transaction anomalies only where the members wrote transactions (`--workload eos`)."""
        transactional = self.history.transactional
        names = [
            n
            for n in ANOMALY_NAMES
            if n != REPLICA_DIVERGENCE and (transactional or n not in TRANSACTION_ANOMALY_NAMES)
        ]
        return {name: set(self.expected.get(name, set())) for name in names}

    def expected_group_ids(self) -> dict[str, set[str]]:
        """Every group anomaly, absent ones as empty sets: the end-to-end ones only where the members wrote
        transactions."""
        transactional = self.history.transactional
        names = [n for n in GROUP_ANOMALY_NAMES if transactional or n not in EOS_ANOMALY_NAMES]
        return {name: set(self.expected.get(name, set())) for name in names}

    def expected_kinds(self) -> dict[str, set[str]]:
        return {kind: set(self.kinds.get(kind, set())) for kind in (AFTER_REBALANCE, WITHIN_ASSIGNMENT)}


def group_rebalance_scenario() -> GroupScenario:
    """A clean group run with rebalances: partitions move between members, a member resumes from the
    committed offset, a member's last batch is handed again to its successor after its commit was refused,
    commits fail or time out, and the final read returns everything. The only anomaly is the redelivery,
    which every poll-order check must take for what it is: reads in a new assignment."""
    h = HistoryBuilder()
    written = {p: h.sends(12, partition=p) for p in (0, 1)}
    join(h, MEMBER_0, [0, 1])
    for p in (0, 1):
        for value, offset in written[p][:4]:
            h.read(value, offset, partition=p, process=MEMBER_0)
    commit(h, MEMBER_0, {0: 4, 1: 4})
    revoke(h, MEMBER_0, [0, 1])
    join(h, MEMBER_0, [0])
    join(h, MEMBER_1, [1])
    for value, offset in written[1][4:8]:
        h.read(value, offset, partition=1, process=MEMBER_1)
    commit(h, MEMBER_1, {1: 8}, mode="auto")
    for value, offset in written[0][4:8]:
        h.read(value, offset, partition=0, process=MEMBER_0)
    commit(h, MEMBER_0, {0: 8}, outcome="fail")  # refused: the rebalance below has begun
    revoke(h, MEMBER_0, [0], lost=True)
    revoke(h, MEMBER_1, [1])
    join(h, MEMBER_1, [0, 1])
    for value, offset in written[0][4:]:  # from the committed 4: 4..7 handed again
        h.read(value, offset, partition=0, process=MEMBER_1)
    for value, offset in written[1][8:]:
        h.read(value, offset, partition=1, process=MEMBER_1)
    commit(h, MEMBER_1, {0: 12, 1: 12}, outcome=INFO)
    commit(h, MEMBER_1, {0: 12, 1: 12})
    commit(h, MEMBER_1, {0: 12})  # nothing new: the same offset again is no regression
    for p, pairs in written.items():
        h.final_read_start(partition=p, high=12)
        h.final_reads(pairs, partition=p)
    again = {value for value, _ in written[0][4:8]}
    return GroupScenario(h, {GROUP_DUPLICATE: again}, {AFTER_REBALANCE: again})


def group_anomalies_scenario() -> GroupScenario:
    """Every group anomaly, and what must not be taken for one.

    Group G, partition 0 (`v0-0` .. `v0-13`): member-0 skips `v0-4`, commits 10 and reads 10 and 11; a
    commit of 14 times out and one of 15 is refused, so `v0-13`, never handed, is below no certain commit.
    member-1 takes over and commits 8, then 9: both below 10, regressions. It is handed 8 to 11 again
    (after a rebalance) and 12 twice in one assignment (a nonmonotonic poll too), then commits 13, so
    `v0-4` is lost below it.
    Group `other`, partition 1: member-2 skips `v1-1` and commits 3; a plain reader (no member of any
    group) read `v1-1`, which does not count, so `v1-1` is lost to `other`. G never committed partition 1,
    so nothing there is lost to G."""
    h = HistoryBuilder()
    p0 = h.sends(14, partition=0)
    p1 = h.sends(3, partition=1)
    join(h, MEMBER_0, [0])
    for value, offset in p0[:4]:
        h.read(value, offset, process=MEMBER_0)
    skip_4 = h.read(*p0[5], process=MEMBER_0)
    for value, offset in p0[6:10]:
        h.read(value, offset, process=MEMBER_0)
    commit(h, MEMBER_0, {0: 10})
    for value, offset in p0[10:12]:
        h.read(value, offset, process=MEMBER_0)
    commit(h, MEMBER_0, {0: 14}, outcome=INFO)
    commit(h, MEMBER_0, {0: 15}, outcome="fail")
    revoke(h, MEMBER_0, [0])
    join(h, MEMBER_1, [0])
    back = [commit(h, MEMBER_1, {0: 8}), commit(h, MEMBER_1, {0: 9})]
    for value, offset in p0[8:13]:
        h.read(value, offset, process=MEMBER_1)
    again = h.read(*p0[12], process=MEMBER_1)
    commit(h, MEMBER_1, {0: 13})
    member_2 = group_process(2)
    join(h, member_2, [1], group="other")
    h.read(*p1[0], partition=1, process=member_2)
    skip_1 = h.read(*p1[2], partition=1, process=member_2)
    commit(h, member_2, {1: 3}, group="other")
    h.assign("consumer-0", [1])
    h.read(*p1[1], partition=1)
    for p, pairs in ((0, p0), (1, p1)):
        h.final_read_start(partition=p, high=len(pairs))
        h.final_reads(pairs, partition=p)
    after = {"v0-8", "v0-9", "v0-10", "v0-11"}
    return GroupScenario(
        h,
        {
            GROUP_LOST: {"v0-4", "v1-1"},
            GROUP_DUPLICATE: {*after, "v0-12"},
            OFFSET_REGRESSION: {regression_id(i) for i in back},
            POLL_SKIP: {f"{MEMBER_0}:{skip_4}", f"{member_2}:{skip_1}"},
            NONMONOTONIC_POLL: {f"{MEMBER_1}:{again}"},
        },
        {AFTER_REBALANCE: after, WITHIN_ASSIGNMENT: {"v0-12"}},
    )


def eos_scenario() -> GroupScenario:
    """Two eos processors read partition 0 (`v0-0` .. `v0-9`) in one group and write each record to the
    output topic in transactions that commit the group's offsets.

    processor-0 processes `v0-0` .. `v0-4` in its transaction 0 (offsets to 5, committed); its transaction
    1 (`v0-5`, `v0-6`) aborts, so it rewinds and processes `v0-5` .. `v0-7` in transaction 2 (committed,
    to 8). processor-1 takes over but starts at 7, not 8, and processes `v0-7` .. `v0-9` again (committed,
    to 10): `v0-7`'s output is committed twice, an `eos-duplicate`. The final read of the output lacks
    `v0-3`'s record of transaction 0, below the committed offset: an `eos-lost` (and, of the transaction,
    a `lost-committed` record and a `partial-transaction`; of the final read, a `poll-skip`). Not
    anomalies: transaction 1's records (aborted, the read_committed final read skips them), and offsets
    with no record (the transaction markers)."""
    h = HistoryBuilder()
    inputs = h.sends(10)
    out = output_topic(TOPIC)
    first, second = processor_process(0), processor_process(1)
    offsets = iter(range(100))
    committed: list[tuple[str, int]] = []

    def process(who: str, n: int, batch: list[tuple[str, int]], end: str, to: int) -> str:
        txn = transaction_id(who, n)
        h.txn_begin(txn, process=who)
        written = []
        for value, _ in batch:
            written.append((output_value(value, txn), next(offsets)))
            h.txn_send(txn, *written[-1], topic=out, process=who)
        next(offsets)  # the commit or abort marker
        h.txn_end(end, txn, process=who)
        commit(h, who, {0: to}, outcome=OK if end == TXN_COMMIT else "fail", mode="transaction")
        if end == TXN_COMMIT:
            committed.extend(written)
        return txn

    join(h, first, [0])
    for value, offset in inputs[:7]:
        h.read(value, offset, process=first)
    torn = process(first, 0, inputs[:5], TXN_COMMIT, 5)
    process(first, 1, inputs[5:7], TXN_ABORT, 7)
    join(h, first, [0])  # the rewind to the committed 5
    for value, offset in inputs[5:8]:
        h.read(value, offset, process=first)
    process(first, 2, inputs[5:8], TXN_COMMIT, 8)
    revoke(h, first, [0])
    join(h, second, [0])
    for value, offset in inputs[7:]:
        h.read(value, offset, process=second)
    process(second, 0, inputs[7:], TXN_COMMIT, 10)
    h.final_read_start(high=10, isolation=RC)
    h.final_reads(inputs)
    lost = output_value("v0-3", torn)
    h.final_read_start(topic=out, high=next(offsets), isolation=RC)
    rows = [
        h.read(value, offset, topic=out, process=FINAL_READER_PROCESS, f=FINAL_READ)
        for value, offset in committed
        if value != lost
    ]
    again = {"v0-5", "v0-6", "v0-7"}
    return GroupScenario(
        h,
        {
            EOS_LOST: {"v0-3"},
            EOS_DUPLICATE: {"v0-7"},
            GROUP_DUPLICATE: again,
            LOST_COMMITTED: {lost},
            PARTIAL_TRANSACTION: {torn},
            # The final reader went from offset 2 to 4 past a committed record: in a log truncated for
            # real a later record takes its offset, here the gap stays.
            POLL_SKIP: {f"{FINAL_READER_PROCESS}:{rows[3]}"},
        },
        {AFTER_REBALANCE: again},
    )


GROUP_SCENARIOS = {
    "group-rebalance": group_rebalance_scenario,
    "group-anomalies": group_anomalies_scenario,
    "eos": eos_scenario,
}
