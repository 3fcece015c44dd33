"""The model of a run that the property tests draw histories from, and its clean-run generator.

Producers append to partition logs (acknowledged, indeterminate or failed sends, outcomes delivered in any
order), consumers poll their partitions in order and are now and then reassigned (possibly rewinding) or
handed an error, the nemesis leaves its rows, a final reader drains every partition, and the brokers'
replicas hold the logs (one maybe lagging). Such a history is clean by construction; `tests.planted_histories`
plants anomalies into it.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st

TP = tuple[str, int]


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
