"""A violating record's story: what happened to it, told from everything the run directory kept.

A verdict counts its anomalies and shows example rows, which says *that* a record was lost but not *how*.
The how is spread over four places, each written by a different party: the history (when the record was
sent and acknowledged, which faults began and healed, who led the partition, as the leader watcher saw
it), the replica dump (what each broker's log holds at the record's offset after healing) and the brokers'
own logs (truncations, elections, ISR changes, in their words). `explain` lays them side by side for one
record, in one clock: seconds since the run started.

Pure functions over rows (dicts, as pyarrow hands them out) and text, so a story is cheap to build and to
test: no Spark, no pandas (kchaos itself imports neither). `RunEvidence.load` is the one place that reads
the run directory; every part it cannot read becomes a line saying what is missing, never a failure.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from kchaos.checkers.rules.verdict_names import VIOLATION
from kchaos.model.events import (
    FINAL_READ,
    HARNESS_PROCESS,
    INVOKE,
    LEADER_WATCH_PROCESS,
    NEMESIS_PROCESS,
    OK,
    SEND,
    SKIPPED,
    START,
    STOP,
    TXN_SEND,
)
from kchaos.model.history import history_path, parse_detail
from kchaos.model.run_files import RunDir

#: How long before a record's send the story starts: the fault that set it up often began just before.
LEAD_S = 5.0
#: Broker log lines kept per node; a story is read by a person, the rest stay in logs/kafka-N.log.
LOG_LINES_PER_NODE = 12
#: A kept log line is cut to this many characters (a LeaderAndIsr dump runs to kilobytes).
LOG_LINE_CHARS = 220
#: A scenario row's detail is shown cut to this many characters.
_DETAIL_CHARS = 150

#: The broker log lines that tell a partition's story, in any release's wording: truncations, elections and
#: leader changes, ISR shrinks and expansions, high watermarks and epochs, fencing.
_LOG_KEYWORDS = re.compile(
    r"truncat|(?<![.\w])elect|new leader|becom\w* (the )?(leader|follower)"
    r"|shrinking isr|expanding isr|isr updated|high ?watermark|leader[ _]?epoch|fenc",
    re.IGNORECASE,
)
#: Lines that mention a partition and a keyword but only echo what other lines said: a request being sent or
#: ignored (a controller retrying a LeaderAndIsr dump), a state change skipped, a controller record replayed.
_LOG_NOISE = re.compile(
    r"send(ing)? request|fails to send|ignoring leaderandisr|skipped the become|replayed \w*record",
    re.IGNORECASE,
)
#: An election (or a leader change) naming its epoch, as 0.10's controller and later brokers word it; not the
#: setting `unclean.leader.election.enable` a log's properties list.
_ELECTION = re.compile(
    r"(?<![.\w])elect|new leader|becom\w* (the )?leader|\bleader \S+ .*?starts at leader epoch", re.IGNORECASE
)
#: A broker taking the lead (3.x and later): "[Broker id=2] Leader kchaos-1 ... starts at leader epoch 0".
_BECOMES_LEADER = re.compile(r"\bleader \S+ .*?starts at leader epoch", re.IGNORECASE)
_EPOCH = re.compile(r"leader[ _]?epoch\"?\s*[:=]?\s*(\d+)", re.IGNORECASE)
#: The leader an election line names: 0.10's `{"leader":2,...}`, later releases' `leader=2` or `leader 2`.
_ELECTED = re.compile(r"\bleader\"?\s*[:=]?\s*(\d+)", re.IGNORECASE)
#: A truncation and the offset the log was cut to: "Truncating log kchaos-2 to offset 28." (0.10),
#: "Truncating to offset 28", "Truncating partition kchaos-2 with TruncationState(offset=28, ...)" (4.x).
_TRUNCATED = re.compile(r"truncat\w*.*?(?:\bto (?:offset )?|TruncationState\(offset=)(\d+)", re.IGNORECASE)
#: A truncation that changed nothing (4.x: "Truncating to 0 has no effect as the largest offset ...").
_NO_EFFECT = re.compile(r"has no effect", re.IGNORECASE)
#: A log4j line's own time: `[2026-11-26 12:02:36,040] INFO ...`; brokers log in UTC.
_LOG_TIME = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)[,.](\d{3})\]\s*")


def partition_name(topic: str, partition: int) -> str:
    """How Kafka names a partition in its logs and directories: `<topic>-<partition>`."""
    return f"{topic}-{partition}"


def mentions_partition(line: str, topic: str, partition: int) -> bool:
    """Whether a broker log line is about `topic`'s `partition`: `kchaos-2` (not `kchaos-20` nor a host
    `kchaos-2026...`) or 0.10's `[kchaos,2]`."""
    name = re.escape(topic)
    spelled = rf"(?<![\w.-]){name}-{partition}(?![\w-])|\[{name},{partition}\]"
    return re.search(spelled, line) is not None


