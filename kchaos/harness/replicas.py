"""Replica dumps: every broker's own copy of every partition log, written down after healing.

Clients only ever see the leader's log. Whether the followers hold the same records at the same offsets —
the property leader epochs (KIP-101, KIP-279) exist to keep — can only be seen in the replicas' files, so
after the final read each broker's segments are printed with Kafka's own `DumpLogSegments` inside its
container. The raw dump is kept (gzipped) for people; the parsed records go to `replicas.parquet`, which
`replica-divergence` compares offset by offset. The parsing is the one place that knows the dump's text,
which differs between releases (`DumpFormat`); the manifest records which form each broker printed.
"""

from __future__ import annotations

import bisect
import gzip
import json
import logging
import math
import re
import shlex
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import pyarrow as pa
import pyarrow.parquet as pq
from confluent_kafka import KafkaException
from confluent_kafka.admin import ConfigResource  # type: ignore[attr-defined]

from kchaos.harness.cluster import KafkaCluster, KafkaNode
from kchaos.harness.cluster_error import ClusterError
from kchaos.model.replica_records import REPLICA_SCHEMA
from kchaos.model.run_files import RunDir

log = logging.getLogger(__name__)

#: Kafka's log printer: a Java tool since 4.0, the Scala `kafka.tools` one before; both print alike.
DUMP_TOOLS = ("org.apache.kafka.tools.DumpLogSegments", "kafka.tools.DumpLogSegments")

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
#: The broker's own configuration as our image's entrypoint writes it, read where DescribeConfigs is not.
SERVER_PROPERTIES = "/etc/kafka/server.properties"

_DUMPING = re.compile(r"^Dumping (?P<path>\S+)$")
_BATCH = re.compile(
    r"^baseOffset: (?P<base>\d+) lastOffset: (?P<last>\d+) .*\bpartitionLeaderEpoch: (?P<epoch>-?\d+)\b"
)
_RECORD = re.compile(r"^(?P<in_batch>\| )?offset: (?P<offset>\d+) ")
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
    directory = Path(segment).parent.name
    topic, _, partition = directory.rpartition("-")
    if not topic or not partition.isdigit():
        raise ValueError(f"{segment}: not inside a <topic>-<partition> log directory")
    return topic, int(partition)


def is_live_log(segment: str) -> bool:
    """The segment is in a partition's own log directory (`<topic>-<partition>`), not in one a broker set
    aside: `<topic>-<partition>.<id>-delete` (a replica moved off it or a deleted topic, removed a minute
    later) or `-future` (a copy moving between its log dirs); those are no replica of the partition."""
    _, _, partition = Path(segment.strip()).parent.name.rpartition("-")
    return partition.isdigit()


def dump_format(text: str) -> DumpFormat:
    """Which `DumpFormat` a dump is printed in, told by its first record line and whether any batch line
    comes before it."""
    batch_lines = False
    for line in text.splitlines():
        if match := _RECORD.match(line):
            if match["in_batch"]:
                return "batches"
            return "batches-then-records" if batch_lines else "records"
        batch_lines = batch_lines or _BATCH.match(line) is not None
    return "batch-lines-only" if batch_lines else "no-records"


#: Per partition log, the batches its dump printed: (base offset, last offset, leader epoch), ascending.
BatchEpochs = dict[tuple[str, int], list[tuple[int, int, int]]]


def _lines_by_partition(text: str) -> Iterator[tuple[str, int, str]]:
    """Each line of a dump after the first `Dumping <segment>` line, with the partition of that segment."""
    topic: str | None = None
    partition = -1
    for line in text.splitlines():
        if match := _DUMPING.match(line):
            topic, partition = topic_partition_of(match["path"])
        elif topic is not None:
            yield topic, partition, line


def batch_epochs(text: str) -> BatchEpochs:
    """The leader epoch of every batch a dump printed, by partition and offset range."""
    found: BatchEpochs = {}
    for topic, partition, line in _lines_by_partition(text):
        if match := _BATCH.match(line):
            found.setdefault((topic, partition), []).append(
                (int(match["base"]), int(match["last"]), int(match["epoch"]))
            )
    for batches in found.values():
        batches.sort()
    return found


