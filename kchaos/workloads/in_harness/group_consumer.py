"""Consumers in one consumer group: the subscribe-poll-commit loop most Kafka applications run.

The assigned readers (`kchaos/workloads/in_harness/consumer.py`) read every partition with no group, so their
history says what the log showed. Group members instead share the partitions, which the group coordinator
moves between them at every rebalance, and say how far the group got by committing offsets. Their history is
what the group checks judge: a record below the group's committed offset that no member received, a committed
offset that went back, records delivered to members more than once.

So every step of the loop is recorded:
- each assignment as an `assign` row (`detail`: the partitions, the group, the member id), which also
  restarts what the poll-order checks expect of this process, as for an assigned reader;
- each revocation as a `revoke` row (`ok`), or an `info` one when the client reports the partitions lost
  (its session expired: another member may already have them);
- every record handed over as a `poll` row, exactly as an assigned reader records it;
- a crash the nemesis ordered (`kill-member`, see `kchaos.workloads.in_harness.crash`) as a `member-crash`
row, and the new
  client that takes its place when the fault heals as a `member-restart` row, followed by its own
  `assign` once the group has taken it back;
- every offset commit as a `commit` row (`detail`: the committed offsets by partition, and the mode; a
  partition the coordinator refused is left out and named under `partition_errors`), as librdkafka's
  commit callback reports automatic ones and as `commit` returns explicit ones: `ok`, `fail` when the
  coordinator refused it (it was not applied), `info` when its outcome is unknown (a timeout).

Commit modes (`--commit`):
- `sync`: after recording a batch, commit the offsets after it and wait for the answer: at least once, and
  nothing is committed that was not recorded first;
- `auto`: librdkafka stores the offset of every record as it is handed over and commits the stored
  offsets every `AUTO_COMMIT_INTERVAL_MS` in the background: a member that dies between a commit and the
  next hands its successor records already delivered, the documented duplicates of automatic commits.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from kchaos.model.client_config import NO_SETTINGS
from kchaos.model.config import RunConfig
from kchaos.model.events import (
    ASKED_NS,
    ASSIGN,
    COMMIT,
    HOLD,
    INFO,
    ISOLATION,
    MEMBER_CRASH,
    MEMBER_RESTART,
    OK,
    READ_COMMITTED,
    RELEASE,
    REVOKE,
    IsolationLevel,
    group_name,
    group_process,
)
from kchaos.model.group_protocol import CLASSIC, GroupProtocol, member_protocol_settings
from kchaos.model.history import HistoryWriter
from kchaos.workloads.in_harness.consumer import ReaderLoop, ReaderThreads, consumer_settings, isolation_of
from kchaos.workloads.in_harness.crash import CrashOrders
from kchaos.workloads.outcome import commit_outcome, error_text

log = logging.getLogger(__name__)

#: `transaction`: an eos processor's, whose offsets go into its transactions
#: (`kchaos.workloads.in_harness.eos`).
CommitMode = Literal["sync", "auto", "transaction"]

#: How often `auto` commits: short, so a run of a minute commits often enough to show what a member's
#: death between two commits redelivers.
AUTO_COMMIT_INTERVAL_MS = 1000
#: How long the coordinator waits for a silent member before it rebalances its partitions away: Kafka's
#: default before 3.0 (KIP-735 raised it to 45 s), short enough that a crashed member is noticed within a
#: fault of a short run, and above the brokers' least allowed (`group.min.session.timeout.ms`, 6 s).
SESSION_TIMEOUT_MS = 10_000
#: Longest a member may take to crash on order, or to start its new client: a turn of its loop, which for
#: an eos processor may hold a transaction's flush, commit attempts and abort, each bounded on its own.
CRASH_TIMEOUT = 60.0


def group_settings(
    bootstrap: str,
    client_id: str,
    group: str,
    commit: CommitMode,
    isolation: IsolationLevel = READ_COMMITTED,
    protocol: GroupProtocol = CLASSIC,
    user: Mapping[str, str] = NO_SETTINGS,
) -> dict[str, object]:
    """A group member's client settings: the assigned reader's, with the group's commit mode, a short
    session (`SESSION_TIMEOUT_MS`) under the classic protocol, and the group protocol
    (`kchaos.model.group_protocol`: the consumer protocol takes the session from the broker); `user`, the
    run's `--consumer-config`, last (a session it sets is the member's)."""
    settings = consumer_settings(bootstrap, client_id, group, isolation)
    settings["session.timeout.ms"] = SESSION_TIMEOUT_MS
    if commit == "auto":
        settings.update(
            {
                "enable.auto.commit": True,
                "enable.auto.offset.store": True,
                "auto.commit.interval.ms": AUTO_COMMIT_INTERVAL_MS,
            }
        )
    return {**member_protocol_settings(settings, protocol), **user}


@dataclass
class GroupMember(ReaderLoop):
    """One member of the group in its own thread: subscribes, records what it is given, commits."""

    process: str
    settings: dict[str, object]
    group: str
    topic: str
    commit: CommitMode
    history: HistoryWriter
    consumer: Consumer | None = None
    fatal: KafkaError | None = None
    #: Next offset to commit per partition (`sync`): what this member recorded and has not committed.
    pending: dict[int, int] = field(default_factory=dict)
    reading: threading.Event = field(default_factory=threading.Event)
    held: threading.Event = field(default_factory=threading.Event)
    #: The nemesis's orders to crash and come back (`kill-member`).
    orders: CrashOrders = field(default_factory=CrashOrders)
    #: The partitions the current client was last given, and how many assignments it was given in all:
    #: what the nemesis watches to see a rebalance hand a crashed member's partitions to the others.
    assigned: frozenset[int] = frozenset()
    assignments: int = 0
    #: Records handed to this member since its latest assignment: a member reading what it was given.
    handed: int = 0
    #: The partitions it held when it last crashed.
    held_at_crash: frozenset[int] = frozenset()

    def _member_id(self, consumer: Consumer) -> str | None:
        try:
            return consumer.memberid()
        except (KafkaException, RuntimeError):
            return None

    def _on_assign(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        """An eager rebalance hands over the whole assignment after revoking the old one; an incremental one
        (the consumer protocol, KIP-848) only what it adds, often nothing: so what is held is what was held
        plus what is added, under either."""
        self.assigned = self.assigned | frozenset(tp.partition for tp in partitions)
        self.assignments += 1
        self.handed = 0
        self.history.record(
            self.process, OK, ASSIGN, topic=self.topic,
            detail={"partitions": sorted(tp.partition for tp in partitions), "group": self.group,
                    "member": self._member_id(consumer), ISOLATION: isolation_of(self.settings),
                    "protocol": self.settings.get("group.protocol", CLASSIC)},
        )  # fmt: skip

    def _on_revoke(self, consumer: Consumer, partitions: list[TopicPartition], lost: bool = False) -> None:
        revoked = sorted(tp.partition for tp in partitions)
        self.assigned = self.assigned - set(revoked)
        for partition in revoked:
            self.pending.pop(partition, None)
        self.history.record(
            self.process, INFO if lost else OK, REVOKE, topic=self.topic,
            detail={"partitions": revoked, "group": self.group, "lost": lost},
        )  # fmt: skip

    def _on_lost(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self._on_revoke(consumer, partitions, lost=True)

    def _on_commit(
        self, error: KafkaError | None, partitions: list[TopicPartition], asked_ns: int | None = None
    ) -> None:
        """Records a commit's outcome: automatic ones as the client reports them (`auto`: when the client
        asked is not known), explicit ones from what `commit` returned or raised (`sync`: the client's
        commit callback is not called for those), with when it was asked for."""
        if error is not None and error.code() == KafkaError._NO_OFFSET:
            return  # nothing was due: no request was made
        offsets = {str(tp.partition): tp.offset for tp in partitions if tp.offset >= 0 and tp.error is None}
        refused = {str(tp.partition): error_text(tp.error) for tp in partitions if tp.error is not None}
        self.history.record(
            self.process, commit_outcome(error), COMMIT, topic=self.topic,
            error=error_text(error) if error is not None else None,
            detail={"offsets": offsets, "group": self.group, "mode": self.commit,
                    **({"partition_errors": refused} if refused else {}),
                    **({ASKED_NS: asked_ns} if asked_ns is not None else {})},
        )  # fmt: skip

    def _connect(self) -> None:
        """Joins the group with a new client (after a fatal error, as a new member)."""
        if self.consumer is not None:
            self.consumer.close()
        self.pending.clear()
        callbacks: dict[str, object] = {"error_cb": self._on_error}
        if self.commit == "auto":
            callbacks["on_commit"] = self._on_commit
        self.consumer = Consumer({**self.settings, **callbacks})
        self.consumer.subscribe(
            [self.topic], on_assign=self._on_assign, on_revoke=self._on_revoke, on_lost=self._on_lost
        )

    def _crashed(self, stop: threading.Event) -> bool:
        """Crashes on order (see `kchaos.workloads.in_harness.crash`), sits out the fault, and comes back as a
        new client."""
        if not self.orders.crash.is_set():
            return False
        self._abandon()
        self.held.set()  # records nothing more: as held as a member can be
        if not self.orders.await_restart(stop):
            return True
        self.history.record(
            self.process, INFO, MEMBER_RESTART, topic=self.topic, detail={"group": self.group}
        )
        self._connect()
        self.held.clear()
        self.orders.restarted()
        return True

    def _abandon(self) -> None:
        """Records the crash and drops the client without closing it: the last reference goes here, so
        confluent-kafka destroys it without LeaveGroup or final commit
        (`kchaos.workloads.in_harness.crash`)."""
        consumer, self.consumer = self.consumer, None
        member = self._member_id(consumer) if consumer is not None else None
        self.history.record(
            self.process, INFO, MEMBER_CRASH, topic=self.topic,
            detail={"partitions": sorted(self.assigned), "group": self.group, "member": member},
        )  # fmt: skip
        self.pending.clear()  # a dead process commits nothing more
        self.held_at_crash, self.assigned = self.assigned, frozenset()
        del consumer
        self.orders.down.set()

    def _hold(self, stop: threading.Event) -> None:
        """Stops fetching until released, staying in the group (polling keeps the membership alive)."""
        assert self.consumer is not None
        self.consumer.pause(self.consumer.assignment())
        self.history.record(self.process, INFO, HOLD, topic=self.topic)
        self.held.set()
        while not (self.reading.is_set() or stop.is_set()):
            self.consumer.consume(num_messages=1, timeout=0.2)  # paused: serves callbacks only
        self.consumer.resume(self.consumer.assignment())
        self.held.clear()
        self.history.record(self.process, INFO, RELEASE, topic=self.topic)

    def _after_batch(self) -> None:
        if self.orders.crash.is_set():
            return  # a process that dies right after it was handed a batch commits none of it
        if self.commit == "sync" and self.pending:
            self._commit_pending()

    def _commit_pending(self) -> None:
        """Commits what was recorded, waits for the answer and records it."""
        assert self.consumer is not None
        offsets = [TopicPartition(self.topic, p, offset) for p, offset in sorted(self.pending.items())]
        self.pending.clear()
        asked_ns = time.monotonic_ns()
        try:
            committed = self.consumer.commit(offsets=offsets, asynchronous=False)
        except KafkaException as exc:
            self._on_commit(exc.args[0], offsets, asked_ns)
            return
        self._on_commit(None, committed if committed is not None else offsets, asked_ns)

    def _advanced(self, partition: int, next_offset: int) -> None:
        self.pending[partition] = next_offset
        self.handed += 1


class GroupThreads(ReaderThreads):
    """Group members in threads of their own, which the nemesis may crash and bring back one at a time
    (`kill-member`; `kchaos.nemesis.members.GroupMembers` is what it asks of them)."""

    def __init__(self, members: Sequence[GroupMember]) -> None:
        super().__init__(members)
        self.members = {member.process: member for member in members}

    def member_names(self) -> list[str]:
        return list(self.members)

    def crash(self, process: str) -> frozenset[int]:
        """Crashes `process` and returns the partitions it held; raises `CrashTimeout` if it did not."""
        member = self.members[process]
        member.orders.order_crash(CRASH_TIMEOUT)
        return member.held_at_crash

    def restart(self, process: str) -> bool:
        """Brings a crashed `process` back as a new client; False once the workload has stopped, when
        there is nothing to come back to."""
        if self._stop.is_set():
            return False
        self.members[process].orders.order_restart(CRASH_TIMEOUT)
        return True

    def assignment(self, process: str) -> frozenset[int]:
        """The partitions `process` holds now (none while crashed)."""
        return self.members[process].assigned

    def assignments(self, process: str) -> int:
        """How many assignments `process` has been given, across its clients."""
        return self.members[process].assignments

    def handed(self, process: str) -> int:
        """Records handed to `process` since its latest assignment."""
        return self.members[process].handed


class GroupWorkload(GroupThreads):
    """`consumers` members of one group subscribed to the topic, running until the workload stops."""

    def __init__(self, config: RunConfig, bootstrap: str, history: HistoryWriter) -> None:
        group = group_name(config.run_id)
        super().__init__(
            [
                GroupMember(
                    process=group_process(i),
                    settings=group_settings(
                        bootstrap,
                        group_process(i),
                        group,
                        config.group_commit,
                        config.reader_isolation(i),
                        config.group_protocol,
                        config.consumer_config,
                    ),
                    group=group,
                    topic=config.topic,
                    commit=config.group_commit,
                    history=history,
                )
                for i in range(config.consumers)
            ]
        )