def log_time(line: str) -> float | None:
    """The wall time (epoch seconds) a broker log line was written at, None for a continuation line."""
    match = _LOG_TIME.match(line)
    if match is None:
        return None
    stamp = datetime.strptime(match.group(1), "%Y-%m-%d %H:%M:%S").replace(tzinfo=UTC)
    return stamp.timestamp() + int(match.group(2)) / 1000


@dataclass(frozen=True)
class LogLine:
    """A broker log line that tells part of a partition's story."""

    broker: int
    wall_time: float
    text: str  # without its timestamp

    @property
    def epoch(self) -> int | None:
        """The leader epoch an election line names, None for any other line."""
        if _ELECTION.search(self.text) is None:
            return None
        match = _EPOCH.search(self.text)
        return int(match.group(1)) if match else None

    def turning_point(self, offset: int | None, sent_at: float, acked_at: float | None) -> str | None:
        """What this line means for a record at `offset` sent at `sent_at` and acknowledged at `acked_at`,
        in a few words, if it is an election or a truncation after the send that cut the log at or below
        that offset; None for any other line. A truncation is said to cut off the record's offset only after
        its acknowledgement: before it, the offset may have held something else."""
        truncated = _TRUNCATED.search(self.text)
        if truncated is not None:
            to = int(truncated.group(1))
            if offset is None or to > offset or self.wall_time < sent_at or _NO_EFFECT.search(self.text):
                return None
            cut = f"broker {self.broker} truncates its log to offset {to}"
            if acked_at is not None and self.wall_time >= acked_at:
                return f"{cut}, cutting off offset {offset}"
            return cut
        if self.epoch is None and _ELECTION.search(self.text) is None:
            return None
        elected = _ELECTED.search(self.text)
        epoch = f", leader epoch {self.epoch}" if self.epoch is not None else ""
        if _BECOMES_LEADER.search(self.text):
            return f"broker {self.broker} becomes leader{epoch}"
        if elected is None:
            return f"broker {self.broker} logs an election{epoch}"
        return f"broker {elected.group(1)} elected leader{epoch} (logged by broker {self.broker})"


def partition_log_lines(broker: int, text: str, topic: str, partition: int, since: float) -> list[LogLine]:
    """The lines of one broker's log about `topic`-`partition` from `since` on that say what matters."""
    kept = []
    for line in text.splitlines():
        at = log_time(line)
        if at is None or at < since or not mentions_partition(line, topic, partition):
            continue
        if _LOG_KEYWORDS.search(line) is None or _LOG_NOISE.search(line) is not None:
            continue
        kept.append(LogLine(broker, at, _LOG_TIME.sub("", line, count=1)))
    return kept


@dataclass(frozen=True)
class Subject:
    """A record to explain: its value, the anomaly that named it (None when asked for by value) and where
    that anomaly placed it."""

    value: str
    anomaly: str | None = None
    topic: str | None = None
    partition: int | None = None
    offset: int | None = None


def violating_records(
    results: Mapping[str, Any], limit: int, told_otherwise: Collection[str] = ()
) -> tuple[list[Subject], int, list[str]]:
    """The first `limit` records named by the examples of `results`' violated anomalies, how many records
    those anomalies count in all (results.json keeps only a few examples of each), and the violated
    anomalies whose examples name no record (a group's offsets), which a record's story cannot tell.
    Anomalies in `told_otherwise` are left out: another kind of story tells them (a divergence's, a
    transaction's, `kchaos.checkers.stories.teller`)."""
    subjects: list[Subject] = []
    seen: set[str] = set()
    total = 0
    untold: list[str] = []
    for name, anomaly in (results.get("anomalies") or {}).items():
        if not isinstance(anomaly, Mapping) or anomaly.get("verdict") != VIOLATION or name in told_otherwise:
            continue
        examples = [example for example in anomaly.get("examples") or [] if isinstance(example, Mapping)]
        if not any(isinstance(example.get("value"), str) for example in examples):
            untold.append(name)
            continue
        total += int(anomaly.get("count") or 0)
        for example in examples:
            value = example.get("value")
            if not isinstance(value, str) or value in seen:
                continue
            seen.add(value)
            acked_at = example.get("acked_at")
            place: Mapping[str, Any] = acked_at if isinstance(acked_at, Mapping) else example
            subjects.append(
                Subject(value, name, place.get("topic"), place.get("partition"), place.get("offset"))
            )
    return subjects[:limit], total, untold


