"""A replica divergence's story: where the replicas of a partition differ, what each holds there, and who
led each side when its records were written.

`replica-divergence` names offsets (its examples say what each replica holds at one), which tells that the
logs went apart but not how. The how is the same four sources a lost record's story is told from
(`kchaos.checkers.stories.record_story`): the replica dumps give every offset where the replicas differ and
which brokers hold the same records there (a *side*); the history gives the sends acknowledged at those
offsets, and the leader watcher's rows who led, in which ISR, when each side's records were acknowledged; the
brokers' own log lines about the partition say the rest (the truncation to a high watermark, the unclean
election).

Pure functions over rows, as the record's story; `load_divergence` is the one place that reads the run
directory, and every part it cannot read becomes a line saying what is missing.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from kchaos.checkers.stories.broker_log import partition_name
from kchaos.checkers.stories.evidence import RunEvidence, read_broker_logs, read_replicas, run_started_at
from kchaos.checkers.stories.leadership import Sighting, led_at, sightings
from kchaos.checkers.stories.timeline import (
    LEAD_S,
    LOG_LINES_PER_NODE,
    at,
    cluster_timeline,
    log_lines,
    logged_turns,
    once,
)
from kchaos.model.events import HARNESS_PROCESS, LEADER_WATCH_PROCESS, NEMESIS_PROCESS, OK, SEND, TXN_SEND
from kchaos.model.history_files import history_path
from kchaos.model.run_files import RunDir

#: Stretches of divergent offsets named one by one; more are counted.
STRETCHES_SHOWN = 5
#: Values of a side shown at the start of its stretch; a side holds hundreds.
VALUES_SHOWN = 3
#: Acknowledged sends listed at the told offset (one per side, normally: a retried send adds one).
ACKS_SHOWN = 6


@dataclass(frozen=True)
class Place:
    """A divergent offset to tell the story of, as `replica-divergence` names it: `topic/partition/offset`."""

    topic: str
    partition: int
    offset: int
    anomaly: str | None = None

    @property
    def id(self) -> str:
        return f"{self.topic}/{self.partition}/{self.offset}"

    @classmethod
    def parse(cls, text: str, anomaly: str | None = None) -> Place | None:
        """The place `text` names (`kchaos/2/28`), None when it names none."""
        topic, _, rest = text.rpartition("/")
        topic, _, partition = topic.rpartition("/")
        if not topic or not partition.isdigit() or not rest.isdigit():
            return None
        return cls(topic, int(partition), int(rest), anomaly)


def divergent_offsets(replicas: Sequence[Mapping[str, Any]]) -> dict[int, dict[int, str | None]]:
    """Per offset inside two or more replicas' ranges at which they differ (one partition's dumped rows):
    what each covering broker holds there, None for nothing. A replica's range runs from its first to its
    last dumped offset, as the checker takes it (`kchaos.checkers.passes.replica_screen.replica_ranges`)."""
    held: dict[int, dict[int, str | None]] = {}
    ranges: dict[int, tuple[int, int]] = {}
    for row in replicas:
        broker, offset = int(row["broker"]), int(row["offset"])
        held.setdefault(offset, {})[broker] = row["value"]
        low, high = ranges.get(broker, (offset, offset))
        ranges[broker] = (min(low, offset), max(high, offset))
    divergent = {}
    for offset, values in held.items():
        covering = [broker for broker, (low, high) in ranges.items() if low <= offset <= high]
        at_offset = {broker: values.get(broker) for broker in sorted(covering)}
        if len(covering) > 1 and len(set(at_offset.values())) > 1:
            divergent[offset] = at_offset
    return dict(sorted(divergent.items()))


def stretches(offsets: Sequence[int]) -> list[tuple[int, int]]:
    """Sorted offsets as runs of consecutive ones, (first, last) each."""
    runs: list[tuple[int, int]] = []
    for offset in offsets:
        if runs and offset == runs[-1][1] + 1:
            runs[-1] = (runs[-1][0], offset)
        else:
            runs.append((offset, offset))
    return runs


def sides(divergent: Mapping[int, Mapping[int, str | None]], offsets: Sequence[int]) -> list[list[int]]:
    """The brokers grouped by what they hold at `offsets`: brokers holding the same record at each (or
    nothing) are one side."""
    by_holdings: dict[tuple[str | None, ...], list[int]] = {}
    brokers = sorted({broker for offset in offsets for broker in divergent[offset]})
    for broker in brokers:
        holdings = tuple(divergent[offset].get(broker) for offset in offsets)
        by_holdings.setdefault(holdings, []).append(broker)
    return sorted(by_holdings.values())


def _span(first: int, last: int) -> str:
    return str(first) if first == last else f"{first}-{last}"


def _count(number: int, thing: str) -> str:
    return f"{number:,} {thing}{'' if number == 1 else 's'}"


@dataclass
class Divergence:
    """What a divergence's story is told from: the run's evidence (the partition's dumped records as its
    replicas, the sends of the records held at divergent offsets), the divergent offsets, and the sends
    acknowledged at them (`acks`, history order)."""

    evidence: RunEvidence
    divergent: dict[int, dict[int, str | None]]
    acks: list[dict[str, Any]]
    seen: list[Sighting]  # every source's word on who led the partition (`leadership.sightings`)


def load_divergence(run_dir: Path, topic: str, partition: int) -> Divergence:
    """Reads what `run_dir` holds about `topic`-`partition`'s divergence: every dumped record of the
    partition, the sends acknowledged at its divergent offsets or of the records held there, the cluster's
    rows and the brokers' logs."""
    files = RunDir(run_dir)
    missing: dict[str, str] = {}
    _, log_ends = read_replicas(files, missing, [], [], [])
    replicas: list[dict[str, Any]] | None = None
    if "replicas" not in missing:
        table = pq.read_table(files.replicas_parquet)
        ours = pc.and_(pc.equal(table["topic"], topic), pc.equal(table["partition"], partition))
        replicas = table.filter(ours).to_pylist()
    divergent = divergent_offsets(replicas or [])
    values = sorted({value for held in divergent.values() for value in held.values() if value is not None})
    history = pq.read_table(history_path(run_dir))
    sends = pc.is_in(history["f"], value_set=pa.array([SEND, TXN_SEND], history["f"].type))
    here = pc.and_kleene(
        pc.and_kleene(pc.equal(history["topic"], topic), pc.equal(history["partition"], partition)),
        pc.and_kleene(
            pc.equal(history["type"], OK),
            pc.is_in(history["offset"], value_set=pa.array(list(divergent), history["offset"].type)),
        ),
    )
    named = pc.is_in(history["value"], value_set=pa.array(values, history["value"].type))
    rows = history.filter(pc.and_kleene(sends, pc.or_kleene(named, here))).to_pylist()
    record_rows: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        record_rows.setdefault(row["value"], []).append(row)
    acks = [row for row in rows if row["type"] == OK and row["offset"] in divergent
            and (row["topic"], row["partition"]) == (topic, partition)]  # fmt: skip
    processes = pa.array([NEMESIS_PROCESS, LEADER_WATCH_PROCESS, HARNESS_PROCESS], history["process"].type)
    cluster_rows = history.filter(pc.is_in(history["process"], value_set=processes)).to_pylist()
    started_at = run_started_at(files, pc.min(history["wall_time"]).as_py())
    evidence = RunEvidence(started_at, record_rows, cluster_rows, [], replicas, log_ends,
                           read_broker_logs(files, missing), missing)  # fmt: skip
    return Divergence(evidence, divergent, acks, sightings(evidence, topic, partition))


