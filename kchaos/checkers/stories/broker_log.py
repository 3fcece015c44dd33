"""A broker's own log read for one partition: which lines tell its story (truncations, elections, ISR
changes, fencing) in any release's wording, and what each means for a record.

Kept apart from the stories that quote them because the wording is Kafka's and changes between releases
(0.10's controller, 3.x's `[Broker id=2] Leader ... starts at leader epoch`, 4.x's `TruncationState`): each
pattern here says which releases it reads, and a story only asks what a line means.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime

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
