"""Synthetic histories with planted anomalies: a clean run (`tests.history_model`) edited locally so that
each planted anomaly's every consequence is stated by the injection, so the expected ids are known without
running any checker.

Apart from the model since planting is its own concern: each `plant_*` is one kind of anomaly, and
`planted_histories` renders one to three planted runs into one history with its replicas.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from hypothesis import strategies as st

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
from tests.histories import HistoryBuilder
from tests.history_model import TP, Event, Run, clean_run, draw_replicas, final_read
from tests.replica_dumps import ReplicasBuilder

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
