"""What records a consumer worker's lines (a group member's, and the lines an eos processor and an assigned
reader share with it) as the in-process member's rows, so the same group checks judge either client.

The lines are kchaos/compose/rdkafka/line_formats.py's `MEMBER_FIELDS`, printed by the librdkafka group
worker and KchaosGroupMember.java alike: `assign`, `revoke`, `lost`, `poll`, `poll-error`, and a commit
asked for (`commit`) then answered (`committed`, `commit-error`). A commit the process asked for and never
reported (it died, or was killed) is recorded `info`: it may have reached the coordinator.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kchaos.compose.rdkafka.line_formats import (
    ASKED,
    ASSIGNED,
    COMMIT_ERROR,
    LOST,
    MEMBER_FIELDS,
    POLL_ERROR,
    POLLED,
    REVOKED,
    STARTED,
    STOPPED,
)
from kchaos.model.events import (
    ASKED_NS,
    ASSIGN,
    COMMIT,
    FAIL,
    INFO,
    ISOLATION,
    OK,
    POLL,
    READ_COMMITTED,
    REVOKE,
    EventType,
)
from kchaos.model.stamped_rows import StampedRows
from kchaos.workloads.in_harness.group_consumer import CommitMode
from kchaos.workloads.processes.worker_lines import LineError, named_fields
from kchaos.workloads.processes.worker_recorder import WorkerRecorder

log = logging.getLogger(__name__)

#: Java exceptions with which a commit was refused, so not applied: the coordinator's fencing of a member
#: of an older generation or a stale member epoch (KIP-848), a rebalance under way, a member it does not
#: know, authorization; `CommitFailedException` is what the client raises for all of the fencing ones (its
#: javadoc: the commit "cannot be completed since the consumer is not part of an active group"). Every
#: other error (a timeout, a coordinator that moved, a retriable failure) may have been applied: `info`,
#: the rule the librdkafka members follow (kchaos/workloads/outcome.py).
COMMIT_REFUSED_EXCEPTIONS = frozenset(
    {
        "CommitFailedException",
        "RebalanceInProgressException",
        "IllegalGenerationException",
        "UnknownMemberIdException",
        "FencedInstanceIdException",
        "StaleMemberEpochException",
        "GroupAuthorizationException",
        "TopicAuthorizationException",
        "OffsetMetadataTooLarge",
    }
)


@dataclass(frozen=True)
class MemberLine:
    """One line of a group member worker's stdout, its fields named."""

    kind: str
    time_ns: int = 0
    partitions: str = ""
    member: str = ""
    generation: str = ""
    partition: int = 0
    offset: int | None = None
    key: str = ""
    value: str = ""
    id: str = ""
    offsets: str = ""
    exception: str = ""
    message: str = ""
    said: tuple[str, ...] = ()


def parse_member_line(line: str) -> MemberLine:
    """The event a group member worker's line says; LineError for anything else."""
    return MemberLine(**named_fields(line, MEMBER_FIELDS, "group member"))


def _partitions(text: str) -> list[int]:
    try:
        return sorted(int(p) for p in text.split(",") if p)
    except ValueError:
        raise LineError(f"not a list of partitions: {text!r}") from None


def parse_offsets(text: str) -> dict[str, int]:
    """`0=12,2=7` as the `offsets` of a commit row: the next offset by partition."""
    try:
        pairs = (pair.split("=", 1) for pair in text.split(",") if pair)
        return {str(int(p)): int(o) for p, o in pairs}
    except ValueError:
        raise LineError(f"not a list of offsets: {text!r}") from None


def assigned_detail(partitions: str, offsets: str, isolation: str) -> dict[str, object]:
    """An `assign` row's detail from a reading worker's `assign PARTITIONS FROM` line: the partitions, where
    each resumed (None: from the beginning) and the isolation level its reads have."""
    resumed = parse_offsets(offsets)
    assigned = _partitions(partitions)
    started = {str(p): resumed.get(str(p)) for p in assigned}
    return {"partitions": assigned, "from": started, ISOLATION: isolation}


def field_text(field: str) -> str | None:
    """A key or value field: `=` and its text, or empty for none."""
    return field[1:] if field.startswith("=") else None


def java_commit_outcome(exception: str) -> EventType:
    """A failed commit's outcome: `fail` when the coordinator or client refused it, else `info`."""
    return FAIL if exception.rsplit(".", 1)[-1] in COMMIT_REFUSED_EXCEPTIONS else INFO


