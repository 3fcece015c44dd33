"""Properties: generated histories with planted anomalies, checked by Spark and by the pandas reference.

The generator is a small model of a run: producers append to partition logs (acknowledged, indeterminate
or failed sends, outcomes delivered in any order), consumers poll their partitions in order and are now and
then reassigned (possibly rewinding) or handed an error, the nemesis leaves its rows, a final reader drains
every partition, and the brokers' replicas hold the logs (one maybe lagging). Such a history is clean by
construction. Then a random subset of anomaly kinds is planted, each by a local edit whose every
consequence the injection states — so the expected ids are known without running any checker — and both
engines must report exactly those ids.

Spark work per example is one `anomaly_ids` call on a few hundred rows; the example counts keep the module
near a minute on two cores.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from pyspark.sql import SparkSession

from kchaos.checkers.findings import find_anomalies
from kchaos.checkers.names import (
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
from kchaos.checkers.oracle import COMMITTED_LOSS_ANOMALIES, READ_ANOMALIES, GuaranteeContext
from kchaos.checkers.rules import RULES
from kchaos.checkers.verdicts import judge, judge_all, overall_verdict
from tests.checker_ids import anomaly_ids
from tests.histories import HistoryBuilder
from tests.reference.anomalies import reference_anomaly_ids
from tests.replica_dumps import ReplicasBuilder

TP = tuple[str, int]
INJECTIONS = (
    "lost-write",
    "duplicate",
    "offset-differs",
    "nonmonotonic-send",
    "ghost-poll",
    "poll-skip",
    "nonmonotonic-poll",
    "truncated-tail",
    "unseen",
    "replica-divergence",
)


@dataclass(eq=False)
class Event:
    """One history row to be; `index` is assigned when the history is rendered."""

    process: str
    type: str
    f: str
    topic: str | None = None
    partition: int | None = None
    offset: int | None = None
    value: str | None = None
    error: str | None = None
    detail: dict[str, Any] | None = None
    index: int = -1

    @property
    def tp(self) -> TP:
        assert self.topic is not None and self.partition is not None
        return (self.topic, self.partition)


@dataclass
class Run:
    """The model while a history is drawn: events so far, the partition logs, and what was planted."""

    ns: str
    tps: list[TP]
    events: list[Event] = field(default_factory=list)
    logs: dict[TP, list[str]] = field(default_factory=dict)
    expected: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    expected_reads: dict[str, list[Event]] = field(default_factory=lambda: defaultdict(list))
    lost: set[str] = field(default_factory=set)
    ghosts: list[Event] = field(default_factory=list)
    replicas: dict[int, dict[TP, list[tuple[str | None, int]]]] | None = None
    serial: int = 0

    def fresh(self, prefix: str) -> str:
        """A name (value, process) no other event of any run uses."""
        self.serial += 1
        return f"{self.ns}{prefix}-{self.serial}"

    def polls(self) -> list[Event]:
        return [e for e in self.events if e.f == "poll" and e.type == "ok"]

    def acked_values(self) -> dict[str, Event]:
        return {e.value: e for e in self.events if e.f == "send" and e.type == "ok" and e.value is not None}

    def runs(self) -> dict[tuple[str, TP, int], list[Event]]:
        """Each reader's reads of a partition between two of its assignments, in order."""
        segment: dict[str, int] = defaultdict(int)
        found: dict[tuple[str, TP, int], list[Event]] = defaultdict(list)
        for e in self.events:
            if e.f == "assign":
                segment[e.process] += 1
            elif e.f == "poll" and e.type == "ok":
                found[(e.process, e.tp, segment[e.process])].append(e)
        return found

    def insert_after(self, anchor: Event, *new: Event) -> None:
        at = next(i for i, e in enumerate(self.events) if e is anchor)
        self.events[at + 1 : at + 1] = list(new)

    def remove(self, event: Event) -> None:
        self.events = [e for e in self.events if e is not event]

    def append_send(self, process: str, tp: TP, value: str, *, acked_at: int | None) -> int:
        """A send by a process of its own, written at the end of the log; returns where it landed."""
        offset = len(self.logs[tp])
        self.logs[tp].append(value)
        self.events.append(Event(process, "invoke", "send", *tp, value=value))
        self.events.append(Event(process, "ok", "send", *tp, offset=acked_at, value=value))
        return offset