def anomalies_naming(results: Mapping[str, Any], value: str) -> str | None:
    """The anomalies whose examples in `results` name the record `value`, with their verdicts
    (`duplicate: permitted`), None when none does: a record asked for by value is told as what it is."""
    named = [
        f"{name}: {anomaly.get('verdict')}"
        for name, anomaly in (results.get("anomalies") or {}).items()
        if isinstance(anomaly, Mapping)
        and any(
            value in (example.get("value"), example.get("id")) for example in anomaly.get("examples") or []
        )
    ]
    return ", ".join(named) or None


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
                   read_broker_logs(files, missing), missing)  # fmt: skip


def run_started_at(files: RunDir, first: float | None) -> float:
    """The run's start as config.json recorded it, else its first history row's time (`first`)."""
    try:
        started = json.loads(files.config.read_text(encoding="utf-8")).get("started_at")
    except (OSError, ValueError, AttributeError):
        started = None
    if isinstance(started, (int, float)):
        return float(started)
    return first or 0.0


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


def _send_lines(
    evidence: RunEvidence, subject: Subject, rows: Sequence[Mapping[str, Any]]
) -> tuple[list[str], list[tuple[float, str]], Mapping[str, Any] | None]:
    """The record's send and acknowledgement, the timeline entries they make, and its `ok` row."""
    lines: list[str] = []
    events: list[tuple[float, str]] = []
    ack: Mapping[str, Any] | None = None
    for row in rows:
        place = (
            partition_name(row["topic"], row["partition"]) if row["partition"] is not None else row["topic"]
        )
        if row["type"] == INVOKE:
            text = f"sent by {row['process']} to {place} (history row {row['index']})"
        elif row["type"] == OK:
            ack = row
            text = f"acknowledged at {place} offset {row['offset']} (history row {row['index']})"
        else:
            text = f"send {row['type']}: {row['error'] or 'no error given'} (history row {row['index']})"
        lines.append(f"  {at(evidence, row['wall_time']):>9}  {text}")
        events.append((row["wall_time"], f"** this record {text.split(' (history')[0]}"))
    if ack is None:
        lines.append("  never acknowledged: no ok row for this send in the history")
        return lines, events, None
    leaders = [row for row in leader_rows(evidence, ack["topic"], ack["partition"])
               if row["wall_time"] <= ack["wall_time"]]  # fmt: skip
    if leaders:
        leader, isr = leadership(leaders[-1])
        lines.append(
            f"  by leader {node_name(leader)} (ISR {isr}), as the leader watcher saw it since "
            f"{at(evidence, leaders[-1]['wall_time'])}"
        )
        lines.append(f"  in {_epoch(evidence, ack, leader)}")
    else:
        lines.append("  by an unknown leader: the leader watcher recorded nothing for it before the ack")
    return lines, events, ack


def _epoch(evidence: RunEvidence, ack: Mapping[str, Any], leader: int) -> str:
    """The leader epoch the record was appended in: its batch's epoch in a replica that holds it, else the
    last election the brokers logged before the ack."""
    for replica in evidence.replicas or []:
        if (replica["topic"], replica["partition"], replica["offset"], replica["value"]) == (
            ack["topic"], ack["partition"], ack["offset"], ack["value"]
        ) and replica["leader_epoch"] >= 0:  # fmt: skip
            return f"leader epoch {replica['leader_epoch']} (its batch, on broker {replica['broker']})"
    elections = [line for node, text in (evidence.broker_logs or {}).items()
                 for line in partition_log_lines(node, text, ack["topic"], ack["partition"], 0.0)
                 if line.epoch is not None and line.wall_time <= ack["wall_time"]]  # fmt: skip
    if elections:
        last = max(elections, key=lambda line: line.wall_time)
        return f"leader epoch {last.epoch} (the last election logged before it, by broker {last.broker})"
    return (
        "an unknown leader epoch: no replica holds the record with one (records before 0.11 carry none) and "
        "no broker logged an election of the partition before the ack"
    )


