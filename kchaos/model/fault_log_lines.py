"""The lines of a fault log (`kchaos run --fault-log FILE`): the faults a user applied to a cluster kchaos
did not start, with their own tooling, one line per start and stop.

    TIME start|stop NAME [kind=KIND] [nodes=ID,...] [WHAT...]

TIME is Unix seconds (`1764374401.25`) or ISO 8601 with a zone (`2026-11-29T00:00:01.25Z`): a time with
no zone would be read in whichever zone this host keeps, and a fault placed an hour off is worse than a
refused line. NAME pairs a start with its stop (`restart-2`, `kill#1`). KIND is what the judge reasons
about (`kchaos faults` lists them: `crash` excuses what every replica's crash may lose, `partition` what a
split may), `unknown` when not given, which excuses nothing. Blank lines and lines starting with `#` are
skipped. Parsing is pure: the follower (`kchaos.nemesis.fault_log`) reads the file and records the rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from kchaos.model.events import START, STOP
from kchaos.model.fault_record import UNKNOWN_KIND
from kchaos.model.fault_table import KINDS

#: The form of a line, as an error names it.
LINE_FORM = "TIME start|stop NAME [kind=KIND] [nodes=ID,...] [WHAT]"


class FaultLogError(ValueError):
    """A line of the fault log is not one kchaos can record; the message names the line and the form."""


@dataclass(frozen=True)
class FaultLogLine:
    """One start or stop, as the user's tooling wrote it."""

    #: Its line number in the file, from 1.
    number: int
    #: When it happened, Unix seconds.
    at: float
    #: `start` or `stop` (`kchaos.model.events`' words).
    phase: str
    name: str
    kind: str
    nodes: tuple[int, ...]
    what: str
    text: str


def parse_time(text: str) -> float:
    """Unix seconds from `text` (seconds, or ISO 8601 with a zone); ValueError naming the two forms."""
    try:
        return float(text)
    except ValueError:
        pass
    try:
        stamp = datetime.fromisoformat(text.replace("Z", "+00:00") if text.endswith("Z") else text)
    except ValueError:
        raise ValueError(f"{text!r} is neither Unix seconds nor an ISO 8601 time") from None
    if stamp.tzinfo is None:
        raise ValueError(f"{text!r} has no zone; end it with Z or +HH:MM, or give Unix seconds")
    return stamp.timestamp()


def parse_line(number: int, text: str) -> FaultLogLine | None:
    """The line's start or stop; None for a blank line or a comment; FaultLogError naming the line, what is
    wrong and the form, for any other."""
    stripped = text.strip()
    if not stripped or stripped.startswith("#"):
        return None
    words = stripped.split()

    def refused(why: str) -> FaultLogError:
        return FaultLogError(f"fault log line {number}: {why}; write {LINE_FORM} ({stripped!r})")

    if len(words) < 3:
        raise refused("a line needs a time, start or stop, and a name")
    try:
        at = parse_time(words[0])
    except ValueError as exc:
        raise refused(str(exc)) from None
    if words[1] not in (START, STOP):
        raise refused(f"{words[1]!r} is neither start nor stop")
    kind, rest = UNKNOWN_KIND, words[3:]
    nodes: tuple[int, ...] = ()
    while rest and rest[0].startswith(("kind=", "nodes=")):
        key, _, value = rest.pop(0).partition("=")
        if key == "kind":
            if value not in KINDS:
                raise refused(f"no fault kind {value!r}; choose from {', '.join(KINDS)}")
            kind = value
        else:
            items = [item for item in value.split(",") if item]
            if not items or not all(item.isascii() and item.isdigit() for item in items):
                raise refused(f"nodes={value!r} is not broker ids, e.g. nodes=1,3")
            nodes = tuple(int(item) for item in items)
    return FaultLogLine(number, at, words[1], words[2], kind, nodes, " ".join(rest), stripped)
