"""Examples of anomalies completed from the history, so each can be followed by hand.

An occurrence row says which value or offset is wrong; a reader also wants the records it points at: the
acknowledgement of a lost value, what was read at its offset instead, what each replica holds there. An
`Explainer` says what an example wants looked up and how it is completed from what was found. The lookup
is one scan of the history (and one of the replica dumps) for the examples of every anomaly together, since
each scan reads the whole history however few records it keeps.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import Column
from pyspark.sql import functions as F

from kchaos.checkers.passes.frames import ACK, FINAL_READ, POLL, TPO
from kchaos.checkers.passes.history_passes import Passes

Example = dict[str, Any]
Record = dict[str, Any]
READ_KINDS = (POLL, FINAL_READ)


@dataclass
class Wanted:
    """What examples want looked up: values, offsets of a partition, replica offsets."""

    values: set[str] = field(default_factory=set)
    offsets: set[tuple[int, int]] = field(default_factory=set)  # (partition, offset), any topic
    replica_offsets: set[tuple[str, int, int]] = field(default_factory=set)


@dataclass
class Records:
    """The looked-up records: acks and reads by value and by (partition, offset); replica records by place;
    and the per-partition summary (read horizon, how far the final read went)."""

    by_value: dict[str, list[Record]] = field(default_factory=lambda: defaultdict(list))
    at_offset: dict[tuple[int, int], list[Record]] = field(default_factory=lambda: defaultdict(list))
    replicas_at: dict[tuple[str, int, int], list[Record]] = field(default_factory=lambda: defaultdict(list))
    partitions: dict[tuple[str, int], Record] = field(default_factory=dict)

    def at(self, topic: str | None, partition: int | None, offset: int | None) -> list[Record]:
        return [r for r in self.at_offset.get((partition, offset), []) if r["topic"] == topic]  # type: ignore[arg-type]

    def ack_of(self, value: str) -> Record | None:
        acks = [r for r in self.by_value.get(value, []) if r["kind"] == ACK]
        return acks[0] if acks else None


def look_up(passes: Passes, wanted: Wanted) -> Records:
    """One scan of the history (and one of the replicas, if wanted) for every record the examples need."""
    views = passes.views
    spark = views.history.sparkSession
    records = Records()
    for row in passes.partitions().collect():
        records.partitions[(row["topic"], row["partition"])] = row.asDict()
    if wanted.values or wanted.offsets:
        rows = views.rows(ACK, *READ_KINDS)
        hit: Column = F.col("value").isin(sorted(wanted.values)) if wanted.values else F.lit(False)
        if wanted.offsets:
            offsets = spark.createDataFrame(sorted(wanted.offsets), "partition int, offset bigint")
            rows = rows.join(
                F.broadcast(offsets.withColumn("wanted", F.lit(True))), ["partition", "offset"], "left"
            )
            hit = hit | F.coalesce(F.col("wanted"), F.lit(False))
        for row in rows.filter(hit).select("kind", "process", *TPO, "value", "index", "wall_time").collect():
            record = row.asDict()
            if record["value"] in wanted.values:
                records.by_value[record["value"]].append(record)
            if (record["partition"], record["offset"]) in wanted.offsets:
                records.at_offset[(record["partition"], record["offset"])].append(record)
    if wanted.replica_offsets and views.replicas is not None:
        places = spark.createDataFrame(
            sorted(wanted.replica_offsets), "topic string, partition int, offset bigint"
        )
        for row in views.replicas.join(F.broadcast(places), list(TPO), "left_semi").collect():
            record = row.asDict()
            records.replicas_at[(record["topic"], record["partition"], record["offset"])].append(record)
    return records


@dataclass(frozen=True)
class Explainer:
    """How an example is completed from the history: what to look up, then what to add."""

    wants: Callable[[Example, Wanted], None]
    add: Callable[[Example, Records], Example]


def _values(records: list[Record], *kinds: str) -> list[str]:
    return sorted({r["value"] for r in records if r["kind"] in kinds and r["value"] is not None})


def _place(record: Record) -> dict[str, Any]:
    return {name: record[name] for name in TPO}


def _place_order(place: tuple[Any, ...]) -> tuple[tuple[bool, Any], ...]:
    """Sorts places by topic, partition, offset, a missing coordinate first."""
    return tuple((item is not None, item if item is not None else 0) for item in place)


def _read_places(records: list[Record]) -> list[dict[str, Any]]:
    places = {(r["topic"], r["partition"], r["offset"]) for r in records if r["kind"] in READ_KINDS}
    return [dict(zip(TPO, place, strict=True)) for place in sorted(places, key=_place_order)]


# --- an acknowledged value never read (lost-write, unseen) -----------------------------------------------


def _wants_ack(example: Example, wanted: Wanted) -> None:
    wanted.values.add(example["value"])


def _with_ack(example: Example, records: Records) -> Example:
    """The acknowledgement spelled out: where, when, by whom; and the partition's read horizon."""
    ack = records.ack_of(example["value"]) or {}
    return {
        "id": example["id"],
        "value": example["value"],
        "topic": ack.get("topic"),
        "partition": example["partition"],
        "offset": example["offset"],
        "ok_index": example["ok_index"],
        "ok_wall_time": ack.get("wall_time"),
        "process": ack.get("process"),
        "highest_read_offset": example["highest_read_offset"],
    }


