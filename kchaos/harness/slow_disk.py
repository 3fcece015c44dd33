"""A broker's disk, slow on demand: the harness's side of the library kchaos images preload for it.

kchaos/compose/kafka/slowdisk.c sleeps before each sync (or, in `write` mode, each write too) under the
broker's log dirs while a flag file in the container says how slow, and counts what it delayed. This module
writes and clears the flag and reads the count, through Docker's archive API, so the fault is applied and
healed while the broker runs, without a restart. The paths are the ones kchaos/compose/kafka/entrypoint.sh
exports to the library.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePosixPath

from kchaos.harness.cluster_error import ClusterError
from kchaos.harness.kafka_node import KafkaNode

#: Under the node's state dir, and (the library) under its Kafka home.
FLAG_FILE = "slow-disk"
HIT_FILE = "slow-disk-hit"
LIBRARY = PurePosixPath("lib/libslowdisk.so")


@dataclass(frozen=True)
class Slowness:
    """How slow: `on` `sync` (fsync, fdatasync) or `write` (the writes too), `ms` before every such call,
    and `tail_percent` percent of them `tail_ms` instead."""

    on: str
    ms: int
    tail_ms: int = 0
    tail_percent: int = 0

    def line(self) -> str:
        return f"{self.on} {self.ms} {self.tail_ms} {self.tail_percent}\n"


def set_slow(node: KafkaNode, slowness: Slowness | None) -> None:
    """Slows the node's disk as `slowness` says, or heals it (None); the library takes it at its first call
    a tenth of a second or more after it last looked at the flag."""
    if slowness is not None:
        node.put_file(node.state_dir / HIT_FILE, b"")
    node.put_file(node.state_dir / FLAG_FILE, b"" if slowness is None else slowness.line().encode())


def delayed_calls(node: KafkaNode) -> tuple[int, str | None]:
    """How many calls the library delayed since the disk was slowed, and the first (`<call> <path>`); the
    count is written every tenth of a second while the broker calls, so it trails by that much."""
    try:
        data = node.read_file(node.state_dir / HIT_FILE)
    except ClusterError:
        return 0, None
    count, _, first = data.decode(errors="replace").strip().partition(" ")
    if not count.isdigit():
        return 0, None
    return int(count), None if first in ("", "-") else first
