"""The cluster's side of a story, in one clock (seconds since the run started): faults begun and healed,
phases, a partition's leader and ISR changes as the leader watcher saw them, the brokers' elections and
truncations, and the brokers' log lines quoted.

Shared by the record's and the divergence's stories (`kchaos.checkers.stories.record_story`,
`kchaos.checkers.stories.divergence_story`), which place their own rows among these entries.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from kchaos.checkers.stories.broker_log import LogLine, partition_lines, partition_log_lines, partition_name
from kchaos.checkers.stories.evidence import RunEvidence
from kchaos.model.events import (
    HARNESS_PROCESS,
    LEADER_WATCH_PROCESS,
    NEMESIS_PROCESS,
    REQUEST,
    SKIPPED,
    START,
    STOP,
)
from kchaos.model.history_schema import parse_detail
from kchaos.model.request_rows import request_line

#: How long before a record's send the story starts: the fault that set it up often began just before.
LEAD_S = 5.0
#: Broker log lines kept per node; a story is read by a person, the rest stay in logs/kafka-N.log.
LOG_LINES_PER_NODE = 12
#: A kept log line is cut to this many characters (a LeaderAndIsr dump runs to kilobytes).
LOG_LINE_CHARS = 220
#: A scenario row's detail is shown cut to this many characters.
_DETAIL_CHARS = 150


def once(lines: Iterable[str]) -> list[str]:
    """`lines` with each said once: two sources telling the same turn at the same moment make one line."""
    return list(dict.fromkeys(lines))


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
    why), a request a request fault took, or a scenario's observation."""
    detail = parse_detail(row.get("detail"))
    if row["f"] == REQUEST:
        return request_line(str(row["key"]), str(row["value"]), detail)
    what = detail.get("description") or detail.get("spec") or row["f"]
    if row["value"] == START:
        fired = detail.get("fired_on")  # a fault that fired on state says which (`when=`)
        return f"fault {row['key']} begins: {what}" + (f", fired as {fired}" if fired else "")
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
    """Faults, phases and the partition's leader changes from `since` on. What stood at `since` (the faults
    still active, the leadership the watcher had last recorded) is said at `since`, with when it began, so
    that no entry is earlier than the window the story names."""
    events: list[tuple[float, str]] = []
    open_faults: dict[str, tuple[float, str]] = {}
    for row in evidence.cluster_rows:
        time = row["wall_time"]
        if row["process"] == NEMESIS_PROCESS:
            if time < since:
                if row["value"] == START:
                    detail = parse_detail(row.get("detail"))
                    what = detail.get("description") or detail.get("spec") or row["f"]
                    open_faults[row["key"]] = (
                        since,
                        f"fault {row['key']} under way since {at(evidence, time)}: {what}",
                    )
                elif row["value"] == STOP:
                    open_faults.pop(row["key"], None)
                continue
            events.append((time, fault_line(row)))
        elif row["process"] == HARNESS_PROCESS and time >= since:
            events.append((time, f"phase {row['value']} done"))
    rows = leader_rows(evidence, topic, partition)
    earlier = [row for row in rows if row["wall_time"] < since]
    if earlier:
        leader, isr = leadership(earlier[-1])
        seen_since = at(evidence, earlier[-1]["wall_time"])
        name = partition_name(topic, partition)
        said = f"leader {node_name(leader)}, ISR {isr}, as the leader watcher saw it since {seen_since}"
        events.append((since, f"{name}: {said}"))
    changes = _leader_changes(rows, partition_name(topic, partition))
    events += [change for change in changes if change[0] >= since]
    return list(open_faults.values()) + events


#: Two lines of one broker truncating to the same offset this close together tell one truncation (4.x logs
#: the fetcher's decision and the log's own "Truncating to offset" for each).
_SAME_TRUNCATION_S = 1.0


def logged_turns(
    evidence: RunEvidence,
    topic: str,
    partition: int,
    offset: int | None,
    sent_at: float,
    since: float,
    held: Sequence[tuple[int, float, int]] = (),
) -> list[tuple[float, str]]:
    """The brokers' elections of the partition and truncations through `offset`, as timeline entries, each
    truncation said once. `held` is what else shows how far a broker's log reached and when (broker, time,
    log end offset), such as the acknowledgement of a record it held; with the brokers' own lines that say
    where their logs end, it bounds the offsets a truncation is said to cut off."""
    turns = []
    for broker, text in sorted((evidence.broker_logs or {}).items()):
        reached: list[tuple[float, int, int | None, object]] = [
            (time, 0, end, None) for node, time, end in held if node == broker
        ]
        for line in partition_lines(broker, text, topic, partition):
            said = line.said()
            if said is not None and said.log_end is not None:
                reached.append((line.wall_time, 0, said.log_end, None))
            if line.tells:
                reached.append((line.wall_time, 1, None, line))
        known: int | None = None
        last_cut: tuple[float, int] | None = None
        for time, _, end, told in sorted(reached, key=lambda entry: entry[:2]):
            if not isinstance(told, LogLine):
                known = max(known or 0, end or 0)
                continue
            to = told.truncated_to
            if (
                to is not None
                and last_cut is not None
                and last_cut[1] == to
                and time - last_cut[0] <= _SAME_TRUNCATION_S
            ):
                continue
            point = told.turning_point(offset, sent_at, known) if time >= since else None
            if point is not None:
                turns.append((time, point))
            if to is not None:
                last_cut = (time, to)
                known = None if known is None else min(known, to)
    return turns


#: Numbers, and the lists a log line enumerates (partitions, fetch data): what changes between repeats of one
#: line, such as a fetcher's error each second while its leader is down.
_CHANGING = re.compile(r"\{.*\}|\(.*\)|\d+")


def _same_line(line: LogLine) -> str:
    """What a line says apart from what changes between its repeats; a line that tells a turn (an election,
    an ISR change, a truncation) is only ever the same as itself."""
    if line.truncated_to is not None or line.said() is not None or line.epoch is not None:
        return line.text
    return _CHANGING.sub("#", line.text)


def log_lines(evidence: RunEvidence, topic: str, partition: int, since: float, cap: int) -> list[str]:
    """The brokers' lines about the partition from `since` on, per broker, each said once: a line repeated
    (the same text, or the same words with other numbers and lists) is shown once with how often and when."""
    if evidence.broker_logs is None:
        return [f"  unknown: {evidence.missing.get('logs', 'no broker logs')}"]
    lines = []
    for broker, text in sorted(evidence.broker_logs.items()):
        found = partition_log_lines(broker, text, topic, partition, since)
        repeats: dict[str, list[LogLine]] = {}
        for line in found:
            repeats.setdefault(_same_line(line), []).append(line)
        lines.append(
            f"  kafka-{broker}.log: {len(found) or 'no'} line{'' if len(found) == 1 else 's'}"
            + (f", {len(repeats)} different" if len(repeats) < len(found) else "")
        )
        for group in list(repeats.values())[:cap]:
            first = group[0]
            shown = (
                first.text if len(first.text) <= LOG_LINE_CHARS else first.text[: LOG_LINE_CHARS - 3] + "..."
            )
            if len(group) > 1:
                shown += (
                    f" ... repeated {len(group)} times, {at(evidence, first.wall_time)} to "
                    f"{at(evidence, group[-1].wall_time)}"
                )
            lines.append(f"    {at(evidence, first.wall_time):>9}  {shown}")
        if len(repeats) > cap:
            lines.append(f"    ... {len(repeats) - cap} more left out (logs/kafka-{broker}.log)")
    return lines