@dataclass
class MemberTally:
    """What one member name has been given, across its processes: what the nemesis watches."""

    assigned: frozenset[int] = frozenset()
    assignments: int = 0
    #: Records handed over since the latest assignment and, with `auto` commits, since the latest
    #: automatic commit: what a crash now would leave for the group to hand out again (`kill-member` waits
    #: for some). A process's automatic commits come about once a second, between batches of records that
    #: come every half second, so a crash timed by the clock alone often found everything committed.
    handed: int = 0
    member: str | None = None


@dataclass
class MemberRecorder(WorkerRecorder):
    """Records one group member worker's lines as the librdkafka member's rows."""

    group: str = ""
    mode: CommitMode = "sync"
    isolation: str = READ_COMMITTED
    tally: MemberTally = field(default_factory=MemberTally)
    #: Commits asked for and not yet answered: id -> (offsets, when asked by the worker's clock).
    commits: dict[str, tuple[dict[str, int], int]] = field(default_factory=dict)
    #: The group protocol the worker said it uses.
    protocol: str | None = None
    #: A failed commit's outcome from the error the worker named: the Java client's rule, or librdkafka's.
    commit_judge: Callable[[str], EventType] = java_commit_outcome

    def take(self, line: str) -> None:
        """Records what one line says; a line outside the protocol is logged and skipped."""
        try:
            said = parse_member_line(line)
            self._take(said, StampedRows(self.history, said.time_ns))
        except LineError as exc:
            log.warning("%s: %s", self.process, exc)

    def _take(self, said: MemberLine, rows: StampedRows) -> None:
        if said.kind == STARTED:
            self.version, self.protocol = said.said
            log.info("%s: client %s started (%s group protocol)", self.process, *said.said)
            self.started.set()
        elif said.kind == STOPPED:
            log.info("%s: stopped after %s records polled and %s commits", self.process, *said.said)
        elif said.kind == ASSIGNED:
            partitions = _partitions(said.partitions)
            tally = self.tally
            tally.assigned, tally.handed = tally.assigned | set(partitions), 0
            tally.assignments += 1
            tally.member = said.member or None
            generation: dict[str, Any] = {"generation": int(said.generation)} if said.generation else {}
            rows.record(
                self.process, OK, ASSIGN, topic=self.topic,
                detail={"partitions": partitions, "group": self.group, "member": tally.member,
                        ISOLATION: self.isolation, "protocol": self.protocol, **generation},
            )  # fmt: skip
        elif said.kind in (REVOKED, LOST):
            partitions = _partitions(said.partitions)
            self.tally.assigned = self.tally.assigned - set(partitions)
            lost = said.kind == LOST
            rows.record(
                self.process, INFO if lost else OK, REVOKE, topic=self.topic,
                detail={"partitions": partitions, "group": self.group, "lost": lost},
            )  # fmt: skip
        elif said.kind == POLLED:
            self.tally.handed += 1
            rows.record(
                self.process, OK, POLL, topic=self.topic, partition=said.partition, offset=said.offset,
                key=field_text(said.key), value=field_text(said.value),
            )  # fmt: skip
        elif said.kind == POLL_ERROR:
            rows.record(self.process, INFO, POLL, topic=self.topic, error=_error(said))
        elif said.kind == ASKED:
            with self._lock:
                self.commits[said.id] = (parse_offsets(said.offsets), said.time_ns)
        else:  # COMMITTED, COMMIT_ERROR
            with self._lock:
                asked = self.commits.pop(said.id, None)
            if asked is None:
                return  # already given its outcome
            failed = said.kind == COMMIT_ERROR
            if not failed and self.mode == "auto":
                self.tally.handed = 0
            rows.record(
                self.process, self.commit_judge(said.exception) if failed else OK, COMMIT,
                topic=self.topic, error=_error(said) if failed else None, detail=self._commit_detail(*asked),
            )  # fmt: skip

    def _commit_detail(self, offsets: dict[str, int], asked_ns: int) -> dict[str, Any]:
        return {"offsets": offsets, "group": self.group, "mode": self.mode, ASKED_NS: asked_ns}

    def abandon(self, reason: str) -> int:
        """Records every commit asked for and never answered as indeterminate, with `reason`; returns how
        many."""
        with self._lock:
            left, self.commits = self.commits, {}
        for offsets, asked_ns in left.values():
            self.history.record(
                self.process,
                INFO,
                COMMIT,
                topic=self.topic,
                error=reason,
                detail=self._commit_detail(offsets, asked_ns),
            )
        return len(left)


def _error(said: MemberLine) -> str:
    return f"{said.exception}: {said.message}" if said.message else said.exception
