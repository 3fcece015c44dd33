"""kchaos's librdkafka group member as a process of its own: `kchaos.mode=group` of the librdkafka worker
(kchaos/compose/rdkafka/worker.py), what `--client librdkafka-process --workload group` reads with.

It does what the in-process member does (kchaos/workloads/in_harness/group_consumer.py): subscribes to
`kchaos.topic` in the group its settings name, prints every record it is handed, and commits. Its lines are
the Java member's protocol (kchaos/compose/client/KchaosGroupMember.java's javadoc), so the Java workload's
recorder (kchaos/workloads/processes/member_recorder.py) turns them into the same rows: `started VERSION
PROTOCOL`, `assign PARTITIONS MEMBER GENERATION`, `revoke PARTITIONS`, `lost PARTITIONS`, `poll PARTITION
OFFSET KEY VALUE`, `poll-error ERROR MESSAGE`, `commit ID OFFSETS`, `committed ID OFFSETS`, `commit-error ID
OFFSETS ERROR MESSAGE`, `stopped POLLED COMMITS`, each with the worker's monotonic clock second. ERROR is
librdkafka's error name; GENERATION is always empty (confluent-kafka does not say it).

Commit modes (`kchaos.commit`), as the in-process member's:
- `sync`: after printing a batch, commit the offsets after it and wait for the answer: `commit` is printed
  before the call, so a process that dies waiting leaves the commit indeterminate;
- `auto`: librdkafka's own automatic commit of the offsets it stored as records were handed over, every
  `auto.commit.interval.ms`, reported through its commit callback: the commit is printed when the client
  reports it (`commit` and its outcome together), as the in-process member records it; what the client
  was committing when the process died is unknown to both.

Assignments are what the client hands over: under the classic protocol's eager assignor the whole new
assignment after the old one was revoked, under the consumer protocol (KIP-848) an incremental step, often
empty; empty steps print nothing (the Java worker's rule), and the recorder adds a step to what was held.

A fatal client error is printed as a `poll-error` and ends the process (exit `FATAL_EXIT`): the harness's
supervisor starts a new process, as the in-process member starts a new client. At SIGTERM it stops
polling and closes the client (librdkafka's last automatic commit in `auto`, then LeaveGroup).

Imports only the standard library, confluent-kafka and the worker module (the image holds nothing else).
"""

from __future__ import annotations

import io
import os
import signal
import sys
from collections.abc import Iterable, Sequence
from typing import Any

from kchaos.compose.rdkafka.line_formats import (
    ASKED,
    ASSIGNED,
    COMMIT_ERROR,
    COMMITTED,
    LOST,
    POLL_ERROR,
    POLLED,
    STARTED,
    STOPPED,
)
from kchaos.compose.rdkafka.worker import BAD_ARGUMENTS_EXIT, FATAL_EXIT, Lines

#: librdkafka's name for an end of partition, which is not an error (`enable.partition.eof` is off anyway).
PARTITION_EOF = "_PARTITION_EOF"
#: librdkafka's name for a commit with nothing to commit: no request was made, so nothing is printed.
NO_OFFSET = "_NO_OFFSET"
#: Records asked of the client at a time, and how long a poll waits (the in-process reader's).
BATCH = 500
POLL_TIMEOUT_S = 0.5
COMMIT_MODES = ("sync", "auto")


def partitions_field(partitions: Iterable[Any]) -> str:
    """Topic partitions as the protocol's PARTITIONS: their numbers, ascending, comma-separated."""
    return ",".join(str(p) for p in sorted(tp.partition for tp in partitions))


def offsets_field(offsets: dict[int, int]) -> str:
    """Next offsets by partition as the protocol's OFFSETS: `partition=offset`, ascending by partition."""
    return ",".join(f"{p}={o}" for p, o in sorted(offsets.items()))


def text_field(data: bytes | None) -> str:
    """A key or value as the protocol's field: `=` and its text, or empty for none."""
    return "" if data is None else "=" + data.decode(errors="replace")


def committed_offsets(partitions: Iterable[Any]) -> dict[int, int]:
    """What a commit's answer says was committed: each partition's offset, leaving out any the coordinator
    refused or that had nothing to commit (a negative logical offset), as the in-process member does."""
    return {tp.partition: tp.offset for tp in partitions if tp.offset >= 0 and tp.error is None}


def commit_settings(mode: str) -> dict[str, object]:
    """The client's commit settings for `kchaos.commit` (ValueError for another): `auto` is librdkafka's
    automatic commit of the offsets stored as records are handed over."""
    if mode not in COMMIT_MODES:
        raise ValueError(f"kchaos.commit={mode!r} is none of {', '.join(COMMIT_MODES)}")
    if mode == "auto":
        return {"enable.auto.commit": True, "enable.auto.offset.store": True}
    return {"enable.auto.commit": False, "enable.auto.offset.store": False}


