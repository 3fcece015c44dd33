"""A broker's disk, full on demand: the harness's side of the library kchaos images preload for it.

kchaos/compose/kafka/diskfull.c fails every write under the broker's log dirs with ENOSPC while a flag file
in the container holds `1`, and notes the first write it failed. This module sets and clears the flag and
reads the note, through Docker's archive API, so both work while the broker's container is down (a broker
that finds no log dir left to write halts, which is the point). The paths are the ones
kchaos/compose/kafka/entrypoint.sh exports to the library.
"""

from __future__ import annotations

from pathlib import PurePosixPath

from kchaos.harness.cluster_error import ClusterError
from kchaos.harness.kafka_node import KafkaNode

#: Under the node's state dir, and (the library) under its Kafka home.
FLAG_FILE = "disk-full"
HIT_FILE = "disk-full-hit"
LIBRARY = PurePosixPath("lib/libdiskfull.so")


def set_full(node: KafkaNode, full: bool) -> None:
    """Fills the node's disk (its broker's next write under the log dirs fails) or frees it. Filling clears
    the note of an earlier fill first, so `first_refused_write` speaks of this one."""
    if full:
        node.put_file(node.state_dir / HIT_FILE, b"")
    node.put_file(node.state_dir / FLAG_FILE, b"1\n" if full else b"0\n")


def first_refused_write(node: KafkaNode) -> str | None:
    """`<call> <path>` of the first write the library failed since the disk was filled; None before one."""
    try:
        data = node.read_file(node.state_dir / HIT_FILE)
    except ClusterError:
        return None
    return data.decode(errors="replace").strip() or None