# --- the clean run -------------------------------------------------------------------------------------


def clean_run(draw: st.DrawFn, ns: str) -> Run:
    """A clean run whose topics and processes all start with `ns`, so several can share one history."""
    topics = draw(st.sampled_from([("kchaos",), ("kchaos", "other")]))
    partitions = draw(st.integers(1, 3))
    run = Run(ns, tps=[(f"{ns}{t}", p) for t in topics for p in range(partitions)])
    run.logs = {tp: [] for tp in run.tps}
    producers = draw(st.integers(1, 3))
    consumers = draw(st.integers(0, 2))
    positions = {c: dict.fromkeys(run.tps, 0) for c in range(consumers)}
    for c in range(consumers):
        run.events.append(
            Event(f"{ns}consumer-{c}", "ok", "assign", run.tps[0][0], detail={"partitions": []})
        )
    pending: list[Event] = []
    steps = draw(st.lists(st.sampled_from("ssssaapppred"), min_size=15, max_size=60))
    for step in steps:
        if step == "s":
            process = f"{ns}producer-{draw(st.integers(0, producers - 1))}"
            tp = draw(st.sampled_from(run.tps))
            outcome = draw(st.sampled_from(["ok", "ok", "ok", "info-written", "info-lost", "fail"]))
            value = run.fresh(process)
            run.events.append(Event(process, "invoke", "send", *tp, value=value))
            offset = None
            if outcome in ("ok", "info-written"):
                offset = len(run.logs[tp])
                run.logs[tp].append(value)
            if outcome == "ok":
                pending.append(Event(process, "ok", "send", *tp, offset=offset, value=value))
            elif outcome.startswith("info"):
                error = "_MSG_TIMED_OUT: Local: Message timed out"
                pending.append(Event(process, "info", "send", *tp, value=value, error=error))
            else:
                run.events.append(Event(process, "fail", "send", *tp, value=value, error="_QUEUE_FULL"))
        elif step == "a" and pending:
            # Outcomes arrive in any order across producers and partitions.
            run.events.append(pending.pop(draw(st.integers(0, len(pending) - 1))))
        elif step == "p" and consumers:
            c = draw(st.integers(0, consumers - 1))
            tp = draw(st.sampled_from(run.tps))
            for _ in range(draw(st.integers(1, 5))):
                at = positions[c][tp]
                if at < len(run.logs[tp]):
                    run.events.append(
                        Event(f"{ns}consumer-{c}", "ok", "poll", *tp, offset=at, value=run.logs[tp][at])
                    )
                    positions[c][tp] += 1
        elif step == "r" and consumers:
            c = draw(st.integers(0, consumers - 1))
            if draw(st.booleans()):  # rewinding is fine right after a reassignment
                positions[c] = {tp: draw(st.integers(0, at)) for tp, at in positions[c].items()}
            run.events.append(
                Event(f"{ns}consumer-{c}", "ok", "assign", run.tps[0][0], detail={"rewound": True})
            )
        elif step == "e" and consumers:
            c = draw(st.integers(0, consumers - 1))
            run.events.append(Event(f"{ns}consumer-{c}", "info", "poll", error="_TRANSPORT: broker down"))
        elif step == "d":
            phase = draw(st.sampled_from(["start", "stop"]))
            run.events.append(Event("nemesis", "info", "kill-leader", value=phase, detail={"kind": "crash"}))
    order = draw(st.permutations(pending))
    run.events.extend(order)
    return run


# --- planting anomalies --------------------------------------------------------------------------------


def plant_lost_write(draw: st.DrawFn, run: Run) -> None:
    """The log loses an acknowledged record; its offset holds a new, never acknowledged value, and every
    read of that offset (polls included) returns the new value."""
    acked = [e for e in run.acked_values().values() if e.offset is not None and e.value not in run.lost]
    if not acked:
        return
    ack = draw(st.sampled_from(acked))
    tp, offset = ack.tp, ack.offset
    assert offset is not None and ack.value is not None
    replacement = run.fresh("replacement")
    run.logs[tp][offset] = replacement
    for poll in run.polls():
        if poll.tp == tp and poll.offset == offset:
            poll.value = replacement
    run.lost.add(ack.value)
    run.expected[LOST_WRITE].add(ack.value)