class MemberLines:
    """What one member prints, and what it has printed and not committed (`sync`)."""

    def __init__(self, lines: Lines) -> None:
        self.lines = lines
        #: Next offset to commit by partition: what was printed and not yet committed.
        self.pending: dict[int, int] = {}
        self.polled = 0
        self.commits = 0

    def assigned(self, partitions: Sequence[Any], member: str) -> None:
        if partitions:
            self.lines.add(ASSIGNED, partitions_field(partitions), member, "")
            self.lines.flush()

    def revoked(self, partitions: Sequence[Any], lost: bool = False) -> None:
        """A member commits nothing more for partitions it no longer holds."""
        for tp in partitions:
            self.pending.pop(tp.partition, None)
        if partitions:
            self.lines.add(LOST if lost else "revoke", partitions_field(partitions))
            self.lines.flush()

    def handed(self, partition: int, offset: int, key: bytes | None, value: bytes | None) -> None:
        """A record handed over (printed at the batch's flush, before any commit of it)."""
        self.lines.add(POLLED, str(partition), str(offset), text_field(key), text_field(value))
        self.pending[partition] = offset + 1
        self.polled += 1

    def poll_error(self, name: str, message: str) -> None:
        if name != PARTITION_EOF:
            self.lines.add(POLL_ERROR, name, message)

    def ask(self, offsets: dict[int, int]) -> str:
        """Prints a commit about to be made and returns its id."""
        commit_id = str(self.commits)
        self.commits += 1
        self.lines.add(ASKED, commit_id, offsets_field(offsets))
        self.lines.flush()
        return commit_id

    def answer(self, commit_id: str, offsets: dict[int, int], error: Any | None) -> None:
        """Prints a commit's outcome: `error` is librdkafka's, None for success."""
        if error is None:
            self.lines.add(COMMITTED, commit_id, offsets_field(offsets))
        else:
            self.lines.add(COMMIT_ERROR, commit_id, offsets_field(offsets), error.name(), error.str())
        self.lines.flush()

    def auto_committed(self, error: Any | None, partitions: Sequence[Any]) -> None:
        """librdkafka's commit callback in `auto`: the commit and its outcome, unless nothing was due."""
        if error is not None and error.name() == NO_OFFSET:
            return
        offsets = committed_offsets(partitions)
        self.answer(self.ask(offsets), offsets, error)


def subscribe(consumer: Any, topic: str, member: MemberLines) -> None:  # pragma: no cover - in the container
    """Subscribes `consumer` to `topic`, `member` printing each assignment (with the client's member id at
    the time, empty where the client cannot tell), revocation and loss."""
    from confluent_kafka import KafkaException

    def member_id() -> str:
        try:
            return str(consumer.memberid() or "")
        except (KafkaException, RuntimeError):
            return ""

    consumer.subscribe(
        [topic],
        on_assign=lambda _, partitions: member.assigned(partitions, member_id()),
        on_revoke=lambda _, partitions: member.revoked(partitions),
        on_lost=lambda _, partitions: member.revoked(partitions, lost=True),
    )


def run(worker: dict[str, str], settings: dict[str, str]) -> int:  # pragma: no cover - in the container
    """The `group` mode: the member's loop, each line as the module's docstring says."""
    from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition, libversion

    try:
        topic = worker["kchaos.topic"]
        mode = worker.get("kchaos.commit", "sync")
        commits = commit_settings(mode)
    except (KeyError, ValueError) as exc:
        print(f"kchaos rdkafka group member: bad arguments: {exc}", file=sys.stderr)
        return BAD_ARGUMENTS_EXIT
    stopping = [False]
    signal.signal(signal.SIGTERM, lambda *_: stopping.__setitem__(0, True))
    out = MemberLines(Lines(io.BufferedWriter(io.FileIO(1, "w", closefd=False), 1 << 16)))
    fatal: list[KafkaError] = []

    def on_error(error: KafkaError) -> None:
        if error.fatal():
            fatal.append(error)

    callbacks: dict[str, object] = {"error_cb": on_error}
    if mode == "auto":
        callbacks["on_commit"] = out.auto_committed
    consumer = Consumer({**settings, **commits, **callbacks})

    subscribe(consumer, topic, out)
    out.lines.add(STARTED, libversion()[0], settings.get("group.protocol", "classic"))
    out.lines.flush()
    while not stopping[0] and not fatal:
        try:
            messages = consumer.consume(num_messages=BATCH, timeout=POLL_TIMEOUT_S)
        except KafkaException as exc:
            error = exc.args[0]
            if error.fatal():
                fatal.append(error)  # printed as the process ends
            else:
                out.poll_error(error.name(), error.str())
                out.lines.flush()
            continue
        for message in messages:
            error = message.error()
            partition, offset = message.partition(), message.offset()
            if error is None and partition is not None and offset is not None:
                out.handed(partition, offset, message.key(), message.value())
            elif error is not None:
                out.poll_error(error.name(), error.str())
        out.lines.flush()  # every record is out before its commit
        if mode == "sync" and out.pending:
            offsets, out.pending = out.pending, {}
            commit_id = out.ask(offsets)
            asked = [TopicPartition(topic, p, o) for p, o in sorted(offsets.items())]
            try:
                answer = consumer.commit(offsets=asked, asynchronous=False)
            except KafkaException as exc:
                out.answer(commit_id, offsets, exc.args[0])
                continue
            out.answer(commit_id, committed_offsets(answer) if answer is not None else offsets, None)
    if fatal:
        out.poll_error(fatal[0].name(), fatal[0].str())
        out.lines.flush()
        print(f"kchaos rdkafka group member: fatal client error: {fatal[0]}", file=sys.stderr, flush=True)
        os._exit(FATAL_EXIT)  # not close(): a client that failed fatally leaves as a crashed process does
    try:
        consumer.close()  # `auto`: librdkafka's last commit; then LeaveGroup
    except (KafkaException, RuntimeError) as exc:
        print(f"kchaos rdkafka group member: close failed: {exc}", file=sys.stderr, flush=True)
    out.lines.add(STOPPED, str(out.polled), str(out.commits))
    out.lines.flush()
    os._exit(0)
