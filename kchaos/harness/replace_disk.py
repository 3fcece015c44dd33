"""A broker's disk replaced: the harness's side of the swap kchaos images apply as the broker starts.

kchaos/compose/kafka/entrypoint.sh empties the log dirs before the broker runs when it finds a pending swap
in the container (`all`, or `data`: all but the KRaft metadata log and the storage's identity), formats a
KRaft node's storage again with the cluster's id, and reports what it removed. This module leaves the swap
for the next start and reads the report, through Docker's archive API, so both work while the broker's
container is down, as a disk is swapped.
"""

from __future__ import annotations

from kchaos.harness.cluster_error import ClusterError
from kchaos.harness.kafka_node import KafkaNode

#: Under the node's state dir.
PENDING_FILE = "disk-swap-pending"
REPORT_FILE = "disk-swap-report"
#: What a swap may take: every file of the log dirs, or all but the KRaft metadata log.
SWAP_MODES = ("all", "data")
#: Longest a restarted node may take to empty its log dirs, before its broker starts.
SWAP_TIMEOUT = 60.0


def leave_swap(node: KafkaNode, mode: str) -> None:
    """Leaves a swap of `mode` for the node's next start, and clears the report of an earlier one."""
    if mode not in SWAP_MODES:
        raise ValueError(f"no disk swap {mode!r}; one of {', '.join(SWAP_MODES)}")
    node.put_file(node.state_dir / REPORT_FILE, b"")
    node.put_file(node.state_dir / PENDING_FILE, f"{mode}\n".encode())


def swap_report(node: KafkaNode, timeout: float = SWAP_TIMEOUT) -> tuple[int, int] | None:
    """Waits until the restarted node has applied its swap, and returns the files and bytes its start
    removed from its log dirs; None when it reported none (an entrypoint without the swap)."""
    node.await_gone(node.state_dir / PENDING_FILE, timeout, f"node {node.node_id} to start on its new disk")
    try:
        data = node.read_file(node.state_dir / REPORT_FILE)
    except ClusterError:
        return None
    words = data.decode(errors="replace").split()
    if len(words) != 3 or not (words[1].isdigit() and words[2].isdigit()):
        return None
    return int(words[1]), int(words[2])