def epoch_at(batches: list[tuple[int, int, int]], offset: int) -> int:
    """The leader epoch of the batch holding `offset`, -1 if no printed batch holds it."""
    at = bisect.bisect_right(batches, (offset, math.inf, math.inf)) - 1
    if at >= 0 and batches[at][0] <= offset <= batches[at][1]:
        return batches[at][2]
    return -1


def parse_dump(text: str, broker: int) -> Iterator[ReplicaRecord]:
    """The records of a `DumpLogSegments --print-data-log` output, in file order, in any `DumpFormat`.

    A control record (a transaction marker) prints no payload: it occupies its offset with a null value,
    so a replica holding a marker where another holds data still shows up as divergent. A record takes
    the leader epoch of the batch whose offsets hold it, wherever the dump printed that batch; releases
    that print no batch lines print no leader epoch either, and their records carry -1.
    """
    epochs = batch_epochs(text)
    for topic, partition, line in _lines_by_partition(text):
        match = _RECORD.match(line)
        if match is None:
            continue
        offset = int(match["offset"])
        key: str | None = None
        value: str | None = None
        if _PAYLOAD in line:
            head, _, value = line.partition(_PAYLOAD)
            if _KEY in head:
                key = head.split(_KEY, 1)[1]
        epoch = epoch_at(epochs.get((topic, partition), []), offset)
        yield ReplicaRecord(broker, topic, partition, offset, epoch, key, value)


def _log_dirs(cluster: KafkaCluster, node: KafkaNode) -> list[str]:
    """Where this broker keeps partition logs, from its own configuration (images differ).

    Brokers before 0.11 have no DescribeConfigs; only our image runs releases that old, and its entrypoint
    wrote the configuration it started with to `SERVER_PROPERTIES`.
    """
    resource = ConfigResource(ConfigResource.Type.BROKER, str(node.node_id))
    admin = cluster.admin()  # held until the future resolves: a collected client cancels its requests
    try:
        entries = {
            name: entry.value
            for name, entry in admin.describe_configs([resource])[resource].result(30).items()
        }
    except KafkaException as exc:
        log.info(
            "node %s cannot describe its configuration (%s); reading %s", node.node_id, exc, SERVER_PROPERTIES
        )
        lines = node.kafka_exec(["cat", SERVER_PROPERTIES]).splitlines()
        entries = dict(line.split("=", 1) for line in lines if "=" in line and not line.startswith("#"))
    for name in ("log.dirs", "log.dir"):
        value = entries.get(name)
        if value:
            return [d for d in str(value).split(",") if d]
    raise ClusterError(f"node {node.node_id} reports neither log.dirs nor log.dir")


def dump_node(cluster: KafkaCluster, node: KafkaNode, topics: Sequence[str]) -> str:
    """DumpLogSegments over every segment of every partition of `topics` this broker holds, in one call
    (a JVM start each); the records name their topic, from the directory the dump prints."""
    globs = " ".join(
        f"{shlex.quote(d)}/{shlex.quote(topic)}-*/*.log" for d in _log_dirs(cluster, node) for topic in topics
    )
    listing = node.kafka_exec(["sh", "-c", f"ls -1 {globs} 2>/dev/null || true"])
    segments = sorted(
        line.strip() for line in listing.splitlines() if line.strip().endswith(".log") and is_live_log(line)
    )
    if not segments:
        return ""
    missing = ""
    files = ",".join(segments)
    for tool in DUMP_TOOLS:
        try:
            text = node.run_tool(tool, "--print-data-log", "--files", files)
        except ClusterError as exc:
            if "Could not find or load main class" not in str(exc):
                raise
            missing = str(exc)
            continue
        if dump_format(text) == "batch-lines-only":
            # 0.11's tool prints records only with --deep-iteration, and then no batch line: the batch
            # lines give the leader epochs, the second dump what each offset holds.
            text += node.run_tool(tool, "--print-data-log", "--deep-iteration", "--files", files)
        return text
    raise ClusterError(f"node {node.node_id} has none of {', '.join(DUMP_TOOLS)}: {missing}")