def plant_duplicate(draw: st.DrawFn, run: Run) -> None:
    """An acknowledged record is appended a second time, at the end of some partition."""
    acked = [v for v, e in run.acked_values().items() if e.offset is not None and v not in run.lost]
    if not acked:
        return
    value = draw(st.sampled_from(sorted(acked)))
    run.logs[draw(st.sampled_from(run.tps))].append(value)
    run.lost.add(value)  # no longer a candidate for other plantings
    run.expected[DUPLICATE].add(value)


def plant_offset_differs(draw: st.DrawFn, run: Run) -> None:
    """A send of its own process, written at the end of a partition but acknowledged a bit further on."""
    tp = draw(st.sampled_from(run.tps))
    value = run.fresh("moved")
    landed = len(run.logs[tp])
    run.append_send(run.fresh("mover"), tp, value, acked_at=landed + draw(st.integers(1, 3)))
    run.lost.add(value)
    run.expected[INCONSISTENT_OFFSET].add(f"{OFFSET_DIFFERS}:{value}")


def plant_nonmonotonic_send(draw: st.DrawFn, run: Run) -> None:
    """A producer invokes `first` then `second`; `second` is written (and acknowledged) before `first`."""
    tp = draw(st.sampled_from(run.tps))
    process, first, second = run.fresh("reorder"), run.fresh("first"), run.fresh("second")
    run.events.append(Event(process, "invoke", "send", *tp, value=first))
    run.events.append(Event(process, "invoke", "send", *tp, value=second))
    for value in (second, first):
        run.events.append(Event(process, "ok", "send", *tp, offset=len(run.logs[tp]), value=value))
        run.logs[tp].append(value)
    run.lost.update((first, second))
    run.expected[NONMONOTONIC_SEND].add(second)


def plant_ghost_poll(draw: st.DrawFn, run: Run) -> None:
    """A poll returns a value the final read does not hold at that offset (nor anywhere): the offset was
    read with two values, and the polled one was truncated away."""
    polls = run.polls()
    if not polls:
        return
    poll = draw(st.sampled_from(polls))
    ghost = run.fresh("ghost")
    poll.value = ghost
    run.ghosts.append(poll)
    topic, partition = poll.tp
    run.expected[INCONSISTENT_OFFSET].add(f"{VALUES_DIFFER}:{topic}/{partition}/{poll.offset}")
    run.expected[TRUNCATED_READ].add(ghost)


def _middle_reads(run: Run, avoid: set[tuple[str, TP, int]]) -> list[tuple[tuple[str, TP, int], int]]:
    """Reads with a read before and after them in their run (ghost reads stay: they are planted too)."""
    return [
        (key, i)
        for key, reads in run.runs().items()
        if key not in avoid
        for i in range(1, len(reads) - 1)
        if not any(reads[i] is ghost for ghost in run.ghosts)
    ]


def _reader_of_its_own(draw: st.DrawFn, run: Run) -> None:
    """When no consumer read enough to plant in, a reader of its own reads the longest log from the start."""
    tp = max(run.tps, key=lambda tp: len(run.logs[tp]))
    process = run.fresh("reader")
    run.events.append(Event(process, "ok", "assign", tp[0], detail={"partitions": [tp[1]]}))
    for offset, value in enumerate(run.logs[tp]):
        run.events.append(Event(process, "ok", "poll", *tp, offset=offset, value=value))


def plant_poll_skip(draw: st.DrawFn, run: Run, used: set[tuple[str, TP, int]]) -> None:
    """A reader never got one record in the middle of a run of reads: the next read skips it."""
    if not _middle_reads(run, used):
        _reader_of_its_own(draw, run)
    choices = _middle_reads(run, used)
    if not choices:
        return
    key, i = draw(st.sampled_from(choices))
    reads = run.runs()[key]
    run.remove(reads[i])
    used.add(key)
    run.expected_reads[POLL_SKIP].append(reads[i + 1])


