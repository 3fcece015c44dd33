"""Kafka's `DumpLogSegments --print-data-log` text, read into the columns of `replicas.parquet`.

The one place that knows the dump's text, which differs between releases (`DumpFormat`). A dump is read
with a few regular expressions over the whole text rather than line by line: a run at 10,000 sends a
second dumps about half a million records per broker, and reading those one Python line at a time was
most of the seconds between the final read and the verdict.
"""

from __future__ import annotations

import bisect
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any, Literal

import pyarrow as pa

from kchaos.model.replica_records import REPLICA_SCHEMA

#: The forms of the tool's output met so far, named by what their lines hold:
#: - `batches` (2.x on): a line per record batch with its partitionLeaderEpoch, then `| offset: N ...` per
#:   record;
#: - `batches-then-records` (0.11.0): the batch lines alone, then a second dump with `--deep-iteration`
#:   whose `offset: N position: ...` lines give the records; each record takes the leader epoch of the
#:   batch whose offset range holds it;
#: - `records` (0.10.2, message format v1): one `offset: N position: ...` line per record and no batch
#:   line, so no leader epoch (recorded as -1);
#: - `batch-lines-only`: batch lines with no record line, what 0.11 prints without `--deep-iteration`;
#:   nothing to compare, so such a dump counts as failed;
#: - `no-records`: no record in any segment.
DumpFormat = Literal["batches", "batches-then-records", "records", "batch-lines-only", "no-records"]

_SEGMENT = re.compile(r"^Dumping (\S+)$", re.MULTILINE)
_BATCH = re.compile(
    r"^baseOffset: (\d+) lastOffset: (\d+) .*?\bpartitionLeaderEpoch: (-?\d+)\b", re.MULTILINE
)
#: A record line: its offset, and the rest of the line from the space after it.
_RECORD = re.compile(r"^(\| )?offset: (\d+)( .*)$", re.MULTILINE)
_KEY = " key: "
_PAYLOAD = " payload: "


@dataclass(frozen=True)
class ReplicaRecord:
    broker: int
    topic: str
    partition: int
    offset: int
    leader_epoch: int
    key: str | None
    value: str | None


def topic_partition_of(segment: str) -> tuple[str, int]:
    """`/data/<topic>-<partition>/<base>.log` → (topic, partition); topics may contain dashes."""
    topic, _, partition = PurePosixPath(segment).parent.name.rpartition("-")
    if not topic or not partition.isdigit():
        raise ValueError(f"{segment}: not inside a <topic>-<partition> log directory")
    return topic, int(partition)


def dump_format(text: str) -> DumpFormat:
    """Which `DumpFormat` a dump is printed in, told by its first record line and whether any batch line
    comes before it."""
    record = _RECORD.search(text)
    batch = _BATCH.search(text)
    if record is None:
        return "batch-lines-only" if batch is not None else "no-records"
    if record.group(1):
        return "batches"
    return "batches-then-records" if batch is not None and batch.start() < record.start() else "records"


def epoch_at(batches: list[tuple[int, int, int]], offset: int) -> int:
    """The leader epoch of the batch holding `offset`, -1 if no printed batch holds it."""
    at = bisect.bisect_right(batches, (offset, math.inf, math.inf)) - 1
    if at >= 0 and batches[at][0] <= offset <= batches[at][1]:
        return batches[at][2]
    return -1


@dataclass
class ReplicaColumns:
    """The records of one or more brokers' dumps, column by column as `replicas.parquet` holds them."""

    columns: dict[str, list[Any]] = field(default_factory=lambda: {name: [] for name in REPLICA_SCHEMA.names})

    def add(self, text: str, broker: int) -> ReplicaColumns:
        """Adds the records of broker `broker`'s dump, in file order, in any `DumpFormat`.

        A control record (a transaction marker) prints no payload: it occupies its offset with a null
        value, so a replica holding a marker where another holds data still shows up as divergent. A record
        takes the leader epoch of the batch whose offsets hold it, wherever the dump printed that batch;
        releases that print no batch lines print no leader epoch either, and their records carry -1.
        """
        sections = _SEGMENT.split(text)
        batches: dict[tuple[str, int], list[tuple[int, int, int]]] = {}
        found: list[tuple[tuple[str, int], list[tuple[str, str, str]]]] = []
        for segment, body in zip(sections[1::2], sections[2::2], strict=True):
            place = topic_partition_of(segment)
            batches.setdefault(place, []).extend(
                (int(base), int(last), int(epoch)) for base, last, epoch in _BATCH.findall(body)
            )
            found.append((place, _RECORD.findall(body)))
        for printed in batches.values():
            printed.sort()
        columns = self.columns
        for (topic, partition), records in found:
            printed = batches[(topic, partition)]
            offsets = [int(offset) for _, offset, _ in records]
            columns["broker"] += [broker] * len(records)
            columns["topic"] += [topic] * len(records)
            columns["partition"] += [partition] * len(records)
            columns["offset"] += offsets
            columns["leader_epoch"] += [epoch_at(printed, offset) for offset in offsets]
            for _, _, rest in records:
                head, payload, value = rest.partition(_PAYLOAD)
                columns["value"].append(value if payload else None)
                columns["key"].append(head.split(_KEY, 1)[1] if payload and _KEY in head else None)
        return self

    def table(self) -> pa.Table:
        return pa.Table.from_pydict(self.columns, schema=REPLICA_SCHEMA)

    def records(self) -> Iterator[ReplicaRecord]:
        rows = zip(*(self.columns[name] for name in REPLICA_SCHEMA.names), strict=True)
        return (ReplicaRecord(*row) for row in rows)


def parse_dump(text: str, broker: int) -> Iterator[ReplicaRecord]:
    """The records of one broker's dump, in file order (`ReplicaColumns.add`)."""
    return ReplicaColumns().add(text, broker).records()


def replica_manifest(table: pa.Table) -> list[dict[str, Any]]:
    """Per replica: its range and the leader epochs in its log — enough to see at a glance who differs."""
    grouped = table.group_by(["broker", "topic", "partition"]).aggregate(
        [("offset", "min"), ("offset", "max"), ("offset", "count"), ("leader_epoch", "distinct")]
    )
    ordered = grouped.sort_by([("broker", "ascending"), ("topic", "ascending"), ("partition", "ascending")])
    return [_replica(row) for row in ordered.to_pylist()]


def _replica(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "broker": row["broker"],
        "topic": row["topic"],
        "partition": row["partition"],
        "log_start": row["offset_min"],
        "log_end": row["offset_max"] + 1,
        "records": row["offset_count"],
        "leader_epochs": sorted(row["leader_epoch_distinct"]),
    }
