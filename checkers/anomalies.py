"""The anomaly definitions (design.md §3): each is its occurrences, a DataFrame with one `id` per occurrence.

A history can be millions of rows, so nothing here collects it. The passes (`checkers.passes`) mark the
rows that take part in an anomaly; each anomaly's occurrences are cut from those marked rows, with an `id`
column (the identity the contract fixes, shared with the pandas reference in `checkers.reference`), the
columns that place it, and a stable order. Every finding is derived from the occurrences the same way: the
number of distinct ids, and the first `max_examples` occurrences in that order. Only those reach the
driver, together with the few history records they point at (the acknowledgement of a lost value, what was
read at its offset instead), fetched for all anomalies in one lookup, so examples can be followed by hand.

Adding an anomaly means a flag in a pass, one `Anomaly` in `DEFINITIONS`, a rule in the oracle, and the
same definition in the pandas reference.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import reduce
from itertools import chain, zip_longest
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from checkers.frames import ACK, FINAL_READ, POLL, TPO, HistoryViews
from checkers.names import (
    DUPLICATE,
    INCONSISTENT_OFFSET,
    LOST_WRITE,
    NONMONOTONIC_POLL,
    NONMONOTONIC_SEND,
    OFFSET_DIFFERS,
    POLL_SKIP,
    REPLICA_DIVERGENCE,
    TRUNCATED_READ,
    UNSEEN,
    VALUES_DIFFER,
)
from checkers.passes import Passes, flag

Example = dict[str, Any]
Record = dict[str, Any]
READ_KINDS = (POLL, FINAL_READ)


@dataclass(frozen=True)
class AnomalyFinding:
    """How often one anomaly occurred in a history, with the first few occurrences spelled out.

    `count` is None (and `checked` False) when the history lacks what the anomaly is judged from — replica
    dumps for `replica-divergence` — so "not checked" can never be read as "none found". `by_partition`
    (`lost-write` and `unseen` only, else None) breaks the count down by the partition the write was
    acknowledged in: examples are capped, and whether losses gather where the faults struck is the first
    thing a reader asks.
    """

    name: str
    count: int | None
    examples: list[Example] = field(default_factory=list)
    checked: bool = True
    by_partition: dict[str, int] | None = None


# --- the records examples point at -------------------------------------------------------------------------


@dataclass
class Wanted:
    """What the examples of a check want looked up: values, offsets of a partition, replica offsets."""

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


def _look_up(passes: Passes, wanted: Wanted) -> Records:
    """One scan of the history (and one of the replicas, if wanted) for every record the examples need."""
    views: HistoryViews = passes.views
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


# --- occurrences -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Explainer:
    """How an example is completed from the history: what to look up, then what to add."""

    wants: Callable[[Example, Wanted], None]
    add: Callable[[Example, Records], Example]


@dataclass(frozen=True)
class Occurrences:
    """One kind of occurrence of an anomaly: rows with an `id` and the columns that place it, in order."""

    frame: DataFrame
    order: tuple[str, ...]
    explainer: Explainer | None = None


@dataclass(frozen=True)
class Anomaly:
    """One anomaly: its name and how its occurrences are cut from the passes.

    Most anomalies have one kind of occurrence; `inconsistent-offset` has two, whose examples alternate so
    a flood of one cannot hide the other. Calling it returns its finding; the first call in a check does
    the shared work for every anomaly (counts, and one lookup for all examples) and the rest reuse it.
    """

    name: str
    occurrences: Callable[[Passes], list[Occurrences]]
    needs_replicas: bool = False

    def is_checked(self, passes: Passes) -> bool:
        return passes.replicas_checked or not self.needs_replicas

    def __call__(self, passes: Passes, max_examples: int) -> AnomalyFinding:
        key = f"findings/{max_examples}"
        if key not in passes.memo:
            passes.memo[key] = _all_findings(passes, max_examples)
        findings: dict[str, AnomalyFinding] = passes.memo[key]
        return findings[self.name]


def _ids(passes: Passes, anomalies: list[Anomaly]) -> DataFrame:
    """(anomaly, id) of every occurrence of the given anomalies, as one frame."""
    frames = [
        part.frame.select(F.lit(anomaly.name).alias("anomaly"), F.col("id"))
        for anomaly in anomalies
        for part in anomaly.occurrences(passes)
    ]
    return reduce(DataFrame.unionByName, frames)


def _all_findings(passes: Passes, max_examples: int) -> dict[str, AnomalyFinding]:
    checked = [anomaly for anomaly in DEFINITIONS if anomaly.is_checked(passes)]
    counted = _ids(passes, checked).groupBy("anomaly").agg(F.count_distinct("id").alias("count")).collect()
    counts = {row["anomaly"]: int(row["count"]) for row in counted}
    firsts: dict[str, list[tuple[Occurrences, list[Example]]]] = {}
    wanted = Wanted()
    for anomaly in checked:
        if not counts.get(anomaly.name) or max_examples <= 0:
            continue
        firsts[anomaly.name] = []
        for part in anomaly.occurrences(passes):
            rows = part.frame.orderBy(*part.order).limit(max_examples).collect()
            examples = [row.asDict(recursive=True) for row in rows]
            if part.explainer is not None:
                for example in examples:
                    part.explainer.wants(example, wanted)
            firsts[anomaly.name].append((part, examples))
    records = _look_up(passes, wanted) if firsts else Records()
    per_partition = _unread_by_partition(passes, counts)
    findings: dict[str, AnomalyFinding] = {}
    for anomaly in DEFINITIONS:
        if anomaly not in checked:
            findings[anomaly.name] = AnomalyFinding(anomaly.name, None, checked=False)
            continue
        explained = [
            [part.explainer.add(e, records) for e in examples] if part.explainer else examples
            for part, examples in firsts.get(anomaly.name, [])
        ]
        merged = [e for e in chain.from_iterable(zip_longest(*explained)) if e is not None]
        findings[anomaly.name] = AnomalyFinding(
            anomaly.name,
            counts.get(anomaly.name, 0),
            merged[:max_examples],
            by_partition=per_partition.get(anomaly.name),
        )
    return findings


# --- lost-write, unseen ----------------------------------------------------------------------------------


def _unread_acks(passes: Passes, column: str) -> DataFrame:
    return (
        passes.value()
        .filter(F.col(column))
        .select(
            F.col("value").alias("id"),
            "value",
            F.col("acked_partition").alias("partition"),
            F.col("acked_offset").alias("offset"),
            "ok_index",
            "highest_read_offset",
        )
    )


#: The anomalies counted per acknowledged partition, by their flag in the by-value pass.
BY_PARTITION_FLAGS = {LOST_WRITE: flag(LOST_WRITE), UNSEEN: flag(UNSEEN)}
#: The `by_partition` key of a write acknowledged without a partition (a foreign history may hold one).
UNKNOWN_PARTITION = "unknown"


def _unread_by_partition(passes: Passes, counts: dict[str, int]) -> dict[str, dict[str, int]]:
    """`lost-write` and `unseen` counts per acknowledged partition, keyed by the partition as a string.

    One small aggregation of the cached by-value pass (one row per flagged value, so the counts add up to
    the anomaly's count), and none at all when neither occurred.
    """
    counted: dict[str, dict[str, int]] = {name: {} for name in BY_PARTITION_FLAGS}
    if not any(counts.get(name) for name in BY_PARTITION_FLAGS):
        return counted
    flagged = reduce(lambda a, b: a | b, (F.col(column) for column in BY_PARTITION_FLAGS.values()))
    rows = (
        passes.value()
        .filter(flagged)
        .groupBy("acked_partition")
        .agg(*(F.sum(F.col(column).cast("int")).alias(column) for column in BY_PARTITION_FLAGS.values()))
        .orderBy("acked_partition")
        .collect()
    )
    for row in rows:
        partition = row["acked_partition"]
        key = str(partition) if partition is not None else UNKNOWN_PARTITION
        for name, column in BY_PARTITION_FLAGS.items():
            if row[column]:
                counted[name][key] = int(row[column])
    return counted


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


def lost_writes(passes: Passes) -> list[Occurrences]:
    """`lost-write`: an acknowledged send at or below the highest offset read from its partition, never read.

    Reads got past its offset, so the value had every chance to be seen; that it never was means the log
    no longer holds it there (or anywhere). Each example shows what was read at the acknowledged offset
    instead and at the read horizon, which usually points at the truncation that replaced it.
    """
    return [
        Occurrences(
            _unread_acks(passes, flag(LOST_WRITE)), ("ok_index", "value"), Explainer(_wants_lost, _with_lost)
        )
    ]


def unseen(passes: Passes) -> list[Occurrences]:
    """`unseen`: an acknowledged send never read and above every offset read from its partition.

    Unlike a `lost-write`, nothing read got past it: either the final read stopped short, or the
    partition's tail (this send included) was truncated and nothing was written after it. A partition
    with no reads at all puts every acknowledged send to it here.
    """
    frame = _unread_acks(passes, flag(UNSEEN))
    return [Occurrences(frame, ("ok_index", "value"), Explainer(_wants_ack, _with_ack))]


# --- duplicate, inconsistent-offset ----------------------------------------------------------------------


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


def duplicates(passes: Passes) -> list[Occurrences]:
    """`duplicate`: one value read at more than one distinct topic-partition-offset.

    Re-reading one offset (a second consumer, a rebalance) is not a duplicate; the value must occupy two
    places in the log, as a producer retry that re-appends a record does. Counted once per value.
    """
    frame = (
        passes.value()
        .filter(F.col(flag(DUPLICATE)))
        .select(F.col("value").alias("id"), "value", "first_read_index")
    )
    return [Occurrences(frame, ("first_read_index", "value"), Explainer(_wants_ack, _with_places))]


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


def inconsistent_offsets(passes: Passes) -> list[Occurrences]:
    """`inconsistent-offset`: reads disagree with each other or with the acknowledgement about an offset.

    Two kinds, counted together (ids and examples carry the kind):
    - `values-differ`: one topic-partition-offset read with different values, across consumers or reads
      (once per offset);
    - `offset-differs`: a value read at places other than the one its send was acknowledged at, and never
      at the acknowledged one (once per value).

    Refinement of design.md §3: a value read at its acknowledged offset *and* elsewhere is a `duplicate`
    only. The copy at the acknowledged offset shows the acknowledgement was truthful; the extra copy is a
    re-append, which `duplicate` already counts, and counting it twice would charge a producer retry as a
    consistency failure.
    """
    differ = (
        passes.offset()
        .filter(F.col(flag(VALUES_DIFFER)))
        .select(
            F.concat(F.lit(VALUES_DIFFER + ":"), F.concat_ws("/", *TPO)).alias("id"),
            F.lit(VALUES_DIFFER).alias("kind"),
            *TPO,
            "first_read_index",
        )
    )
    moved = (
        passes.value()
        .filter(F.col(flag(OFFSET_DIFFERS)))
        .select(
            F.concat(F.lit(OFFSET_DIFFERS + ":"), F.col("value")).alias("id"),
            F.lit(OFFSET_DIFFERS).alias("kind"),
            "value",
            "first_read_index",
        )
    )
    return [
        Occurrences(differ, TPO, Explainer(_wants_offset, _with_reads_at)),
        Occurrences(moved, ("first_read_index", "value"), Explainer(_wants_ack, _with_places)),
    ]


# --- nonmonotonic-send, poll-skip, nonmonotonic-poll ------------------------------------------------------


def nonmonotonic_sends(passes: Passes) -> list[Occurrences]:
    """`nonmonotonic-send`: a producer's send acknowledged at or below the offset of the send it invoked
    just before, to the same partition.

    Each example shows both sends — value, offset, when each was invoked and acknowledged — so the swap can
    be found in the history by index.
    """
    frame = (
        passes.send_order()
        .filter(F.col(flag(NONMONOTONIC_SEND)))
        .select(
            F.col("value").alias("id"),
            "process",
            "topic",
            "partition",
            "value",
            "offset",
            "invoke_index",
            "ok_index",
            "ok_wall_time",
            "previous_value",
            "previous_offset",
            "previous_invoke_index",
            "previous_ok_index",
        )
    )
    return [Occurrences(frame, ("invoke_index", "ok_index", "value"))]


def _poll_order(passes: Passes, column: str, gap_name: str, gap: Column) -> list[Occurrences]:
    frame = (
        passes.poll_order()
        .filter(F.col(column))
        .select(
            F.concat_ws(":", F.col("process"), F.col("index")).alias("id"),
            "process",
            "topic",
            "partition",
            "previous_offset",
            "previous_value",
            "previous_index",
            "offset",
            "value",
            "index",
            gap.alias(gap_name),
        )
    )
    return [Occurrences(frame, ("index", "process"))]


def poll_skips(passes: Passes) -> list[Occurrences]:
    """`poll-skip`: a reader's next record of a partition lies more than one offset past its previous one,
    with no reassignment between. `skipped` is how many offsets it jumped over."""
    return _poll_order(passes, flag(POLL_SKIP), "skipped", F.col("offset") - F.col("previous_offset") - 1)


def nonmonotonic_polls(passes: Passes) -> list[Occurrences]:
    """`nonmonotonic-poll`: a reader's next record of a partition is at or before its previous one, with no
    reassignment between. `back_by` is how far it went back (0: the same offset again)."""
    return _poll_order(passes, flag(NONMONOTONIC_POLL), "back_by", F.col("previous_offset") - F.col("offset"))


# --- truncated-read, replica-divergence -------------------------------------------------------------------


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
        "final_read_at_offset": _values(
            records.at(topic, example["partition"], example["offset"]), FINAL_READ
        ),
        "final_read_highest_offset": summary.get("final_read_highest_offset"),
    }


def truncated_reads(passes: Passes) -> list[Occurrences]:
    """`truncated-read`: a value a consumer polled during the run that the final read does not hold, in a
    partition the final read covered: it was visible, then lost. The example is its first such poll."""
    frame = (
        passes.value()
        .filter(F.col(flag(TRUNCATED_READ)))
        .select(
            F.col("value").alias("id"),
            "value",
            F.col("covered_poll_index").alias("poll_index"),
            F.col("covered_poll_partition").alias("partition"),
            F.col("covered_poll_offset").alias("offset"),
        )
    )
    return [Occurrences(frame, ("poll_index", "value"), Explainer(_wants_poll, _with_poll))]


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


def replica_divergences(passes: Passes) -> list[Occurrences]:
    """`replica-divergence`: an offset inside the ranges of two or more replicas at which they differ.

    Either the replicas covering it hold different values there, or one of them holds no record there.
    Each example lists what every replica holds at the offset (broker, value, leader epoch), which
    covering replicas hold nothing, and every replica's range of the partition.
    """
    frame = (
        passes.offset()
        .filter(F.col(flag(REPLICA_DIVERGENCE)))
        .select(F.concat_ws("/", *TPO).alias("id"), *TPO, "covering", "ranges")
    )
    return [Occurrences(frame, TPO, Explainer(_wants_replicas, _with_replicas))]


#: Every anomaly the checker reports, in report order.
DEFINITIONS: tuple[Anomaly, ...] = (
    Anomaly(LOST_WRITE, lost_writes),
    Anomaly(UNSEEN, unseen),
    Anomaly(DUPLICATE, duplicates),
    Anomaly(INCONSISTENT_OFFSET, inconsistent_offsets),
    Anomaly(NONMONOTONIC_SEND, nonmonotonic_sends),
    Anomaly(POLL_SKIP, poll_skips),
    Anomaly(NONMONOTONIC_POLL, nonmonotonic_polls),
    Anomaly(TRUNCATED_READ, truncated_reads),
    Anomaly(REPLICA_DIVERGENCE, replica_divergences, needs_replicas=True),
)

AnomalyCheck = Callable[[Passes, int], AnomalyFinding]

#: The registry `find_anomalies` runs, by the one name used everywhere. Entries are plain callables so a
#: caller (the benchmark) may wrap them, e.g. to time each.
ANOMALIES: dict[str, AnomalyCheck] = {anomaly.name: anomaly for anomaly in DEFINITIONS}


def find_anomalies(
    history: DataFrame, max_examples: int = 10, replicas: DataFrame | None = None
) -> dict[str, AnomalyFinding]:
    """Runs every registered anomaly over one history (and its replica dumps, when the run has them)."""
    passes = Passes(HistoryViews.of(history, replicas))
    try:
        return {name: check(passes, max_examples) for name, check in ANOMALIES.items()}
    finally:
        passes.unpersist()


def anomaly_ids(history: DataFrame, replicas: DataFrame | None = None) -> dict[str, set[str]]:
    """The ids of every occurrence of every anomaly checked, for tests and cross-checks with the reference.

    Collects every id, so it is for histories of test size; `replica-divergence` is absent without replicas.
    """
    passes = Passes(HistoryViews.of(history, replicas))
    try:
        checked = [anomaly for anomaly in DEFINITIONS if anomaly.is_checked(passes)]
        ids: dict[str, set[str]] = {anomaly.name: set() for anomaly in checked}
        for row in _ids(passes, checked).collect():
            ids[row["anomaly"]].add(row["id"])
        return ids
    finally:
        passes.unpersist()