def _wants_lost(example: Example, wanted: Wanted) -> None:
    wanted.values.add(example["value"])
    for offset in (example["offset"], example["highest_read_offset"]):
        if example["partition"] is not None and offset is not None:
            wanted.offsets.add((example["partition"], offset))


def _with_lost(example: Example, records: Records) -> Example:
    """What was read at the acknowledged offset instead, and at the read horizon."""
    shown = _with_ack(example, records)
    topic, partition = shown["topic"], shown["partition"]
    return {
        **shown,
        "read_at_offset": _values(records.at(topic, partition, shown["offset"]), *READ_KINDS),
        "read_at_highest_offset": _values(
            records.at(topic, partition, shown["highest_read_offset"]), *READ_KINDS
        ),
    }


#: An acknowledged send: its acknowledgement, and the read horizon of its partition.
ACKNOWLEDGEMENT = Explainer(_wants_ack, _with_ack)
#: An acknowledged send never read: as `ACKNOWLEDGEMENT`, plus what was read at its offset instead and
#: at the read horizon.
READ_INSTEAD = Explainer(_wants_lost, _with_lost)


# --- a value or an offset read inconsistently (duplicate, inconsistent-offset) ------------------------------


def _with_places(example: Example, records: Records) -> Example:
    """Every place the value was read at, and where it was acknowledged."""
    found = records.by_value.get(example["value"], [])
    ack = records.ack_of(example["value"])
    return {
        **{k: v for k, v in example.items() if k != "first_read_index"},
        "acked_at": _place(ack) if ack else None,
        "read_at": _read_places(found),
        "ok_index": ack["index"] if ack else None,
        "first_read_index": example["first_read_index"],
    }


def _wants_offset(example: Example, wanted: Wanted) -> None:
    wanted.offsets.add((example["partition"], example["offset"]))


def _with_reads_at(example: Example, records: Records) -> Example:
    """The values read at the offset, who read each, and which (if any) was acknowledged there."""
    found = records.at(example["topic"], example["partition"], example["offset"])
    readers: dict[str, set[str]] = defaultdict(set)
    for record in found:
        if record["kind"] in READ_KINDS:
            readers[record["value"]].add(record["process"])
    return {
        **{k: v for k, v in example.items() if k != "first_read_index"},
        "values": sorted(readers),
        "reads": [{"value": value, "readers": sorted(readers[value])} for value in sorted(readers)],
        "acked_values": _values(found, ACK),
        "first_read_index": example["first_read_index"],
    }


#: A value: every place it was read at, and where it was acknowledged.
PLACES_READ = Explainer(_wants_ack, _with_places)
#: An offset: the values read there, by whom, and which was acknowledged there.
READS_AT_OFFSET = Explainer(_wants_offset, _with_reads_at)


# --- a record that disappeared (truncated-read, replica-divergence) ----------------------------------------


def _wants_poll(example: Example, wanted: Wanted) -> None:
    wanted.values.add(example["value"])
    if example["partition"] is not None and example["offset"] is not None:
        wanted.offsets.add((example["partition"], example["offset"]))


def _with_poll(example: Example, records: Records) -> Example:
    """The poll that returned the value, and what the final read holds at its offset."""
    polls = [r for r in records.by_value.get(example["value"], []) if r["index"] == example["poll_index"]]
    poll = polls[0] if polls else {}
    topic = poll.get("topic")
    summary = records.partitions.get((topic, example["partition"]), {})  # type: ignore[arg-type]
    return {
        "id": example["id"],
        "value": example["value"],
        "process": poll.get("process"),
        "topic": topic,
        "partition": example["partition"],
        "offset": example["offset"],
        "poll_index": example["poll_index"],
        "acknowledged": example["acknowledged"],
        "final_read_at_offset": _values(
            records.at(topic, example["partition"], example["offset"]), FINAL_READ
        ),
        "final_read_highest_offset": summary.get("final_read_highest_offset"),
    }


def _wants_replicas(example: Example, wanted: Wanted) -> None:
    wanted.replica_offsets.add((example["topic"], example["partition"], example["offset"]))


def _with_replicas(example: Example, records: Records) -> Example:
    """What each replica holds at the offset, which covering replicas hold nothing, and every range."""
    held = records.replicas_at.get((example["topic"], example["partition"], example["offset"]), [])
    replicas = sorted(
        ({"broker": r["broker"], "value": r["value"], "leader_epoch": r["leader_epoch"]} for r in held),
        key=lambda r: (r["broker"], repr(r["value"])),
    )
    holders = {r["broker"] for r in replicas}
    return {
        "id": example["id"],
        **{name: example[name] for name in TPO},
        "replicas": replicas,
        "missing_at": [broker for broker in example["covering"] if broker not in holders],
        "ranges": example["ranges"],
    }


#: A value polled, then gone: the poll that returned it, and what the final read holds at its offset.
POLL_THEN_GONE = Explainer(_wants_poll, _with_poll)
#: An offset the replicas disagree about: what each holds there, and every replica's range.
REPLICAS_AT_OFFSET = Explainer(_wants_replicas, _with_replicas)