def plant_nonmonotonic_poll(draw: st.DrawFn, run: Run, used: set[tuple[str, TP, int]]) -> None:
    """A reader is handed a record again, `back` offsets before the one it just read."""
    choices = [(key, i) for key, reads in run.runs().items() if key not in used for i in range(len(reads))]
    if not choices:
        _reader_of_its_own(draw, run)
        choices = [
            (key, i) for key, reads in run.runs().items() if key not in used for i in range(len(reads))
        ]
    if not choices:
        return
    key, i = draw(st.sampled_from(choices))
    reads = run.runs()[key]
    read = reads[i]
    assert read.offset is not None
    back = draw(st.integers(0, min(read.offset, 2)))
    offset = read.offset - back
    again = replace(read, offset=offset, value=run.logs[read.tp][offset], index=-1)
    run.insert_after(read, again)
    used.add(key)
    run.expected_reads[NONMONOTONIC_POLL].append(again)
    if back > 0 and i + 1 < len(reads):
        run.expected_reads[POLL_SKIP].append(reads[i + 1])  # the run resumes past the record read again


def plant_truncated_tail(draw: st.DrawFn, run: Run, tails: dict[TP, int]) -> None:
    """A reader of its own polls records past the end of the final log: written, seen, then truncated."""
    tp = draw(st.sampled_from(run.tps))
    start = max(len(run.logs[tp]), tails.get(tp, 0))
    process = run.fresh("tail-reader")
    run.events.append(Event(process, "ok", "assign", tp[0], detail={"partitions": [tp[1]]}))
    for offset in range(start, start + draw(st.integers(1, 2))):
        value = run.fresh("tail")
        run.events.append(Event(process, "ok", "poll", *tp, offset=offset, value=value))
        run.expected[TRUNCATED_READ].add(value)
        tails[tp] = offset + 1


def plant_unseen(draw: st.DrawFn, run: Run, tails: dict[TP, int]) -> None:
    """Acknowledged sends of their own process, above every offset anything read in the partition."""
    tp = draw(st.sampled_from(run.tps))
    read_to = max([len(run.logs[tp]), tails.get(tp, 0)] + [e.offset + 1 for e in run.polls() if e.tp == tp])
    process = run.fresh("unseen")
    for offset in range(read_to, read_to + draw(st.integers(1, 2))):
        value = run.fresh("unseen-value")
        run.events.append(Event(process, "invoke", "send", *tp, value=value))
        run.events.append(Event(process, "ok", "send", *tp, offset=offset, value=value))
        run.expected[UNSEEN].add(value)
    tails[tp] = read_to


def final_read(run: Run) -> None:
    for tp in run.tps:
        log = run.logs[tp]
        run.events.append(
            Event("final-reader", "invoke", "final-read", *tp, detail={"from": 0, "to": len(log)})
        )
        for offset, value in enumerate(log):
            run.events.append(Event("final-reader", "ok", "final-read", *tp, offset=offset, value=value))


def draw_replicas(draw: st.DrawFn, run: Run) -> None:
    """1-3 brokers holding the final logs; one may lag (a prefix), all may end with a transaction marker."""
    brokers = draw(st.sampled_from([1, 2, 3, 3]))
    run.replicas = {}
    lagging = draw(st.sampled_from([None, *range(1, brokers + 1)]))
    marker = draw(st.booleans())
    for broker in range(1, brokers + 1):
        run.replicas[broker] = {}
        for tp in run.tps:
            log: list[tuple[str | None, int]] = [(v, o) for o, v in enumerate(run.logs[tp])]
            if marker:
                log.append((None, len(log)))
            if broker == lagging:
                log = log[: draw(st.integers(0, len(log)))]
            run.replicas[broker][tp] = log


def plant_replica_divergence(draw: st.DrawFn, run: Run) -> None:
    """One replica holds another value at an offset two or more replicas cover, or (strictly inside its
    range) no record at all."""
    if run.replicas is None:
        return
    replicas = run.replicas
    ranges = {
        (b, tp): (log[0][1], log[-1][1] + 1)
        for b, logs in replicas.items()
        for tp, log in logs.items()
        if log
    }
    choices = []
    for (broker, tp), (start, end) in ranges.items():
        for _, offset in replicas[broker][tp]:
            covering = [
                b for b in replicas if (b, tp) in ranges and ranges[(b, tp)][0] <= offset < ranges[(b, tp)][1]
            ]
            if len(covering) >= 2:
                choices.append((broker, tp, offset, start < offset < end - 1))
    if not choices:
        return
    broker, tp, offset, inside = draw(st.sampled_from(choices))
    log = replicas[broker][tp]
    at = next(i for i, (_, o) in enumerate(log) if o == offset)
    if inside and draw(st.booleans()):
        del log[at]
    else:
        log[at] = (run.fresh("diverged"), offset)
    run.expected[REPLICA_DIVERGENCE].add(f"{tp[0]}/{tp[1]}/{offset}")


