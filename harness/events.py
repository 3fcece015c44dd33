"""What a history row says, in the words every writer and reader of a history shares.

A history is written by producers, consumers, the final reader, the leader watcher, the nemesis and the
harness, and read by the checkers, the pandas reference, the report and tests that build histories by
hand; a word spelled two ways would silently split one kind of event in two. So the words live here, with
the `Event` every writer records: its fields are declared once, and the history's row, the writer's
`record` and the test builders all take them from it.

An event is who (`process`) did what (`f`, the operation) and how it ended (`type`: `invoke` before the
outcome is known, then `ok`, `fail` (definitely not done) or `info` (indeterminate)), and where: topic,
partition, offset, key, value, the client's error, and `detail` (a mapping, stored as JSON).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import KW_ONLY, dataclass, fields
from typing import Any, Concatenate, Final, Literal, ParamSpec, TypeVar

EventType = Literal["invoke", "ok", "fail", "info"]
INVOKE: Final = "invoke"
OK: Final = "ok"
FAIL: Final = "fail"
INFO: Final = "info"
#: The types that end an invocation.
OUTCOMES: tuple[EventType, ...] = (OK, FAIL, INFO)

# --- operations (`f`) ----------------------------------------------------------------------------------

SEND = "send"
POLL = "poll"
#: A consumer (re)assigning its partitions (`detail`: partitions and start offsets), or a group member
#: given its partitions by a rebalance (`detail`: partitions, group, member id).
ASSIGN = "assign"
#: A group member's partitions taken away by a rebalance (`ok`), or reported lost by its client (`info`).
REVOKE = "revoke"
#: A group member's offset commit (`detail`: the committed offsets by partition, the group, the mode).
COMMIT = "commit"
FINAL_READ = "final-read"
#: A crafted scenario holding the consumers back, and letting them go.
HOLD = "hold"
RELEASE = "release"
#: A producer instance replaced after a fatal client error.
PRODUCER_RESTART = "producer-restart"
#: A partition's leader or in-sync replicas changed (`key`: the leader's broker id).
LEADER = "leader"
#: A run phase completed, or the run stopped (`value`: the phase; see harness/phase_record.py).
PHASE = "phase"
#: What a named scenario observed while it drove its faults (`key`: the scenario, `detail`: what it saw),
#: a nemesis row written when the scenario ends.
SCENARIO = "scenario"
# A fault's rows carry its name as `f`: the fault names belong to harness/fault_spec.py.

# --- processes -----------------------------------------------------------------------------------------

NEMESIS_PROCESS = "nemesis"
HARNESS_PROCESS = "harness"
FINAL_READER_PROCESS = "final-reader"
LEADER_WATCH_PROCESS = "leader-watch"


def producer_process(n: int) -> str:
    return f"producer-{n}"


def consumer_process(n: int) -> str:
    return f"consumer-{n}"


def group_process(n: int) -> str:
    """A consumer-group member (`--workload group`)."""
    return f"member-{n}"


# --- values of particular rows ---------------------------------------------------------------------------

#: A nemesis row's `value`: the fault began, ended, or could not be applied here (the reason in `error`).
START = "start"
STOP = "stop"
SKIPPED = "skipped"
#: A scenario row's `value`.
OBSERVED = "observed"

#: The leader id Kafka reports for a partition no replica leads.
NO_LEADER = -1


@dataclass(slots=True)
class Event:
    """One event as its writer knows it; the history adds the run, the order and the clocks.

    Not frozen: a frozen dataclass sets each field through `object.__setattr__`, which made building an
    event cost more than spelling it as JSON, three times per send at tens of thousands of sends a
    second. Nothing keeps an event after recording it."""

    process: str
    type: EventType
    f: str
    _: KW_ONLY
    topic: str | None = None
    partition: int | None = None
    offset: int | None = None
    key: str | None = None
    value: str | None = None
    error: str | None = None
    detail: Mapping[str, Any] | None = None


#: The event's fields, in the order a history's columns hold them.
EVENT_FIELDS: tuple[str, ...] = tuple(field.name for field in fields(Event))

_Fields = ParamSpec("_Fields")
_Made = TypeVar("_Made")
_Self = TypeVar("_Self")
_Result = TypeVar("_Result")


def takes_fields_of(
    make: Callable[_Fields, _Made],
) -> Callable[[Callable[[_Self, _Made], _Result]], Callable[Concatenate[_Self, _Fields], _Result]]:
    """Turns a method that takes one made object into one that takes what `make` takes, and makes it.

    `record = takes_fields_of(Event)(write)`: callers spell an event's fields as keywords, checked by the
    type checker against `Event` itself, and no second list of the fields exists to drift from it.
    """

    def decorate(method: Callable[[_Self, _Made], _Result]) -> Callable[Concatenate[_Self, _Fields], _Result]:
        @functools.wraps(method)
        def with_fields(self: _Self, /, *args: _Fields.args, **kwargs: _Fields.kwargs) -> _Result:
            return method(self, make(*args, **kwargs))

        return with_fields

    return decorate
