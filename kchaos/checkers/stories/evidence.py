"""What a run directory kept that a story is told from: the history's rows about the records asked for,
the cluster's rows, the final read's, the replica dump and the brokers' logs.

`RunEvidence.load` is the one place that reads the run directory for a record's story; every part it
cannot read becomes a line saying what is missing (`RunEvidence.missing`), never a failure. The history is
filtered in Arrow before any row becomes Python, so a long run costs its scan only.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from kchaos.model.events import (
    FINAL_READ,
    HARNESS_PROCESS,
    LEADER_WATCH_PROCESS,
    NEMESIS_PROCESS,
    OK,
    SEND,
    TXN_SEND,
)
from kchaos.model.history_files import history_path
from kchaos.model.run_files import RunDir


@dataclass
class RunEvidence:
    """What a run directory kept that a story is told from; a part that could not be read is None, with
    the reason in `missing`."""

    started_at: float
    record_rows: dict[str, list[dict[str, Any]]]  # value -> its send rows, in history order
    cluster_rows: list[dict[str, Any]]  # nemesis, leader watcher and harness phase rows
    final_reads: list[dict[str, Any]]  # the final read's rows
    replicas: list[dict[str, Any]] | None
    log_ends: dict[tuple[int, str, int], int]  # (broker, topic, partition) -> log end offset
    broker_logs: dict[int, str] | None
    missing: dict[str, str] = field(default_factory=dict)
    acks_all: bool = False  # the producers waited for every in-sync replica (config.json's acks)

    @classmethod
    def load(cls, run_dir: Path, values: Sequence[str]) -> RunEvidence:
        """Reads what `run_dir` holds about the records of `values`: their send rows and the final read's
        rows of them or of their offsets, the cluster's rows, the replicas and the brokers' logs. The
        history is filtered in Arrow before any row becomes Python, so a long run costs its scan only."""
        files = RunDir(run_dir)
        table = pq.read_table(history_path(run_dir))
        named = pc.is_in(table["value"], value_set=pa.array(values, table["value"].type))
        sends = pc.and_(pc.is_in(table["f"], value_set=pa.array([SEND, TXN_SEND], table["f"].type)), named)
        record_rows: dict[str, list[dict[str, Any]]] = {}
        for row in table.filter(sends).to_pylist():
            record_rows.setdefault(row["value"], []).append(row)
        offsets = [
            row["offset"] for rows in record_rows.values() for row in rows if row["offset"] is not None
        ]
        processes = pa.array([NEMESIS_PROCESS, LEADER_WATCH_PROCESS, HARNESS_PROCESS], table["process"].type)
        cluster_rows = table.filter(pc.is_in(table["process"], value_set=processes)).to_pylist()
        at_offsets = pc.is_in(table["offset"], value_set=pa.array(offsets, table["offset"].type))
        wanted = pc.or_kleene(pc.or_kleene(named, at_offsets), pc.not_equal(table["type"], OK))
        final_reads = table.filter(pc.and_kleene(pc.equal(table["f"], FINAL_READ), wanted)).to_pylist()
        missing: dict[str, str] = {}
        first = pc.min(table["wall_time"]).as_py()
        started_at = run_started_at(files, first)
        partitions = {row["partition"] for rows in record_rows.values() for row in rows}
        replicas, log_ends = read_replicas(files, missing, partitions, offsets, list(values))
        return cls(started_at, record_rows, cluster_rows, final_reads, replicas, log_ends,
                   read_broker_logs(files, missing), missing, acks_all(files))  # fmt: skip


def run_started_at(files: RunDir, first: float | None) -> float:
    """The run's start as config.json recorded it, else its first history row's time (`first`)."""
    try:
        started = json.loads(files.config.read_text(encoding="utf-8")).get("started_at")
    except (OSError, ValueError, AttributeError):
        started = None
    if isinstance(started, (int, float)):
        return float(started)
    return first or 0.0


def acks_all(files: RunDir) -> bool:
    """Whether the run's producers asked for acks=all (config.json), so that an acknowledged record was held
    by every in-sync replica; False when config.json does not say."""
    try:
        acks = json.loads(files.config.read_text(encoding="utf-8")).get("acks")
    except (OSError, ValueError, AttributeError):
        return False
    return str(acks).lower() in ("all", "-1")


def read_replicas(
    files: RunDir, missing: dict[str, str], partitions: Iterable[int], offsets: list[int], values: list[str]
) -> tuple[list[dict[str, Any]] | None, dict[tuple[int, str, int], int]]:
    """The dumped records of `partitions` at `offsets` or holding one of `values`, and where each replica's
    log ends: as the manifest says, else after its last record."""
    log_ends: dict[tuple[int, str, int], int] = {}
    try:
        manifest = json.loads(files.replicas_manifest.read_text(encoding="utf-8"))
        for replica in manifest.get("replicas", []):
            log_ends[(int(replica["broker"]), str(replica["topic"]), int(replica["partition"]))] = int(
                replica["log_end"]
            )
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        pass  # the log ends are a nicety: without them a log ends after its last record
    if not files.replicas_parquet.is_file():
        missing["replicas"] = (
            f"no {files.replicas_parquet.relative_to(files.path)}: the run ended before its replica dump "
            "(a stopped or failed run), or the dump failed (see logs/harness.log)"
        )
        return None, log_ends
    try:
        table = pq.read_table(files.replicas_parquet)
    except (OSError, ValueError) as exc:
        missing["replicas"] = f"{files.replicas_parquet} could not be read ({exc})"
        return None, log_ends
    ends = table.group_by(["broker", "topic", "partition"]).aggregate([("offset", "max")]).to_pylist()
    for end in ends:
        log_ends.setdefault((end["broker"], end["topic"], end["partition"]), end["offset_max"] + 1)
    ours = pc.is_in(table["partition"], value_set=pa.array(list(partitions), table["partition"].type))
    named = pc.or_(
        pc.is_in(table["offset"], value_set=pa.array(offsets, table["offset"].type)),
        pc.is_in(table["value"], value_set=pa.array(values, table["value"].type)),
    )
    return table.filter(pc.and_(ours, named)).to_pylist(), log_ends


def read_broker_logs(files: RunDir, missing: dict[str, str]) -> dict[int, str] | None:
    logs = {
        broker: path.read_text(encoding="utf-8", errors="replace")
        for broker, path in files.broker_logs().items()
        if path.is_file()
    }
    if not logs:
        missing["logs"] = (
            "no logs/kafka-N.log: the brokers' logs are saved when the run tears its cluster down, "
            "so a run killed before that has none"
        )
        return None
    return logs
