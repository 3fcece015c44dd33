"""Reading the stdout of Kafka's VerifiableProducer and VerifiableConsumer, one event per JSON line.

Each line becomes the history events kchaos's own workloads would have recorded (see
kchaos/checkers/importers/verifiable.py for the mapping and why), placed by the event's timestamp, file and
line so the files merge into one history. The tools' own numbers (`tool_data`, `records_consumed`) are counted
alongside, so a conversion can be checked against what the tools said they did; anything that cannot be read
is refused with the file, the line and the fix.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from kchaos.model.events import (
    ASSIGN,
    FAIL,
    INVOKE,
    OK,
    POLL,
    SEND,
    Event,
    EventType,
)
from kchaos.model.java_send_errors import java_send_outcome

PRODUCER_SEND_SUCCESS = "producer_send_success"
PRODUCER_SEND_ERROR = "producer_send_error"
PARTITIONS_ASSIGNED = "partitions_assigned"
RECORD_DATA = "record_data"
RECORDS_CONSUMED = "records_consumed"
TOOL_DATA = "tool_data"

#: Events only VerifiableProducer prints, and only VerifiableConsumer prints: one in the wrong file means
#: the file was passed with the wrong flag.
PRODUCER_ONLY = frozenset({PRODUCER_SEND_SUCCESS, PRODUCER_SEND_ERROR, TOOL_DATA})
CONSUMER_ONLY = frozenset(
    {RECORD_DATA, RECORDS_CONSUMED, PARTITIONS_ASSIGNED, "partitions_revoked", "offsets_committed"}
)

#: Lifecycle events that carry no records (`shutdown_requested`: VerifiableConsumer in Kafka 4.x).
LIFECYCLE_EVENTS = frozenset({"startup_complete", "shutdown_requested", "shutdown_complete"})

Role = Literal["producer", "consumer"]


class VerifiableInputError(ValueError):
    """A log that cannot be converted; the message names the file, the line and the fix."""

    def __init__(self, path: Path, line: int | None, problem: str, fix: str) -> None:
        where = f"{path}:{line}" if line is not None else str(path)
        super().__init__(f"{where}: {problem}. Fix: {fix}")
        self.path = path
        self.line = line


@dataclass
class LogCounts:
    """What one tool's log said, so the conversion can be checked against the tool's own numbers."""

    path: str
    process: str
    role: Role
    sends_acknowledged: int = 0
    sends_failed: int = 0
    sends_indeterminate: int = 0
    #: `tool_data` (printed by VerifiableProducer on exit): its own count of sends and acknowledgements.
    tool_sent: int | None = None
    tool_acked: int | None = None
    #: `record_data` lines, and the records `records_consumed` summaries add up to (they must agree).
    records: int = 0
    records_consumed: int = 0
    assignments: int = 0
    #: Lines that are not JSON objects: the tools' own logging, when it goes to stdout.
    ignored_lines: int = 0
    #: JSON events with a name this converter does not know (a newer Kafka may add some).
    unknown_events: int = 0


#: An event with where it was printed: (timestamp in ms, file, line, sub-event) orders the history.
Placed = tuple[tuple[int, int, int, int], Event]


def _json_events(path: Path, counts: LogCounts) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yields (line number, event). Lines that are not JSON objects are the tools' logging: skipped, as
    VerifiableProducer's own documentation suggests; a line that starts like JSON but is not is an error."""
    with path.open(encoding="utf-8", errors="replace") as fh:
        for number, raw in enumerate(fh, 1):
            line = raw.strip()
            if not line:
                continue
            if not line.startswith("{"):
                counts.ignored_lines += 1
                continue
            try:
                event = json.loads(line)
            except json.JSONDecodeError as exc:
                raise VerifiableInputError(
                    path, number, f"invalid JSON ({exc.msg} at column {exc.colno})",
                    "pass the tool's stdout unchanged; if the tool was killed while writing, delete the torn "
                    "last line",
                ) from None  # fmt: skip
            if not isinstance(event, dict) or not isinstance(event.get("name"), str):
                raise VerifiableInputError(
                    path, number, "a JSON line without a string `name`: not a VerifiableProducer or "
                    "VerifiableConsumer event", "pass only those tools' stdout",
                )  # fmt: skip
            yield number, event


def _field(
    event: Mapping[str, Any], key: str, kind: type, path: Path, line: int, *, nullable: bool = False
) -> Any:
    value = event.get(key)
    if value is None and nullable:
        return None
    # bool is an int in Python; a JSON true is never a valid offset or partition.
    if not isinstance(value, kind) or isinstance(value, bool):
        expected = "a number" if kind is int else "a string"
        raise VerifiableInputError(
            path, line, f"`{event.get('name')}` needs `{key}` as {expected}, found {value!r}",
            "pass the tools' stdout unchanged (this converter reads the format of Kafka's tools)",
        )  # fmt: skip
    return value


def _wrong_flag(path: Path, line: int, name: str, role: Role) -> VerifiableInputError:
    tool, flag = ("VerifiableConsumer", "--consumer-log") if role == "producer" else (
        "VerifiableProducer", "--producer-log")  # fmt: skip
    return VerifiableInputError(
        path, line, f"`{name}` is {tool} output, but the file was given as a {role} log",
        f"pass this file with {flag}",
    )  # fmt: skip


