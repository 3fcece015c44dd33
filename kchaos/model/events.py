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

from kchaos.model.workload_names import EOS

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
#: A group member (or an eos processor) crashed on the nemesis's order (`kill-member`), an `info` row of
#: the member itself: it stopped polling, committing and producing at once and its clients were abandoned,
#: never closed, so it sent no LeaveGroup and made no final commit, as a client process that dies. Its
#: partitions stay its own in the coordinator's eyes until its session times out; no `revoke` row follows,
#: since the dead client reports nothing. `detail`: the partitions it held, the group, its member id.
MEMBER_CRASH = "member-crash"
#: The crashed member back as a new client under the same process name (`info`), once the fault heals: it
#: joins the group as a new member, so its next `assign` row starts its reading over, from the group's
#: committed offsets.
MEMBER_RESTART = "member-restart"
#: A reader process (`consumer-N` of `--client librdkafka-process`) that died while the run went on, started
#: again as a new process under its name (`info`, `detail`: its exit status and the positions it resumes
#: from): its next `assign` row starts its reading over from there.
CONSUMER_RESTART = "consumer-restart"
#: A partition's leader or in-sync replicas changed (`key`: the leader's broker id).
LEADER = "leader"
#: A run phase completed, or the run stopped (`value`: the phase; see kchaos/model/phase_record.py).
PHASE = "phase"
#: What a named scenario observed while it drove its faults (`key`: the scenario, `detail`: what it saw),
#: a nemesis row written when the scenario ends.
SCENARIO = "scenario"
#: One request a request fault (`hold`, `drop`, `delay`) took, at one step of its life (`value`: held,
#: client-closed, released, delivered, answered, dropped, answer-lost), a nemesis `info` row keyed by the
#: fault's key; `detail` names the request (API, version, correlation id, link) and, once answered, the
#: broker's error code. The words and fields belong to `kchaos.model.request_rows`.
REQUEST = "request"
# A fault's rows carry its name as `f`: the fault names belong to their definitions, kchaos/model/faults/.

# --- transactions --------------------------------------------------------------------------------------
# A transaction's rows all carry its id as `key` (`transaction_id`), as a fault's start and stop rows share
# its instance: the id names one transaction, unique in the run, while a producer's `transactional.id`
# stays the same across all of its transactions and so cannot tell them apart.

#: A producer began a transaction: `ok` (`detail`: the producer's `transactional.id`), or `fail` if the
#: client refused.
TXN_BEGIN = "txn-begin"
#: A record written inside a transaction, shaped as a `send` (an `invoke`, then `ok` with partition and
#: offset, `fail` or `info`; `value` unique in the run) and written with the transaction id as its Kafka
#: key, so a read row names its transaction too. Its own operation, not a `send`: its `ok` says only that
#: the record is in the log, while whether readers may ever see it is for the transaction's commit or
#: abort to decide; counted as an acknowledged `send`, every record of an aborted transaction would be a
#: `lost-write`.
TXN_SEND = "txn-send"
#: The producer asked to commit or abort: an `invoke` before the call, then its outcome. `ok` is the
#: coordinator's answer; `fail` means definitely not done; `info` (a timeout, a lost coordinator) may have
#: been done or not. The commit's `invoke` bounds when readers could first see the records: nothing
#: commits a transaction before its producer asks.
TXN_COMMIT = "txn-commit"
TXN_ABORT = "txn-abort"
#: A record a poll inside a transaction returned (a read-write transaction, which polls and sends in one
#: transaction as Jepsen's Kafka workload and a consume-transform-produce loop do): an `ok` row per record,
#: keyed by the transaction, with its topic, partition, offset and value, in the order the poll returned
#: them. The transaction's consumer reads read_committed (its process's `assign` row says so).
TXN_POLL = "txn-poll"
#: A transactional producer's rows of its transactions, each keyed by the transaction.
TRANSACTION_OPERATIONS = (TXN_BEGIN, TXN_SEND, TXN_COMMIT, TXN_ABORT)
#: Every operation a history row's `f` may name besides a fault's name (a nemesis row): a row naming
#: another was not written by kchaos, and a checker would silently count it as nothing.
OPERATIONS: tuple[str, ...] = (
    SEND, POLL, ASSIGN, REVOKE, COMMIT, FINAL_READ, HOLD, RELEASE, PRODUCER_RESTART, MEMBER_CRASH,
    MEMBER_RESTART, CONSUMER_RESTART, LEADER, PHASE, SCENARIO, TXN_BEGIN, TXN_SEND, TXN_COMMIT, TXN_ABORT,
    TXN_POLL,
)  # fmt: skip
# An eos processor (`--workload eos`) records its loop in these words too: its `poll` rows of the input
# topic, then one transaction per batch whose `txn-send` rows write the output topic (`topic`), each
# record's value naming its input (`output_value`), then a `commit` row (`detail.mode` `transaction`, `key`
# the transaction id) with the input offsets it sent to the transaction, whose outcome is the transaction's:
# `ok` committed, `fail` definitely not (aborted before any commit was asked for), `info` unknown. After a
# transaction that did not commit, the processor seeks back to the group's committed offsets and says so
# in an `assign` row (`detail.rewind` true) from where its reading starts over.