def _led_by(evidence: RunEvidence, seen: Sequence[Sighting], wall_time: float) -> str:
    """Who led the partition at `wall_time` and in which ISR, and which source says so
    (`kchaos.checkers.stories.leadership`)."""
    return led_at(evidence, seen, wall_time).said(evidence)


def _ack_of(evidence: RunEvidence, value: str | None, topic: str, partition: int) -> dict[str, Any] | None:
    rows = evidence.record_rows.get(value or "", [])
    return next((row for row in rows if row["type"] == OK and (row["topic"], row["partition"]) ==
                 (topic, partition)), None)  # fmt: skip


def _side_lines(division: Divergence, place: Place, offsets: Sequence[int], side: list[int]) -> list[str]:
    """One side of a stretch: what its brokers hold there, with which epochs, and who led when those
    records were acknowledged."""
    evidence, divergent = division.evidence, division.divergent
    held = [divergent[offset].get(side[0]) for offset in offsets]
    records = [value for value in held if value is not None]
    who = f"broker{'s' if len(side) > 1 else ''} {', '.join(map(str, side))}"
    if not records:
        return [f"  {who}: nothing at these offsets"]
    epochs = sorted({int(row["leader_epoch"]) for row in evidence.replicas or []
                     if row["broker"] == side[0] and row["offset"] in set(offsets)})  # fmt: skip
    epoch = ("no epoch" if epochs == [-1] else
             f"leader epoch{'s' if len(epochs) > 1 else ''} {', '.join(map(str, epochs))}")  # fmt: skip
    shown = ", ".join(str(value) for value in held[:VALUES_SHOWN]) + (
        ", ..." if len(held) > VALUES_SHOWN else ""
    )
    lines = [f"  {who}: {_count(len(records), 'record')} ({epoch}): {shown}"]
    acks = [
        ack for ack in (_ack_of(evidence, value, place.topic, place.partition) for value in records) if ack
    ]
    if not acks:
        lines.append("    no send of these records was acknowledged in this partition")
        return lines
    acks.sort(key=lambda row: row["wall_time"])
    first, last = acks[0], acks[-1]
    leaders = once(_led_by(evidence, division.seen, row["wall_time"]) for row in acks)
    elsewhere = [row for row in acks if divergent.get(row["offset"], {}).get(side[0]) != row["value"]]
    lines.append(
        f"    acknowledged: {len(acks):,} of them, from {at(evidence, first['wall_time'])} to "
        f"{at(evidence, last['wall_time'])}, by {'; then '.join(leaders)}"
    )
    if elsewhere:
        lines.append(f"    {len(elsewhere):,} of them acknowledged at another offset than the one held here")
    return lines


