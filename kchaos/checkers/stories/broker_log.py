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
#: 0.10's controller deciding a leader: `{"leader":2,"leader_epoch":1,"isr":[2,1]}`.
_DECIDED = re.compile(r'\{"leader":(-?\d+),"leader_epoch":(\d+),"isr":\[([\d,]*)\]')
#: A broker starting a leader epoch of its own (3.x and later) as leader or follower, with its log end:
#: "[Broker id=3] Leader kchaos-0 ... starts at leader epoch 1 from offset 673 ... ISR [3,1]" and
#: "[Broker id=2] Follower kchaos-0 starts at leader epoch 1 from offset 673 ... Current leader is 3".
_STARTS = re.compile(
    r"\[Broker id=(\d+)\] (Leader|Follower) .*?starts at leader epoch (\d+) from offset (\d+)"
)
_STARTS_ISR = re.compile(r"\bISR \[([\d,]*)\]")
_CURRENT_LEADER = re.compile(r"current leader is (-?\d+)", re.IGNORECASE)
#: An ISR change, logged by the partition's leader: 0.10's "Partition [kchaos,0] on broker 1: Shrinking ISR
#: for partition [kchaos,0] from 1,3,2 to 1", 3.x's "[Partition kchaos-1 broker=2] Shrinking ISR from 1,2,3
#: to 2", 4.x's "[Partition kchaos-0 broker=2] ISR updated to 1,2,3".
_ISR_CHANGE = re.compile(
    r"(?:shrinking|expanding) isr\b.*?\bfrom [\d,]+ to ([\d,]+)|isr updated to ([\d,]+)", re.I
)
_ISR_LOGGER = re.compile(r"\bon broker (\d+):|\bbroker=(\d+)\]")
#: 0.10's unclean election: "Elect leader 3 from live brokers 3,2."
_ELECT_LIVE = re.compile(r"\belect leader (\d+) from live brokers", re.IGNORECASE)
#: A log's end offset as it loads: 0.10's "log end offset 0", 4.x's "logEndOffset=673".
_LOG_END = re.compile(r"\blog[ _-]?end[ _-]?offset[=\s]+(\d+)", re.IGNORECASE)


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


def _nodes(listed: str) -> tuple[int, ...]:
    return tuple(sorted(int(node) for node in listed.split(",") if node))


@dataclass(frozen=True)
class Said:
    """What a broker log line says of its partition: who leads (None: it does not say), in which leader epoch
    and ISR, and where the logging broker's own log ends (a lower bound of what it holds from then on)."""

    leader: int | None = None
    epoch: int | None = None
    isr: tuple[int, ...] | None = None
    log_end: int | None = None


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

    @property
    def tells(self) -> bool:
        """Whether the line says something of the partition's story (a truncation, an election, an ISR
        change...) rather than echoing what other lines said."""
        return _LOG_KEYWORDS.search(self.text) is not None and _LOG_NOISE.search(self.text) is None

    @property
    def truncated_to(self) -> int | None:
        """The offset a truncation line cuts the broker's log to, None for any other line (or one that
        changed nothing)."""
        truncated = _TRUNCATED.search(self.text)
        if truncated is None or _NO_EFFECT.search(self.text):
            return None
        return int(truncated.group(1))

    def said(self) -> Said | None:
        """What the line says of the partition's leadership or of the broker's log end, None when nothing."""
        if _LOG_NOISE.search(self.text):
            return None
        if match := _DECIDED.search(self.text):
            return Said(int(match.group(1)), int(match.group(2)), _nodes(match.group(3)))
        if match := _STARTS.search(self.text):
            isr = _STARTS_ISR.search(self.text)
            current = _CURRENT_LEADER.search(self.text)
            leader = int(match.group(1)) if match.group(2) == "Leader" else None
            if current is not None and leader is None:
                leader = int(current.group(1))
            return Said(
                leader, int(match.group(3)), _nodes(isr.group(1)) if isr else None, int(match.group(4))
            )
        if (match := _ISR_CHANGE.search(self.text)) and (logger := _ISR_LOGGER.search(self.text)):
            return Said(
                int(logger.group(1) or logger.group(2)), None, _nodes(match.group(1) or match.group(2))
            )
        if match := _ELECT_LIVE.search(self.text):
            return Said(int(match.group(1)))
        if match := _LOG_END.search(self.text):
            return Said(log_end=int(match.group(1)))
        return None

    def turning_point(self, offset: int | None, sent_at: float, held_end: int | None = None) -> str | None:
        """What this line means for a record at `offset` sent at `sent_at`, in a few words, if it is an
        election or a truncation after the send that cut the log at or below that offset; None for any other
        line. `held_end` is how far the broker's log is known to have reached just before (its own log lines,
        the acknowledgement it took part in): a truncation names as cut off only offsets below it, since a
        broker cannot lose what it never held."""
        to = self.truncated_to
        if to is not None or _TRUNCATED.search(self.text) is not None:
            if to is None or offset is None or to > offset or self.wall_time < sent_at:
                return None
            cut = f"broker {self.broker} truncates its log to offset {to}"
            if held_end is None or held_end <= to:
                return cut
            last = held_end - 1
            return (
                f"{cut}, cutting off offset {to}" if last == to else f"{cut}, cutting off offsets {to}-{last}"
            )
        if self.epoch is None and _ELECTION.search(self.text) is None:
            return None
        elected = _ELECTED.search(self.text)
        epoch = f", leader epoch {self.epoch}" if self.epoch is not None else ""
        if _BECOMES_LEADER.search(self.text):
            return f"broker {self.broker} becomes leader{epoch}"
        if elected is None:
            return f"broker {self.broker} logs an election{epoch}"
        return f"broker {elected.group(1)} elected leader{epoch} (logged by broker {self.broker})"


def partition_lines(broker: int, text: str, topic: str, partition: int, since: float = 0.0) -> list[LogLine]:
    """Every line of one broker's log about `topic`-`partition` from `since` on."""
    kept = []
    for line in text.splitlines():
        at = log_time(line)
        if at is not None and at >= since and mentions_partition(line, topic, partition):
            kept.append(LogLine(broker, at, _LOG_TIME.sub("", line, count=1)))
    return kept


def partition_log_lines(broker: int, text: str, topic: str, partition: int, since: float) -> list[LogLine]:
    """The lines of one broker's log about `topic`-`partition` from `since` on that say what matters."""
    return [line for line in partition_lines(broker, text, topic, partition, since) if line.tells]