def transaction_id(process: str, n: int) -> str:
    """The `n`th transaction of a producer process: unique in the run, as send values are."""
    return f"{process}-txn-{n}"


#: `detail` key of a read-write transaction's `assign` row naming the group its consumer subscribed in
#: (`--txn-polls-via subscribe`), which handed it the partitions. Not `group`, which makes a row a group
#: member's: the consumer reads on from its process's own positions and commits none, so the consumer-group
#: checks, which hold a group to what it committed, would misjudge it (a record read again after a
#: rebalance is no group's duplicate).
SUBSCRIBED = "subscribed"
#: `detail` key of a reader's rows that start its reading (a consumer's `assign`, the final reader's
#: `final-read` invoke) naming its `isolation.level`: a reader's reads take the level of its latest such
#: row. The level decides what a reader may return (read_committed: no record of an aborted or open
#: transaction), so a reader whose rows name none is judged by no anomaly that depends on it. Kafka's own
#: spelling of the setting's values, so the history says what the client was configured with.
ISOLATION = "isolation"
IsolationLevel = Literal["read_committed", "read_uncommitted"]
READ_COMMITTED: Final = "read_committed"
READ_UNCOMMITTED: Final = "read_uncommitted"
#: `detail` key of a `txn-begin` row: the producer's `transactional.id`.
TRANSACTIONAL_ID = "transactional_id"
#: `detail` key of a `commit` row: when the commit was asked for, by the host's monotonic clock (the row's
#: own `time_ns` is when its answer came). The coordinator applied the commit somewhere between the two, so
#: a commit answered late (its member frozen with the answer on its way) is ordered against other members'
#: commits by when it was asked, not answered (`kchaos.checkers.passes.group_passes.by_commit_order`). Absent
#: where the client asks by itself (librdkafka's automatic commits): the answer's time stands for both.
ASKED_NS = "asked_ns"

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


def processor_process(n: int) -> str:
    """A consume-transform-produce processor (`--workload eos`): a group member and a transactional
    producer in one."""
    return f"processor-{n}"


def first_transactional_process(workload: str) -> str:
    """The process whose transactional id a fault at `target=txn-coordinator` aims at: the first eos
    processor (`--workload eos`), else the first transactional producer."""
    return processor_process(0) if workload == EOS else producer_process(0)


def output_topic(topic: str) -> str:
    """The topic `--workload eos`'s processors write what they read from `topic` to."""
    return f"{topic}-out"


#: Between an eos output record's input value and its transaction (`output_value`).
OUTPUT_SEPARATOR = "@"


def output_value(input_value: str, txn: str) -> str:
    """An eos processor's output record for the input record `input_value`, written in transaction `txn`:
    unique per write (a record processed again, after an abort or by another processor, is written with
    another transaction id), and naming its input, so a `txn-send` row and a `final-read` row of the output
    topic both map back to the input record. Input values never hold the separator: they are a producer's
    process name and a number."""
    return f"{input_value}{OUTPUT_SEPARATOR}{txn}"


def input_value(output: str) -> str:
    """The input record's value an eos output record names (`output_value`)."""
    return output.rpartition(OUTPUT_SEPARATOR)[0]


def group_name(run_id: str) -> str:
    """The `group.id` of a run's consumer group (`--workload group`, and the processors of `--workload
    eos`), named in its members' `assign` rows; the nemesis finds the group's coordinator by it."""
    return f"kchaos-{run_id}-group"


def transactional_name(run_id: str, process: str) -> str:
    """The `transactional.id` of a run's transactional producer process (`--workload txn`), named in its
    `txn-begin` rows; the nemesis finds its transaction coordinator by it. Fixed per process, so a
    replacement client fences the one it replaces."""
    return f"kchaos-{run_id}-{process}"


# --- values of particular rows ---------------------------------------------------------------------------

#: A nemesis row's `value`: the fault began, ended, or could not be applied here (the reason in `error`).
START = "start"
STOP = "stop"
SKIPPED = "skipped"
#: A scenario row's `value`.
OBSERVED = "observed"

#: The leader id Kafka reports for a partition no replica leads.
NO_LEADER = -1

#: How an `info` send row's `error` begins when librdkafka gave up on the message
#: (`KafkaError._MSG_TIMED_OUT`): the workload writes a client error's name first, and the verifiable
#: producer's log is translated to the same spelling.
MESSAGE_TIMED_OUT = "_MSG_TIMED_OUT"


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