def _acked_where(division: Divergence, place: Place, value: str | None, offset: int) -> str:
    """Where the record `value` held at `offset` was acknowledged, if not there: a retried send's copy, or a
    record no send was acknowledged for."""
    if value is None:
        return ""
    ack = _ack_of(division.evidence, value, place.topic, place.partition)
    if ack is None:
        return ", never acknowledged in this partition"
    if ack["offset"] == offset:
        return ""
    return f", acknowledged at offset {ack['offset']} ({at(division.evidence, ack['wall_time'])})"


_TRUNCATES_TO = re.compile(r"truncates its log to offset (\d+)")


def _kept(turn: str, first: int, last: int) -> str:
    """A truncation turn said with what it left of the stretch `first`-`last`: a replica that truncates only
    to an offset past `first` keeps its own records there, which is how replicas diverge before KIP-101."""
    match = _TRUNCATES_TO.search(turn)
    if match is None or int(match.group(1)) <= first:
        return turn
    return f"{turn}, keeping its records at offsets {_span(first, min(int(match.group(1)) - 1, last))}"


def tell_divergence(division: Divergence, place: Place, log_cap: int = LOG_LINES_PER_NODE) -> list[str]:
    """The story of the divergence at `place`, as lines of text."""
    evidence, divergent = division.evidence, division.divergent
    name = partition_name(place.topic, place.partition)
    why = f" ({place.anomaly})" if place.anomaly else ""
    story = [f"{place.id}{why}"]
    if evidence.replicas is None:
        return [*story, f"  unknown: {evidence.missing.get('replicas', 'no replica dump')}"]
    if not any(
        (row["topic"], row["partition"]) == (place.topic, place.partition) for row in evidence.replicas
    ):
        return [*story, f"  no broker's dump holds {name}"]
    if not divergent:
        return [*story, f"  the replicas of {name} agree at every offset they share"]
    runs = stretches(list(divergent))
    story.append(f"where the replicas of {name} differ at the end ({_count(len(divergent), 'offset')}):")
    shown = ", ".join(_span(first, last) for first, last in runs[:STRETCHES_SHOWN])
    more = f" and {len(runs) - STRETCHES_SHOWN} more stretches" if len(runs) > STRETCHES_SHOWN else ""
    story.append(f"  offsets {shown}{more}")
    first, last = next(((low, high) for low, high in runs if low <= place.offset <= high), runs[0])
    offsets = list(range(first, last + 1))
    story.append(f"each side of offsets {_span(first, last)} and who led when its records were acknowledged:")
    for side in sides(divergent, offsets):
        story += _side_lines(division, place, offsets, side)
    told = place.offset if place.offset in divergent else first
    if told != place.offset:
        story.append(f"at offset {place.offset} the replicas agree; the stretch's first offset, {told}:")
    else:
        story.append(f"at offset {told}:")
    for broker, value in divergent[told].items():
        epoch = next((row["leader_epoch"] for row in evidence.replicas
                      if (row["broker"], row["offset"]) == (broker, told)), None)  # fmt: skip
        shown_epoch = "" if epoch is None else " (no epoch)" if epoch < 0 else f" (leader epoch {epoch})"
        story.append(f"  broker {broker}: {value if value is not None else 'nothing'}{shown_epoch}"
                     + _acked_where(division, place, value, told))  # fmt: skip
    acks = [row for row in division.acks if row["offset"] == told]
    story.append(f"  {_count(len(acks), 'send')} acknowledged at offset {told}:")
    for ack in acks[:ACKS_SHOWN]:
        holders = [broker for broker, value in divergent[told].items() if value == ack["value"]]
        kept = f"held by broker {', '.join(map(str, holders))}" if holders else "held by no replica"
        story.append(
            f"    {at(evidence, ack['wall_time']):>9}  {ack['value']} by {ack['process']} (history row "
            f"{ack['index']}), {_led_by(evidence, division.seen, ack['wall_time'])}; {kept}"
        )
    times = [row["wall_time"] for row in division.acks] or [evidence.started_at]
    since = min(times) - LEAD_S
    events = cluster_timeline(evidence, place.topic, place.partition, since)
    turns = logged_turns(evidence, place.topic, place.partition, last + 1, min(times), since)
    events += [(time, _kept(text, first, last)) for time, text in turns]
    story.append(f"what the cluster did (seconds since the run started, from {at(evidence, since)}):")
    story += once(f"  {at(evidence, time):>9}  {text}" for time, text in sorted(events, key=lambda e: e[0]))
    story.append(f"the brokers' logs about {name} from {at(evidence, since)}:")
    story += log_lines(evidence, place.topic, place.partition, since, log_cap)
    return story