def _replica_lines(evidence: RunEvidence, value: str, topic: str, partition: int, offset: int) -> list[str]:
    if evidence.replicas is None:
        return [f"  unknown: {evidence.missing.get('replicas', 'no replica dump')}"]
    rows = [row for row in evidence.replicas if row["topic"] == topic and row["partition"] == partition]
    dumped = {broker for broker, name, number in evidence.log_ends if (name, number) == (topic, partition)}
    brokers = sorted({row["broker"] for row in rows} | dumped)
    if not brokers:
        return [f"  no broker's dump holds {partition_name(topic, partition)}"]
    lines = []
    for broker in brokers:
        mine = [row for row in rows if row["broker"] == broker]
        here = next((row for row in mine if row["offset"] == offset), None)
        elsewhere = [row["offset"] for row in mine if row["value"] == value and row["offset"] != offset]
        if here is None:
            end = evidence.log_ends.get((broker, topic, partition), 0)
            text = f"no record at offset {offset} (log ends at {end})"
        else:
            epoch = f"epoch {here['leader_epoch']}" if here["leader_epoch"] >= 0 else "no epoch"
            whose = "this record" if here["value"] == value else f"{here['value']} ({epoch}), not this record"
            text = f"offset {offset} holds {whose}" + (f" ({epoch})" if here["value"] == value else "")
        if elsewhere:
            also = "it is also" if here is not None and here["value"] == value else "this record is"
            text += f"; {also} at offset {', '.join(map(str, elsewhere))}"
        lines.append(f"  broker {broker}: {text}")
    return lines


def _final_read_line(evidence: RunEvidence, value: str, topic: str, partition: int, offset: int) -> str:
    rows = [row for row in evidence.final_reads if (row["topic"], row["partition"]) == (topic, partition)]
    if not rows:
        return "  the final read did not read this partition"
    reads = [row for row in rows if row["type"] == OK]
    found = [row["offset"] for row in reads if row["value"] == value]
    at = [row["value"] for row in reads if row["offset"] == offset]
    if found:
        return f"  the final read returned this record at offset {', '.join(map(str, found))}"
    return (
        f"  the final read did not return this record; at offset {offset} it returned "
        f"{', '.join(at) if at else 'nothing'}"
    )


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


def tell(evidence: RunEvidence, subject: Subject, log_cap: int = LOG_LINES_PER_NODE) -> list[str]:
    """The story of one record, as lines of text."""
    rows = evidence.record_rows.get(subject.value, [])
    why = f" ({subject.anomaly})" if subject.anomaly else ""
    story = [f"{subject.value}{why}"]
    if not rows:
        return [*story, "  the history holds no send of this record"]
    send_lines, own_events, ack = _send_lines(evidence, subject, rows)
    story += send_lines
    topic = subject.topic or (ack or rows[0])["topic"]
    partition = subject.partition if subject.partition is not None else (ack or rows[0])["partition"]
    offset = subject.offset if subject.offset is not None else (ack["offset"] if ack else None)
    if topic is None or partition is None:
        return [*story, "  sent to no known partition, so nothing more can be told"]
    since = rows[0]["wall_time"] - LEAD_S
    acked_at = None if ack is None else float(ack["wall_time"])
    turns = logged_turns(evidence, topic, partition, offset, rows[0]["wall_time"], acked_at, since)
    events = sorted(
        own_events + cluster_timeline(evidence, topic, partition, since) + turns, key=lambda e: e[0]
    )
    story.append(f"what the cluster did (seconds since the run started, from {at(evidence, since)}):")
    story += [f"  {at(evidence, time):>9}  {text}" for time, text in events]
    if offset is not None:
        story.append(
            f"what each replica holds at {partition_name(topic, partition)} offset {offset} at the end:"
        )
        story += _replica_lines(evidence, subject.value, topic, partition, offset)
        story.append(_final_read_line(evidence, subject.value, topic, partition, offset))
    story.append(f"the brokers' logs about {partition_name(topic, partition)} from {at(evidence, since)}:")
    story += log_lines(evidence, topic, partition, since, log_cap)
    return story