def planted_run(draw: st.DrawFn, ns: str, with_replicas: bool) -> tuple[Run, list[str]]:
    """A clean run with each kind of anomaly planted or not, a coin toss each."""
    run = clean_run(draw, ns)
    planted = [name for name in INJECTIONS if draw(st.booleans())]
    used: set[tuple[str, TP, int]] = set()
    tails: dict[TP, int] = {}
    plant: dict[str, Callable[[], None]] = {
        "lost-write": lambda: plant_lost_write(draw, run),
        "duplicate": lambda: plant_duplicate(draw, run),
        "offset-differs": lambda: plant_offset_differs(draw, run),
        "nonmonotonic-send": lambda: plant_nonmonotonic_send(draw, run),
        "ghost-poll": lambda: plant_ghost_poll(draw, run),
        "poll-skip": lambda: plant_poll_skip(draw, run, used),
        "nonmonotonic-poll": lambda: plant_nonmonotonic_poll(draw, run, used),
        "truncated-tail": lambda: plant_truncated_tail(draw, run, tails),
        "unseen": lambda: plant_unseen(draw, run, tails),
    }
    for name in planted:  # INJECTIONS order: log edits first, then reads, then what lies past them
        if name in plant:
            plant[name]()
    final_read(run)
    if with_replicas:
        draw_replicas(draw, run)
        if "replica-divergence" in planted:
            for _ in range(draw(st.integers(1, 2))):
                plant_replica_divergence(draw, run)
    return run, planted


@dataclass
class Drawn:
    """A rendered history, its replicas, and the ids every anomaly must have."""

    history: HistoryBuilder
    replicas: ReplicasBuilder | None
    expected: dict[str, set[str]]
    planted: list[str]


@st.composite
def planted_histories(draw: st.DrawFn) -> Drawn:
    """One to three independent runs (own topics, processes and values) in one history: more planted
    anomalies per Spark check, and a check that runs sharing a history do not disturb each other."""
    with_replicas = draw(st.sampled_from([True, True, False]))
    runs = [planted_run(draw, f"r{n}.", with_replicas) for n in range(draw(st.integers(1, 3)))]
    h = HistoryBuilder()
    replicas = ReplicasBuilder() if with_replicas else None
    expected = {
        name: set()
        for name in ANOMALY_NAMES
        if (with_replicas or name != REPLICA_DIVERGENCE) and name not in TRANSACTION_ANOMALY_NAMES
    }
    for run, _ in runs:
        for e in run.events:
            e.index = h.event(
                e.process, e.type, e.f, topic=e.topic, partition=e.partition, offset=e.offset, key=e.value,  # type: ignore[arg-type]
                value=e.value, error=e.error, detail=e.detail,
            )  # fmt: skip
        for name, ids in run.expected.items():
            expected[name] |= ids
        for name, reads in run.expected_reads.items():
            expected[name] |= {f"{e.process}:{e.index}" for e in reads}
        if replicas is not None and run.replicas is not None:
            for broker, logs in run.replicas.items():
                for (topic, partition), log in logs.items():
                    replicas.log(broker, log, topic=topic, partition=partition)
    return Drawn(h, replicas, expected, [name for _, planted in runs for name in planted])


# --- the properties ------------------------------------------------------------------------------------

