"""Replica dumps: every broker's own copy of every partition log, written down after healing.

Clients only ever see the leader's log. Whether the followers hold the same records at the same offsets —
the property leader epochs (KIP-101, KIP-279) exist to keep — can only be seen in the replicas' files, so
after the final read each broker's segments are printed with Kafka's own `DumpLogSegments` inside its
container. The raw dump is kept (gzipped) for people; the parsed records go to `replicas.parquet`, which
`replica-divergence` compares offset by offset. Reading the dump's text, which differs between releases, is
`kchaos.harness.dump_text`'s; the manifest records which form each broker printed.
"""

from __future__ import annotations

import gzip
import json
import logging
import shlex
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from confluent_kafka import KafkaException
from confluent_kafka.admin import ConfigResource  # type: ignore[attr-defined]

from kchaos.harness.cluster import KafkaCluster
from kchaos.harness.cluster_error import ClusterError
from kchaos.harness.dump_text import DumpFormat, ReplicaColumns, dump_format, replica_manifest
from kchaos.harness.kafka_node import KafkaNode
from kchaos.model.run_files import RunDir

log = logging.getLogger(__name__)

#: Kafka's log printer: a Java tool since 4.0, the Scala `kafka.tools` one before; both print alike.
DUMP_TOOLS = ("org.apache.kafka.tools.DumpLogSegments", "kafka.tools.DumpLogSegments")


def is_live_log(segment: str) -> bool:
    """The segment is in a partition's own log directory (`<topic>-<partition>`), not in one a broker set
    aside: `<topic>-<partition>.<id>-delete` (a replica moved off it or a deleted topic, removed a minute
    later) or `-future` (a copy moving between its log dirs); those are no replica of the partition."""
    _, _, partition = Path(segment.strip()).parent.name.rpartition("-")
    return partition.isdigit()


def _log_dirs(cluster: KafkaCluster, node: KafkaNode) -> list[str]:
    """Where this broker keeps partition logs, from its own configuration (images differ).

    Brokers before 0.11 have no DescribeConfigs; only our image runs releases that old, and its entrypoint
    wrote the configuration it started with to the node's `conf_file`.
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
            "node %s cannot describe its configuration (%s); reading %s", node.node_id, exc, node.conf_file
        )
        lines = node.kafka_exec(["cat", str(node.conf_file)]).splitlines()
        entries = dict(line.split("=", 1) for line in lines if "=" in line and not line.startswith("#"))
    for name in ("log.dirs", "log.dir"):
        value = entries.get(name)
        if value:
            return [d for d in str(value).split(",") if d]
    raise ClusterError(f"node {node.node_id} reports neither log.dirs nor log.dir")


def dump_node(cluster: KafkaCluster, node: KafkaNode, topics: Sequence[str]) -> str:
    """DumpLogSegments over every segment of every partition of `topics` this broker holds, in one call
    (a JVM start each); the records name their topic, from the directory the dump prints."""
    return gzip.decompress(dump_node_gzipped(cluster, node, topics)).decode(errors="replace")


def dump_node_gzipped(cluster: KafkaCluster, node: KafkaNode, topics: Sequence[str]) -> bytes:
    """`dump_node`'s text as gzip, compressed where it was printed (`KafkaNode.run_tool_gzipped`): the
    form it is kept in (`RunDir.replica_dump`), and a fraction of what the engine would carry otherwise."""
    globs = " ".join(
        f"{shlex.quote(d)}/{shlex.quote(topic)}-*/*.log" for d in _log_dirs(cluster, node) for topic in topics
    )
    listing = node.kafka_exec(["sh", "-c", f"ls -1 {globs} 2>/dev/null || true"])
    segments = sorted(
        line.strip() for line in listing.splitlines() if line.strip().endswith(".log") and is_live_log(line)
    )
    if not segments:
        return b""
    missing = ""
    files = ",".join(segments)
    for tool in DUMP_TOOLS:
        try:
            dumped = node.run_tool_gzipped(tool, "--print-data-log", "--files", files)
        except ClusterError as exc:
            if "Could not find or load main class" not in str(exc):
                raise
            missing = str(exc)
            continue
        if dump_format(gzip.decompress(dumped).decode(errors="replace")) == "batch-lines-only":
            # 0.11's tool prints records only with --deep-iteration, and then no batch line: the batch
            # lines give the leader epochs, the second dump what each offset holds (a second gzip member).
            dumped += node.run_tool_gzipped(tool, "--print-data-log", "--deep-iteration", "--files", files)
        return dumped
    raise ClusterError(f"node {node.node_id} has none of {', '.join(DUMP_TOOLS)}: {missing}")


@dataclass(frozen=True)
class NodeDump:
    """One broker's dump, read: the form its tool printed, and its records (none for a form that holds no
    record to compare)."""

    form: DumpFormat
    records: pa.Table


def _read_dump(cluster: KafkaCluster, node: KafkaNode, topics: Sequence[str], files: RunDir) -> NodeDump:
    """`dump_node`, kept gzipped for people (`RunDir.replica_dump`) as the node compressed it, and read; its
    time and size in the harness log: what a run's end waits for. Read in its own thread, while the other
    nodes' tools still print."""
    started = time.monotonic()
    dumped = dump_node_gzipped(cluster, node, topics)
    files.replica_dump(node.node_id).write_bytes(dumped)
    text = gzip.decompress(dumped).decode(errors="replace")
    form = dump_format(text)
    columns = ReplicaColumns()
    if form != "batch-lines-only":
        columns.add(text, node.node_id)
    log.info("node %s dumped: %d characters in %.1f s", node.node_id, len(text), time.monotonic() - started)
    return NodeDump(form, columns.table())


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
    tables = [ReplicaColumns().table()]
    formats: dict[int, DumpFormat] = {}
    failed: dict[int, str] = {}
    nodes = sorted(cluster.nodes.items())
    # Every node at once: each dump is a JVM start and a read of its own disk inside its own container.
    with ThreadPoolExecutor(max_workers=max(1, len(nodes)), thread_name_prefix="replica-dump") as pool:
        dumps = [(node_id, pool.submit(_read_dump, cluster, node, topics, files)) for node_id, node in nodes]
    for node_id, dumped in dumps:
        try:
            read = dumped.result()
        except Exception as exc:  # any failure is recorded in the manifest, not raised
            log.warning("replica dump of node %s failed: %s", node_id, exc)
            failed[node_id] = str(exc)[-400:]
            continue
        formats[node_id] = read.form
        if read.form == "batch-lines-only":
            failed[node_id] = "the dump printed record batches but no record, so there is nothing to compare"
            continue
        tables.append(read.records)
    table = pa.concat_tables(tables)
    if set(formats) - set(failed):
        pq.write_table(table, files.replicas_parquet)
    manifest = {
        "topics": list(topics),
        "replicas": replica_manifest(table),
        "dump_formats": formats,
        "failed": failed,
    }
    files.replicas_manifest.write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return files.replicas_parquet
