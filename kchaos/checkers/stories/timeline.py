"""The cluster's side of a story, in one clock (seconds since the run started): faults begun and healed,
phases, a partition's leader and ISR changes as the leader watcher saw them, the brokers' elections and
truncations, and the brokers' log lines quoted.

Shared by the record's and the divergence's stories (`kchaos.checkers.stories.record_story`,
`kchaos.checkers.stories.divergence_story`), which place their own rows among these entries.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from kchaos.checkers.stories.broker_log import partition_log_lines, partition_name
from kchaos.checkers.stories.evidence import RunEvidence
from kchaos.model.events import (
    HARNESS_PROCESS,
    LEADER_WATCH_PROCESS,
    NEMESIS_PROCESS,
    SKIPPED,
    START,
    STOP,
)
from kchaos.model.history_schema import parse_detail

#: How long before a record's send the story starts: the fault that set it up often began just before.
LEAD_S = 5.0
#: Broker log lines kept per node; a story is read by a person, the rest stay in logs/kafka-N.log.
LOG_LINES_PER_NODE = 12
#: A kept log line is cut to this many characters (a LeaderAndIsr dump runs to kilobytes).
LOG_LINE_CHARS = 220
#: A scenario row's detail is shown cut to this many characters.
_DETAIL_CHARS = 150


def at(evidence: RunEvidence, wall_time: float) -> str:
    return f"+{wall_time - evidence.started_at:.2f}s"


def leadership(row: Mapping[str, Any]) -> tuple[int, list[int]]:
    detail = parse_detail(row.get("detail"))
    return int(detail.get("leader", -1)), [int(node) for node in detail.get("isr", [])]


def leader_rows(evidence: RunEvidence, topic: str, partition: int) -> list[dict[str, Any]]:
    return [
        row
        for row in evidence.cluster_rows
        if row["process"] == LEADER_WATCH_PROCESS and (row["topic"], row["partition"]) == (topic, partition)
    ]


def _leader_changes(rows: Sequence[Mapping[str, Any]], name: str) -> list[tuple[float, str]]:
    changes: list[tuple[float, str]] = []
    before: tuple[int, list[int]] | None = None
    for row in rows:
        now = leadership(row)
        if before is None:
            changes.append((row["wall_time"], f"{name}: leader {node_name(now[0])}, ISR {now[1]}"))
        elif now != before:
            parts = [f"leader {node_name(before[0])} -> {node_name(now[0])}"] if now[0] != before[0] else []
            parts += [f"ISR {before[1]} -> {now[1]}"] if now[1] != before[1] else []
            changes.append((row["wall_time"], f"{name}: {', '.join(parts)}"))
        before = now
    return changes


def node_name(leader: int) -> str:
    return "none" if leader < 0 else str(leader)


def fault_line(row: Mapping[str, Any]) -> str:
    """A nemesis row as a timeline entry: a fault begun (with what it does), healed or not applied (with
    why), or a scenario's observation."""
    detail = parse_detail(row.get("detail"))
    what = detail.get("description") or detail.get("spec") or row["f"]
    if row["value"] == START:
        return f"fault {row['key']} begins: {what}"
    if row["value"] == STOP:
        return f"fault {row['key']} healed"
    if row["value"] == SKIPPED:
        return f"fault {row['key']} not applied: {row.get('error') or 'no reason given'}"
    shown = ", ".join(f"{name} {json.dumps(value)}" for name, value in sorted(detail.items()))
    cut = shown if len(shown) <= _DETAIL_CHARS else shown[: _DETAIL_CHARS - 3] + "..."
    return f"{row['f']} {row['key']} {row['value']}: {cut}"


def cluster_timeline(
    evidence: RunEvidence, topic: str, partition: int, since: float
) -> list[tuple[float, str]]:
    """Faults, phases and the partition's leader changes from `since` on, with the faults still active and
    the leadership as it stood at `since`."""
    events: list[tuple[float, str]] = []
    open_faults: dict[str, tuple[float, str]] = {}
    for row in evidence.cluster_rows:
        time = row["wall_time"]
        if row["process"] == NEMESIS_PROCESS:
            if time < since:
                if row["value"] == START:
                    open_faults[row["key"]] = (time, fault_line(row))
                elif row["value"] == STOP:
                    open_faults.pop(row["key"], None)
                continue
            events.append((time, fault_line(row)))
        elif row["process"] == HARNESS_PROCESS and time >= since:
            events.append((time, f"phase {row['value']} done"))
    changes = _leader_changes(leader_rows(evidence, topic, partition), partition_name(topic, partition))
    earlier = [change for change in changes if change[0] < since]
    events += earlier[-1:] + [change for change in changes if change[0] >= since]
    return events + list(open_faults.values())


def logged_turns(
    evidence: RunEvidence,
    topic: str,
    partition: int,
    offset: int | None,
    sent_at: float,
    acked_at: float | None,
    since: float,
) -> list[tuple[float, str]]:
    """The brokers' elections of the partition and truncations through `offset`, as timeline entries."""
    turns = []
    for broker, text in sorted((evidence.broker_logs or {}).items()):
        for line in partition_log_lines(broker, text, topic, partition, since):
            point = line.turning_point(offset, sent_at, acked_at)
            if point is not None:
                turns.append((line.wall_time, point))
    return turns


def log_lines(evidence: RunEvidence, topic: str, partition: int, since: float, cap: int) -> list[str]:
    if evidence.broker_logs is None:
        return [f"  unknown: {evidence.missing.get('logs', 'no broker logs')}"]
    lines = []
    for broker, text in sorted(evidence.broker_logs.items()):
        found = partition_log_lines(broker, text, topic, partition, since)
        lines.append(f"  kafka-{broker}.log: {len(found) or 'no'} line{'' if len(found) == 1 else 's'}")
        for line in found[:cap]:
            shown = line.text if len(line.text) <= LOG_LINE_CHARS else line.text[: LOG_LINE_CHARS - 3] + "..."
            lines.append(f"    {at(evidence, line.wall_time):>9}  {shown}")
        if len(found) > cap:
            lines.append(f"    ... {len(found) - cap} more left out (logs/kafka-{broker}.log)")
    return lines