def _timed_dump(cluster: KafkaCluster, node: KafkaNode, topics: Sequence[str]) -> str:
    """`dump_node`, its time and size in the harness log: what a run's end waits for."""
    started = time.monotonic()
    text = dump_node(cluster, node, topics)
    log.info("node %s dumped: %d characters in %.1f s", node.node_id, len(text), time.monotonic() - started)
    return text


def _manifest(records: list[ReplicaRecord]) -> list[dict[str, Any]]:
    """Per replica: its range and the leader epochs in its log — enough to see at a glance who differs."""
    replicas: dict[tuple[int, str, int], dict[str, Any]] = {}
    for r in records:
        entry = replicas.setdefault(
            (r.broker, r.topic, r.partition),
            {"broker": r.broker, "topic": r.topic, "partition": r.partition, "log_start": r.offset,
             "log_end": r.offset + 1, "records": 0, "leader_epochs": set()},
        )  # fmt: skip
        entry["log_start"] = min(entry["log_start"], r.offset)
        entry["log_end"] = max(entry["log_end"], r.offset + 1)
        entry["records"] += 1
        entry["leader_epochs"].add(r.leader_epoch)
    return [
        {**entry, "leader_epochs": sorted(entry["leader_epochs"])} for _, entry in sorted(replicas.items())
    ]


def dump_replicas(cluster: KafkaCluster, topics: Sequence[str], run_dir: Path) -> Path:
    """Dumps every running broker's copy of `topics` into `run_dir/replicas/`; returns the Parquet path.

    Called after the final read, with the workload stopped and the cluster healed, so the files are at
    rest. A broker that cannot be dumped is named in the manifest rather than failing the run: the other
    replicas can still be compared, and the run's history is worth more than one missing dump. When no
    broker's dump could be read there is nothing to compare, and no Parquet file is written, so the check
    says `replica-divergence` was not checked rather than counting none.
    """
    files = RunDir(run_dir)
    files.replicas.mkdir(parents=True, exist_ok=True)
    records: list[ReplicaRecord] = []
    formats: dict[int, DumpFormat] = {}
    failed: dict[int, str] = {}
    nodes = sorted(cluster.nodes.items())
    # Every node at once: each dump is a JVM start and a read of its own disk inside its own container,
    # so the run waits for the slowest node rather than for the sum.
    with ThreadPoolExecutor(max_workers=max(1, len(nodes)), thread_name_prefix="replica-dump") as pool:
        dumps = [(node_id, pool.submit(_timed_dump, cluster, node, topics)) for node_id, node in nodes]
    for node_id, dumped in dumps:
        try:
            text = dumped.result()
        except Exception as exc:  # any failure is recorded in the manifest, not raised
            log.warning("replica dump of node %s failed: %s", node_id, exc)
            failed[node_id] = str(exc)[-400:]
            continue
        with gzip.open(files.replica_dump(node_id), "wt", encoding="utf-8") as fh:
            fh.write(text)
        formats[node_id] = dump_format(text)
        if formats[node_id] == "batch-lines-only":
            failed[node_id] = "the dump printed record batches but no record, so there is nothing to compare"
            continue
        records.extend(parse_dump(text, node_id))
    if set(formats) - set(failed):
        columns = {name: [getattr(r, name) for r in records] for name in REPLICA_SCHEMA.names}
        pq.write_table(pa.Table.from_pydict(columns, schema=REPLICA_SCHEMA), files.replicas_parquet)
    manifest = {
        "topics": list(topics), "replicas": _manifest(records), "dump_formats": formats, "failed": failed,
    }  # fmt: skip
    files.replicas_manifest.write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return files.replicas_parquet
