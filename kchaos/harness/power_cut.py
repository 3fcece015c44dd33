"""The power cut a killed node goes through before it starts again, as the image's entrypoint performs it.

A SIGKILLed container keeps its page cache: every byte the broker wrote survives, as after a process
crash. A power loss also loses what the OS had not yet written to disk. kchaos images preload a small
library into the broker JVM that journals every fsync/fdatasync/msync (and the truncations, renames and
deletions that change what a name holds), and carry `powercut`, which cuts every file in the log dirs back
to its last synced size. This module is the harness's side of that contract (the paths are the ones
kchaos/compose/kafka/entrypoint.sh uses): arm the cut in a killed container, so its next start applies it
before Kafka reads anything, and read back what was dropped.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from kchaos.harness.kafka_node import KafkaNode

#: Under the node's state dir.
PENDING = "power-cut-pending"
REPORT = "power-cut-report.jsonl"
#: What a node needs for a power cut, under its Kafka home: the cutter, and the journal library preloaded
#: into the broker.
TOOLS = (PurePosixPath("bin/powercut"), PurePosixPath("lib/libsyncjournal.so"))

#: How long a restarted node's entrypoint may take to cut its logs before the report is read.
CUT_TIMEOUT = 60.0


def arm(node: KafkaNode, tear: str = "none", dirents: str = "kept") -> None:
    """Leaves the mark that makes the node's next start cut its logs; the node must be down already.

    The mark is written while the broker is down (Docker copies into a stopped container; an SSH node's
    files are there whatever its process does), so the cut is decided while the power is off and happens
    before the broker can read a byte: restart and cut are one step, whoever restarts the node. The
    mark carries the cut's options (`tear`, `dirents`: `kchaos.model.faults.process.TEARS`, `DIRENTS`), which
    the entrypoint hands to the cutter.
    """
    node.put_file(node.state_dir / PENDING, f"tear={tear} dirents={dirents}\n".encode())


@dataclass(frozen=True)
class CutFile:
    """One file the cut shortened (or removed): its size before and after, and for a log segment the batches
    dropped. A torn file (`torn`: cut or zeros) keeps bytes past what was synced, which Kafka's recovery must
    discard; a file under a lost directory entry (`lost_entry`) is gone whole, however much of it was
    synced."""

    path: str
    size: int
    kept: int
    first_offset: int | None = None
    last_offset: int | None = None
    records: int = 0
    torn: str | None = None
    lost_entry: bool = False

    @property
    def dropped_bytes(self) -> int:
        return self.size - self.kept

    @property
    def partition_log(self) -> str | None:
        """`topic-partition` for a segment of a partition's log, None for any other file."""
        path = PurePosixPath(self.path)
        return path.parent.name if path.suffix == ".log" else None


def parse_report(text: str) -> list[CutFile]:
    """The cutter's report: one JSON object per file shortened; a torn last line is skipped."""
    files = []
    for line in text.splitlines():
        try:
            item = json.loads(line)
        except json.JSONDecodeError:
            continue
        files.append(
            CutFile(
                path=str(item["path"]),
                size=int(item["size"]),
                kept=int(item["kept"]),
                first_offset=item.get("first_offset"),
                last_offset=item.get("last_offset"),
                records=int(item.get("records", 0)),
                torn=item.get("torn"),
                lost_entry=item.get("entry") == "lost",
            )
        )
    return files


def dropped_by_log(files: list[CutFile]) -> dict[str, Any]:
    """Per partition log: bytes, records and the offset range dropped; other files' bytes summed apart; and
    how many files were torn or lost with their directory entry."""
    logs: dict[str, dict[str, Any]] = {}
    other_bytes = 0
    torn = sum(1 for cut in files if cut.torn)
    lost = sorted(cut.path for cut in files if cut.lost_entry)
    for cut in files:
        name = cut.partition_log
        if name is None:
            other_bytes += cut.dropped_bytes
            continue
        entry = logs.setdefault(name, {"bytes": 0, "records": 0, "first_offset": None, "last_offset": None})
        entry["bytes"] += cut.dropped_bytes
        entry["records"] += cut.records
        if cut.first_offset is not None:
            first = entry["first_offset"]
            entry["first_offset"] = cut.first_offset if first is None else min(first, cut.first_offset)
            last = entry["last_offset"]
            entry["last_offset"] = cut.last_offset if last is None else max(last, cut.last_offset or 0)
    return {"logs": logs, "other_files_bytes": other_bytes, "torn_files": torn, "lost_entries": lost}


def read_cut(node: KafkaNode, timeout: float = CUT_TIMEOUT) -> Mapping[str, Any]:
    """Waits until the restarted node has cut its logs, and returns what it dropped (`dropped_by_log`)."""
    node.await_gone(
        node.state_dir / PENDING, timeout, f"node {node.node_id} to cut its logs after the power loss"
    )
    return dropped_by_log(parse_report(node.kafka_exec(["cat", str(node.state_dir / REPORT)])))
