"""Where a run's topics put their replicas: each partition's replica list, in order, as Kafka chose it.

Kafka places a new topic's replicas itself, and KRaft's placer starts at a random broker: two runs of one
configuration lead their partitions from different brokers, and every fault aimed at a role (`leader`,
`followers`, a `reassign`'s outgoing follower) then hits other nodes. Every run records the assignment its
topics got (`assignment.json`, read from the cluster right after they are created), and a replay creates
its topics with that very assignment. The first replica of a list is the preferred leader, so the order is
kept.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

#: Each topic's partitions' replica lists: topic -> partition -> replicas, the preferred leader first.
Assignment = Mapping[str, Mapping[int, tuple[int, ...]]]


class AssignmentUnreadable(ValueError):
    """An `assignment.json` that holds no assignment."""


def write_assignment(path: Path, assignment: Assignment) -> None:
    """Writes `assignment` as JSON (partitions as strings, JSON's only keys), partitions in order."""
    written = {
        topic: {str(partition): list(replicas) for partition, replicas in sorted(partitions.items())}
        for topic, partitions in assignment.items()
    }
    path.write_text(json.dumps(written, indent=2) + "\n", encoding="utf-8")


def read_assignment(path: Path) -> dict[str, dict[int, tuple[int, ...]]]:
    """The assignment `write_assignment` wrote; raises OSError when it cannot be read and
    `AssignmentUnreadable`, saying what is wrong, when it holds no assignment."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise AssignmentUnreadable(f"{path} is not valid JSON ({exc})") from None
    if not isinstance(raw, dict):
        raise AssignmentUnreadable(f"{path} holds a JSON {type(raw).__name__}, not topics")
    found: dict[str, dict[int, tuple[int, ...]]] = {}
    for topic, partitions in raw.items():
        if not isinstance(partitions, dict):
            raise AssignmentUnreadable(f"{path}: topic {topic!r} maps to no partitions")
        found[topic] = {}
        for partition, replicas in partitions.items():
            if (
                not str(partition).isdecimal()
                or not isinstance(replicas, list)
                or not replicas
                or not all(isinstance(node, int) and not isinstance(node, bool) for node in replicas)
            ):
                raise AssignmentUnreadable(
                    f"{path}: {topic!r} partition {partition!r} is not a partition number with a list of "
                    "node ids"
                )
            found[topic][int(partition)] = tuple(replicas)
    return found


def misfit(
    assignment: Assignment, topics: Sequence[str], partitions: int, replication_factor: int, brokers: int
) -> str | None:
    """Why `assignment` cannot be given to `topics` of `partitions` partitions, `replication_factor`
    replicas each, on brokers 1 to `brokers`; None when it can."""
    for topic in topics:
        placed = assignment.get(topic)
        if placed is None:
            return f"it has no assignment of topic {topic}"
        if sorted(placed) != list(range(partitions)):
            return f"topic {topic} had partitions {sorted(placed)}, not 0 to {partitions - 1}"
        for partition, replicas in sorted(placed.items()):
            if len(replicas) != replication_factor or len(set(replicas)) != len(replicas):
                return (
                    f"{topic}-{partition} had replicas {list(replicas)}, not {replication_factor} distinct "
                    "ones"
                )
            outside = [node for node in replicas if not 1 <= node <= brokers]
            if outside:
                return f"{topic}-{partition} had replicas on {outside}, which {brokers} brokers do not have"
    return None