def producer_events(
    path: Path, file_no: int, counts: LogCounts, sent_at: dict[str, tuple[Path, int]]
) -> Iterator[Placed]:
    process = counts.process
    for line, event in _json_events(path, counts):
        name = event["name"]
        if name in CONSUMER_ONLY:
            raise _wrong_flag(path, line, name, "producer")
        if name not in (PRODUCER_SEND_SUCCESS, PRODUCER_SEND_ERROR):
            if name == TOOL_DATA:
                counts.tool_sent = event.get("sent")
                counts.tool_acked = event.get("acked")
            elif name not in LIFECYCLE_EVENTS:
                counts.unknown_events += 1
            continue
        ts = _field(event, "timestamp", int, path, line)
        topic = _field(event, "topic", str, path, line)
        key = _field(event, "key", str, path, line, nullable=True)
        value = _field(event, "value", str, path, line)
        if value in sent_at:
            first_path, first_line = sent_at[value]
            raise VerifiableInputError(
                path, line, f"value {value!r} was already sent at {first_path}:{first_line}; kchaos follows "
                "each write by its value, so values must be unique across all producer logs",
                "give every VerifiableProducer run its own --value-prefix (e.g. --value-prefix 1, "
                "--value-prefix 2): its values are plain counters otherwise, the same in every run",
            )  # fmt: skip
        sent_at[value] = (path, line)
        partition = offset = error = None
        outcome: EventType = OK
        if name == PRODUCER_SEND_SUCCESS:
            partition = _field(event, "partition", int, path, line)
            offset = _field(event, "offset", int, path, line)
            counts.sends_acknowledged += 1
        else:
            exception = _field(event, "exception", str, path, line)
            message = _field(event, "message", str, path, line, nullable=True)
            outcome, error = java_send_outcome(exception, message)
            if outcome == FAIL:
                counts.sends_failed += 1
            else:
                counts.sends_indeterminate += 1
        sent = Event(process, INVOKE, SEND, topic=topic, partition=partition, key=key, value=value)
        yield (ts, file_no, line, 0), sent
        yield (ts, file_no, line, 1), replace(sent, type=outcome, offset=offset, error=error)
    if counts.sends_acknowledged + counts.sends_failed + counts.sends_indeterminate == 0:
        raise VerifiableInputError(
            path,
            None,
            "no producer_send_success or producer_send_error line",
            "pass VerifiableProducer's stdout",
        )


def consumer_events(path: Path, file_no: int, counts: LogCounts) -> Iterator[Placed]:
    process = counts.process
    for line, event in _json_events(path, counts):
        name = event["name"]
        if name in PRODUCER_ONLY:
            raise _wrong_flag(path, line, name, "consumer")
        if name == RECORD_DATA:
            counts.records += 1
            ts = _field(event, "timestamp", int, path, line)
            read = Event(
                process, OK, POLL, topic=_field(event, "topic", str, path, line),
                partition=_field(event, "partition", int, path, line),
                offset=_field(event, "offset", int, path, line),
                key=_field(event, "key", str, path, line, nullable=True),
                value=_field(event, "value", str, path, line, nullable=True),
            )  # fmt: skip
            yield (ts, file_no, line, 0), read
        elif name == PARTITIONS_ASSIGNED:
            assigned = event.get("partitions")
            if not isinstance(assigned, list) or not all(isinstance(tp, dict) for tp in assigned):
                raise VerifiableInputError(
                    path, line, "`partitions_assigned` needs `partitions` as a list of {topic, partition}",
                    "pass the tool's stdout unchanged",
                )  # fmt: skip
            topics = sorted({str(tp.get("topic")) for tp in assigned})
            partitions = sorted(int(tp.get("partition", -1)) for tp in assigned)
            counts.assignments += 1
            # The group coordinator decides where reading resumes; the tool does not print it.
            detail: dict[str, Any] = {"partitions": partitions, "from": {str(p): None for p in partitions}}
            if len(topics) > 1:
                detail["topics"] = topics
            yield (
                (_field(event, "timestamp", int, path, line), file_no, line, 0),
                Event(process, OK, ASSIGN, topic=topics[0] if len(topics) == 1 else None, detail=detail),
            )
        elif name == RECORDS_CONSUMED:
            summaries = event.get("partitions") or []
            counts.records_consumed += sum(int(s.get("count", 0)) for s in summaries if isinstance(s, dict))
        elif name not in CONSUMER_ONLY and name not in LIFECYCLE_EVENTS:
            counts.unknown_events += 1
    if counts.records == 0:
        what = (
            f"records_consumed lines report {counts.records_consumed} records, but no record_data line gives "
            "their values"
            if counts.records_consumed
            else "no record_data line (and no records consumed)"
        )
        raise VerifiableInputError(
            path, None, what + ": records_consumed carries only counts and offset ranges, not which "
            "values were read", "rerun VerifiableConsumer with --verbose, which prints a record_data line "
            "per record",
        )  # fmt: skip
    if counts.records < counts.records_consumed:
        raise VerifiableInputError(
            path, None, f"{counts.records} record_data lines, but records_consumed lines report "
            f"{counts.records_consumed} records: part of the output is missing",
            "run VerifiableConsumer with --verbose for the whole run and pass its complete stdout",
        )  # fmt: skip