CHECKER_SETTINGS = settings(
    max_examples=15,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@CHECKER_SETTINGS
@given(planted_histories())
def test_both_engines_find_exactly_the_planted_anomalies(spark: SparkSession, drawn: Drawn) -> None:
    for name, ids in drawn.expected.items():
        event(f"{name}: {'some' if ids else 'none'}")
    replicas_pd = drawn.replicas.pandas() if drawn.replicas is not None else None
    assert reference_anomaly_ids(drawn.history.pandas(), replicas_pd) == drawn.expected
    replicas = drawn.replicas.frame(spark) if drawn.replicas is not None else None
    assert anomaly_ids(drawn.history.frame(spark), replicas) == drawn.expected


@settings(CHECKER_SETTINGS, max_examples=4)
@given(planted_histories(), st.integers(0, 3))
def test_findings_count_the_ids_and_show_the_first_ones(spark: SparkSession, drawn: Drawn, cap: int) -> None:
    replicas = drawn.replicas.frame(spark) if drawn.replicas is not None else None
    findings = find_anomalies(drawn.history.frame(spark), max_examples=cap, replicas=replicas)
    for name, finding in findings.items():
        if name not in drawn.expected:
            assert (finding.checked, finding.count, finding.examples) == (False, None, [])
            continue
        assert finding.count == len(drawn.expected[name]), name
        assert len(finding.examples) == min(cap, len(drawn.expected[name])), name
        assert {example["id"] for example in finding.examples} <= drawn.expected[name], name


# --- oracle properties ---------------------------------------------------------------------------------

contexts = st.builds(
    GuaranteeContext,
    acks=st.sampled_from(["all", "1"]),
    min_insync_replicas=st.integers(1, 3),
    replication_factor=st.integers(1, 5),
    unclean_leader_election=st.booleans(),
    idempotence=st.booleans(),
    fault_kinds=st.frozensets(
        st.sampled_from(["crash", "stop", "partition", "pause", "degrade", "reconfigure"])
    ),
    max_concurrent_crashed=st.integers(0, 5),
    sends_timed_out=st.integers(0, 3),
)


def committed_records_can_be_truncated(ctx: GuaranteeContext) -> bool:
    return ctx.unclean_leader_election or ctx.max_concurrent_crashed >= ctx.replication_factor


@given(contexts)
def test_readers_can_only_go_wrong_when_committed_records_are_truncated(ctx: GuaranteeContext) -> None:
    for anomaly in READ_ANOMALIES:
        judgement = judge(anomaly, 1, ctx)
        assert (judgement.expected == "possible") == committed_records_can_be_truncated(ctx), anomaly
        assert judgement.verdict == ("permitted" if committed_records_can_be_truncated(ctx) else "violation")


@given(contexts)
def test_sends_reorder_only_without_idempotence_or_after_truncation(ctx: GuaranteeContext) -> None:
    acks_1_failover = ctx.acks == "1" and bool(ctx.fault_kinds & {"crash", "stop", "partition", "pause"})
    possible = committed_records_can_be_truncated(ctx) or acks_1_failover or not ctx.idempotence
    assert (judge(NONMONOTONIC_SEND, 2, ctx).expected == "possible") == possible


@given(contexts, st.integers(0, 5))
def test_replica_divergence_is_never_expected(ctx: GuaranteeContext, count: int) -> None:
    judgement = judge(REPLICA_DIVERGENCE, count, ctx)
    assert (judgement.expected, judgement.rule_id) == ("none", "replicas-converge")
    assert judgement.verdict == ("ok" if count == 0 else "violation")


@given(contexts, st.dictionaries(st.sampled_from(ANOMALY_NAMES), st.one_of(st.none(), st.integers(0, 3))))
def test_unchecked_anomalies_never_decide_the_verdict(
    ctx: GuaranteeContext, counts: dict[str, int | None]
) -> None:
    judgements = judge_all(counts, ctx)
    checked = [j for j in judgements.values() if j.checked]
    assert overall_verdict(judgements.values()) == overall_verdict(checked)
    for name, count in counts.items():
        assert (judgements[name].verdict == "unchecked") == (count is None)
        assert judgements[name].to_json()["checked"] == (count is not None)


@given(contexts)
def test_the_deciding_rule_is_the_first_that_applies(ctx: GuaranteeContext) -> None:
    for anomaly in ANOMALY_NAMES:
        decided = judge(anomaly, 1, ctx).rule_id
        first = next(rule for rule in RULES if anomaly in rule.anomalies and rule.applies(ctx))
        assert decided == first.id
        if anomaly in COMMITTED_LOSS_ANOMALIES and committed_records_can_be_truncated(ctx):
            assert judge(anomaly, 1, ctx).expected == "possible"
