"""A violating record's story: what happened to it, told from everything the run directory kept.

A verdict counts its anomalies and shows example rows, which says *that* a record was lost but not *how*.
The how is spread over four places, each written by a different party: the history (when the record was
sent and acknowledged, which faults began and healed, who led the partition, as the leader watcher saw
it), the replica dump (what each broker's log holds at the record's offset after healing) and the brokers'
own logs (truncations, elections, ISR changes, in their words). `explain` lays them side by side for one
record, in one clock: seconds since the run started.

Pure functions over rows (dicts, as pyarrow hands them out) and text, so a story is cheap to build and to
test: no Spark, no pandas (kchaos itself imports neither). What the run directory kept is read once, by
`kchaos.checkers.stories.evidence`; the cluster's side of the timeline is `kchaos.checkers.stories.timeline`,
the brokers' log lines `kchaos.checkers.stories.broker_log`. This module tells the record's own part: which
records a violation names, its send and acknowledgement, what each replica and the final read hold at its
offset.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kchaos.checkers.rules.verdict_names import VIOLATION
from kchaos.checkers.stories.broker_log import partition_log_lines, partition_name
from kchaos.checkers.stories.evidence import RunEvidence
from kchaos.checkers.stories.leadership import Led, led_at, sightings
from kchaos.checkers.stories.timeline import (
    LEAD_S,
    LOG_LINES_PER_NODE,
    at,
    cluster_timeline,
    log_lines,
    logged_turns,
    once,
)
from kchaos.model.events import (
    INVOKE,
    OK,
)


@dataclass(frozen=True)
class Subject:
    """A record to explain: its value, the anomaly that named it (None when asked for by value) and where
    that anomaly placed it."""

    value: str
    anomaly: str | None = None
    topic: str | None = None
    partition: int | None = None
    offset: int | None = None


def violating_records(
    results: Mapping[str, Any], limit: int, told_otherwise: Collection[str] = ()
) -> tuple[list[Subject], int, list[str]]:
    """The first `limit` records named by the examples of `results`' violated anomalies, how many records
    those anomalies count in all (results.json keeps only a few examples of each), and the violated
    anomalies whose examples name no record (a group's offsets), which a record's story cannot tell.
    Anomalies in `told_otherwise` are left out: another kind of story tells them (a divergence's, a
    transaction's, `kchaos.checkers.stories.teller`)."""
    subjects: list[Subject] = []
    seen: set[str] = set()
    total = 0
    untold: list[str] = []
    for name, anomaly in (results.get("anomalies") or {}).items():
        if not isinstance(anomaly, Mapping) or anomaly.get("verdict") != VIOLATION or name in told_otherwise:
            continue
        examples = [example for example in anomaly.get("examples") or [] if isinstance(example, Mapping)]
        if not any(isinstance(example.get("value"), str) for example in examples):
            untold.append(name)
            continue
        total += int(anomaly.get("count") or 0)
        for example in examples:
            value = example.get("value")
            if not isinstance(value, str) or value in seen:
                continue
            seen.add(value)
            acked_at = example.get("acked_at")
            place: Mapping[str, Any] = acked_at if isinstance(acked_at, Mapping) else example
            subjects.append(
                Subject(value, name, place.get("topic"), place.get("partition"), place.get("offset"))
            )
    return subjects[:limit], total, untold


def anomalies_naming(results: Mapping[str, Any], value: str) -> str | None:
    """The anomalies whose examples in `results` name the record `value`, with their verdicts
    (`duplicate: permitted`), None when none does: a record asked for by value is told as what it is."""
    named = [
        f"{name}: {anomaly.get('verdict')}"
        for name, anomaly in (results.get("anomalies") or {}).items()
        if isinstance(anomaly, Mapping)
        and any(
            value in (example.get("value"), example.get("id")) for example in anomaly.get("examples") or []
        )
    ]
    return ", ".join(named) or None


def _send_lines(
    evidence: RunEvidence, subject: Subject, rows: Sequence[Mapping[str, Any]]
) -> tuple[list[str], list[tuple[float, str]], Mapping[str, Any] | None]:
    """The record's send and acknowledgement, the timeline entries they make, and its `ok` row."""
    lines: list[str] = []
    events: list[tuple[float, str]] = []
    ack: Mapping[str, Any] | None = None
    for row in rows:
        place = (
            partition_name(row["topic"], row["partition"]) if row["partition"] is not None else row["topic"]
        )
        if row["type"] == INVOKE:
            text = f"sent by {row['process']} to {place} (history row {row['index']})"
        elif row["type"] == OK:
            ack = row
            text = f"acknowledged at {place} offset {row['offset']} (history row {row['index']})"
        else:
            text = f"send {row['type']}: {row['error'] or 'no error given'} (history row {row['index']})"
        lines.append(f"  {at(evidence, row['wall_time']):>9}  {text}")
        events.append((row["wall_time"], f"** this record {text.split(' (history')[0]}"))
    if ack is None:
        lines.append("  never acknowledged: no ok row for this send in the history")
        return lines, events, None
    return lines, events, ack


def _batch_epoch(evidence: RunEvidence, ack: Mapping[str, Any]) -> tuple[int, int] | None:
    """The leader epoch of the record's batch and the broker whose dump shows it, None where no replica holds
    the record with one (records before 0.11 carry none)."""
    for replica in evidence.replicas or []:
        if (replica["topic"], replica["partition"], replica["offset"], replica["value"]) == (
            ack["topic"], ack["partition"], ack["offset"], ack["value"]
        ) and replica["leader_epoch"] >= 0:  # fmt: skip
            return int(replica["leader_epoch"]), int(replica["broker"])
    return None


def _leader_lines(evidence: RunEvidence, ack: Mapping[str, Any]) -> tuple[list[str], Led]:
    """Who acknowledged the record, in which ISR and leader epoch, each from the source that shows it, and
    whether the leader watcher's view was stale then."""
    batch = _batch_epoch(evidence, ack)
    seen = sightings(evidence, ack["topic"], ack["partition"])
    led = led_at(evidence, seen, ack["wall_time"], batch[0] if batch else None)
    lines = [f"  by {led.said(evidence)}"]
    if led.stale and led.leader is not None and led.leader.leader is not None:
        lines.append(f"  {led.stale}")
    lines.append(f"  in {_epoch(evidence, ack, batch)}")
    return lines, led


def _epoch(evidence: RunEvidence, ack: Mapping[str, Any], batch: tuple[int, int] | None) -> str:
    """The leader epoch the record was appended in: its batch's epoch in a replica that holds it, else the
    last election the brokers logged before the ack."""
    if batch is not None:
        return f"leader epoch {batch[0]} (its batch, on broker {batch[1]})"
    elections = [line for node, text in (evidence.broker_logs or {}).items()
                 for line in partition_log_lines(node, text, ack["topic"], ack["partition"], 0.0)
                 if line.epoch is not None and line.wall_time <= ack["wall_time"]]  # fmt: skip
    if elections:
        last = max(elections, key=lambda line: line.wall_time)
        return f"leader epoch {last.epoch} (the last election logged before it, by broker {last.broker})"
    return (
        "an unknown leader epoch: no replica holds the record with one (records before 0.11 carry none) and "
        "no broker logged an election of the partition before the ack"
    )


def _replica_lines(evidence: RunEvidence, value: str, topic: str, partition: int, offset: int) -> list[str]:
    if evidence.replicas is None:
        return [f"  unknown: {evidence.missing.get('replicas', 'no replica dump')}"]
    rows = [row for row in evidence.replicas if row["topic"] == topic and row["partition"] == partition]
    dumped = {broker for broker, name, number in evidence.log_ends if (name, number) == (topic, partition)}
    brokers = sorted({row["broker"] for row in rows} | dumped)
    if not brokers:
        return [f"  no broker's dump holds {partition_name(topic, partition)}"]
    lines = []
    for broker in brokers:
        mine = [row for row in rows if row["broker"] == broker]
        here = next((row for row in mine if row["offset"] == offset), None)
        elsewhere = [row["offset"] for row in mine if row["value"] == value and row["offset"] != offset]
        if here is None:
            end = evidence.log_ends.get((broker, topic, partition), 0)
            text = f"no record at offset {offset} (log ends at {end})"
        else:
            epoch = f"epoch {here['leader_epoch']}" if here["leader_epoch"] >= 0 else "no epoch"
            whose = "this record" if here["value"] == value else f"{here['value']} ({epoch}), not this record"
            text = f"offset {offset} holds {whose}" + (f" ({epoch})" if here["value"] == value else "")
        if elsewhere:
            also = "it is also" if here is not None and here["value"] == value else "this record is"
            text += f"; {also} at offset {', '.join(map(str, elsewhere))}"
        lines.append(f"  broker {broker}: {text}")
    return lines


def _final_read_line(evidence: RunEvidence, value: str, topic: str, partition: int, offset: int) -> str:
    rows = [row for row in evidence.final_reads if (row["topic"], row["partition"]) == (topic, partition)]
    if not rows:
        return "  the final read did not read this partition"
    reads = [row for row in rows if row["type"] == OK]
    found = [row["offset"] for row in reads if row["value"] == value]
    at = [row["value"] for row in reads if row["offset"] == offset]
    if found:
        return f"  the final read returned this record at offset {', '.join(map(str, found))}"
    return (
        f"  the final read did not return this record; at offset {offset} it returned "
        f"{', '.join(at) if at else 'nothing'}"
    )


def tell(evidence: RunEvidence, subject: Subject, log_cap: int = LOG_LINES_PER_NODE) -> list[str]:
    """The story of one record, as lines of text."""
    rows = evidence.record_rows.get(subject.value, [])
    why = f" ({subject.anomaly})" if subject.anomaly else ""
    story = [f"{subject.value}{why}"]
    if not rows:
        return [*story, "  the history holds no send of this record"]
    send_lines, own_events, ack = _send_lines(evidence, subject, rows)
    story += send_lines
    held: list[tuple[int, float, int]] = []
    if ack is not None:
        leader_lines, led = _leader_lines(evidence, ack)
        story += leader_lines
        if ack["offset"] is not None:
            held = [(node, ack["wall_time"], ack["offset"] + 1) for node in led.holders(evidence.acks_all)]
    topic = subject.topic or (ack or rows[0])["topic"]
    partition = subject.partition if subject.partition is not None else (ack or rows[0])["partition"]
    offset = subject.offset if subject.offset is not None else (ack["offset"] if ack else None)
    if topic is None or partition is None:
        return [*story, "  sent to no known partition, so nothing more can be told"]
    since = rows[0]["wall_time"] - LEAD_S
    turns = logged_turns(evidence, topic, partition, offset, rows[0]["wall_time"], since, held)
    events = sorted(
        own_events + cluster_timeline(evidence, topic, partition, since) + turns, key=lambda e: e[0]
    )
    story.append(f"what the cluster did (seconds since the run started, from {at(evidence, since)}):")
    story += once(f"  {at(evidence, time):>9}  {text}" for time, text in events)
    if offset is not None:
        story.append(
            f"what each replica holds at {partition_name(topic, partition)} offset {offset} at the end:"
        )
        story += _replica_lines(evidence, subject.value, topic, partition, offset)
        story.append(_final_read_line(evidence, subject.value, topic, partition, offset))
    story.append(f"the brokers' logs about {partition_name(topic, partition)} from {at(evidence, since)}:")
    story += log_lines(evidence, topic, partition, since, log_cap)
    return story
