"""Consumer-group members that are the release's Java client (`--client java --workload group`), each a
process in a container of its own, recorded from what the process prints.

The worker (kchaos/compose/client/KchaosGroupMember.java) runs the loop the librdkafka members run
(kchaos/workloads/in_harness/group_consumer.py): subscribe, poll, commit after each batch (`sync`) or in the
background every second (`auto`), in the same group with the same settings in the Java client's words. Its
lines become the same rows (`assign`, `revoke`, `poll`, `commit`, `member-crash`, `member-restart`), so the
same group checks judge either client. A commit the process asked for and never reported (it died, or was
killed) is recorded `info`: it may have reached the coordinator.

Each member is a process the nemesis can hit: `kill-member` (a crash the member's successor must recover
from, through `GroupMembers`: SIGKILL, no LeaveGroup and no last commit, and a new process when the fault
heals), and the client faults by the container's label. A member that dies while the run goes on without
having been ordered to is started again as a new process under the same name, as an application's
supervisor would, with an `info` `member-restart` row.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kchaos.harness.client_container import internal_bootstrap, start_client
from kchaos.harness.cluster import KafkaCluster
from kchaos.model.config import RunConfig
from kchaos.model.events import (
    ASKED_NS,
    ASSIGN,
    COMMIT,
    FAIL,
    INFO,
    ISOLATION,
    MEMBER_CRASH,
    MEMBER_RESTART,
    OK,
    POLL,
    READ_COMMITTED,
    REVOKE,
    EventType,
    group_name,
    group_process,
)
from kchaos.model.group_protocol import member_protocol_settings
from kchaos.model.history import HistoryWriter
from kchaos.model.stamped_rows import StampedRows
from kchaos.workloads.in_harness.group_consumer import AUTO_COMMIT_INTERVAL_MS, SESSION_TIMEOUT_MS, CommitMode
from kchaos.workloads.processes.java.producer import (
    EXIT_SLACK_S,
    START_TIMEOUT_S,
    STARTED,
    STOPPED,
    JavaProducer,
    LineError,
    WorkerRecorder,
    named_fields,
)

log = logging.getLogger(__name__)

#: The worker's main class: the client image holds every worker, and this one is started by name.
MAIN_CLASS = "KchaosGroupMember"
ASSIGNED, REVOKED, LOST = "assign", "revoke", "lost"
POLLED, POLL_ERROR = "poll", "poll-error"
ASKED, COMMITTED, COMMIT_ERROR = "commit", "committed", "commit-error"
#: The fields of each kind of line after its kind and clock, named as `MemberLine`'s (the worker's javadoc
#: lists them).
_FIELDS: dict[str, tuple[str, ...]] = {
    STARTED: ("said", "said"),
    STOPPED: ("said", "said"),
    ASSIGNED: ("partitions", "member", "generation"),
    REVOKED: ("partitions",),
    LOST: ("partitions",),
    POLLED: ("partition", "offset", "key", "value"),
    POLL_ERROR: ("exception", "message"),
    ASKED: ("id", "offsets"),
    COMMITTED: ("id", "offsets"),
    COMMIT_ERROR: ("id", "offsets", "exception", "message"),
}
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
#: How long a stopped member may take to make its last commit and leave the group (the worker's hold).
CLOSE_S = 40.0


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
    return MemberLine(**named_fields(line, _FIELDS, "group member"))


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


class MemberProcess(JavaProducer):
    """One member worker: its container, and the thread that records its lines until it ends."""

    def _record(self) -> None:
        for lines in self.client.batches():
            self.recorder.take_all(lines)
        if self.stopping:
            reason = "no answer to the commit before the member stopped"
        else:
            code = self.client.exit_code(5.0)
            reason = f"the client process ended (exit {code}) without reporting the commit"
        self.recorder.abandon(reason)


def java_consumer_settings(bootstrap: str, client_id: str, group: str, isolation: str) -> dict[str, str]:
    """What every Java consumer of kchaos sets, a group member or an assigned reader (kchaos/workloads/
    java_reader.py): the group, the isolation level always set (Java's default is read_uncommitted,
    librdkafka's read_committed), no automatic commit by the client (a member's worker commits, see its
    javadoc; a reader commits nothing), and from the earliest offset, so a position past a truncated log's
    new end reads over rather than skipping."""
    return {
        "bootstrap.servers": bootstrap,
        "client.id": client_id,
        "group.id": group,
        "isolation.level": isolation,
        "enable.auto.commit": "false",
        "auto.offset.reset": "earliest",
    }


def java_member_settings(
    config: RunConfig, bootstrap: str, client_id: str, group: str, isolation: str
) -> dict[str, str]:
    """The librdkafka member's settings (kchaos/workloads/in_harness/group_consumer.py `group_settings`) in
    the Java client's words: every Java consumer's, and the short session under the classic protocol (the
    consumer protocol takes it from the broker)."""
    settings = {
        **java_consumer_settings(bootstrap, client_id, group, isolation),
        "session.timeout.ms": str(SESSION_TIMEOUT_MS),
    }
    return {k: str(v) for k, v in member_protocol_settings(settings, config.group_protocol).items()}


class JavaGroupWorkload:
    """`consumers` Java members of one group (`--workload group`), each a process of its own."""

    #: The worker's main class in the client image (None: the image's entrypoint picks the worker).
    main_class: str | None = MAIN_CLASS

    def __init__(
        self,
        config: RunConfig,
        cluster: KafkaCluster,
        history: HistoryWriter,
        image: str,
        names: list[str] | None = None,
    ) -> None:
        """`names`: the members' process names (`member-N` when not given; an eos run's are processors)."""
        self.config = config
        self.cluster = cluster
        self.history = history
        self.image = image
        self.group = group_name(config.run_id)
        self.names = names or [group_process(i) for i in range(config.consumers)]
        self.tallies = {name: MemberTally() for name in self.names}
        self.members: dict[str, MemberProcess] = {}
        #: Members crashed on the nemesis's order and not yet brought back: not restarted by the watcher.
        self.crashed: set[str] = set()
        #: Members that ended and are not restarted (died before their client started).
        self.ended: set[str] = set()
        self.restarts: Counter[str] = Counter()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._watcher = threading.Thread(target=self._watch, name="member-supervisor", daemon=True)

    def _command(self, name: str, isolation: str) -> list[str]:
        config = self.config
        worker = {
            "kchaos.topic": config.topic,
            "kchaos.commit": config.group_commit,
            "kchaos.auto.commit.ms": str(AUTO_COMMIT_INTERVAL_MS),
        }
        settings = java_member_settings(config, internal_bootstrap(self.cluster), name, self.group, isolation)
        return [f"{key}={value}" for key, value in {**worker, **settings}.items()]

    def _launch(self, name: str) -> MemberProcess:
        isolation = self.config.reader_isolation(self.names.index(name))
        client = start_client(
            self.cluster, self.image, name, self._command(name, isolation), main=self.main_class
        )
        member = MemberProcess(self._recorder(name, isolation), client)
        self.members[name] = member
        return member

    def _recorder(self, name: str, isolation: str) -> MemberRecorder:
        """What records member `name`'s lines (an eos processor's differ)."""
        return MemberRecorder(
            name, self.config.topic, self.history, group=self.group, mode=self.config.group_commit,
            isolation=isolation, tally=self.tallies[name],
        )  # fmt: skip

    def start(self) -> None:
        """Starts every member and waits until each has its client (its `started` line)."""
        for name in self.names:
            self._launch(name)
        for member in self.members.values():
            member.await_start(START_TIMEOUT_S)
        self._watcher.start()

    def hold(self, timeout: float = 30.0) -> None:
        raise RuntimeError(
            "a scenario that holds the readers back cannot hold Java group members yet; run it with "
            "--client librdkafka"
        )

    def release(self) -> None:
        """Nothing was held (`hold` refuses)."""

    def _save_log(self, name: str, member: MemberProcess, suffix: str = "") -> None:
        logs = self.history.files.logs
        logs.mkdir(parents=True, exist_ok=True)
        (logs / f"{name}{suffix}.log").write_bytes(member.client.stderr())

    def _watch(self) -> None:
        while not self._stop.wait(0.2):
            with self._lock:
                for name, member in list(self.members.items()):
                    if member.thread.is_alive() or member.stopping or name in self.crashed | self.ended:
                        continue
                    try:
                        self._after_end(name, member)
                    except Exception:  # a restart that failed leaves the member dead
                        log.exception("%s: could not restart the Java group member", name)
                        self.ended.add(name)

    def _after_end(self, name: str, member: MemberProcess) -> None:
        code = member.client.exit_code(5.0)
        if code == 0 or not member.recorder.started.is_set():
            log.warning("%s: the Java group member ended (exit %s); not restarted", name, code)
            self.ended.add(name)
            return
        self.restarts[name] += 1
        self._save_log(name, member, f".{self.restarts[name] - 1}")
        member.client.remove()  # its name is the new process's
        self.tallies[name].assigned = frozenset()
        self.history.record(
            name, INFO, MEMBER_RESTART, topic=self.config.topic, detail={"group": self.group, "exit": code},
            error=f"the client process ended (exit {code}); restarted as a new process",
        )  # fmt: skip
        self._launch(name)
        log.info("%s: the Java group member ended (exit %s); restarted", name, code)

    def stop(self) -> None:
        """Stops every member (SIGTERM: its last commit, then it leaves the group), records what each left
        unanswered as indeterminate, keeps its stderr in the run's logs and removes its container."""
        self._stop.set()
        if self._watcher.is_alive():
            self._watcher.join()
        members = list(self.members.items())
        for _, member in members:
            member.stopping = True
            member.client.terminate()
        for name, member in members:
            member.thread.join(CLOSE_S + EXIT_SLACK_S)
            if member.thread.is_alive():
                log.warning("%s still running after SIGTERM; killing it", name)
                member.client.kill()
                member.thread.join(EXIT_SLACK_S)
                member.client.close()
                member.thread.join(EXIT_SLACK_S)
            member.recorder.abandon("no answer to the commit before the member stopped")
            self._save_log(name, member)
            member.client.remove()
        self.members = {}

    # What the nemesis's `kill-member` asks of the run's members (`kchaos.nemesis.members.GroupMembers`).

    def member_names(self) -> list[str]:
        return list(self.names)

    def crash(self, process: str) -> frozenset[int]:
        """Kills `process` (SIGKILL: no LeaveGroup, no last commit) and returns the partitions it held."""
        with self._lock:
            member = self.members[process]
            self.crashed.add(process)
            tally = self.tallies[process]
            held = tally.assigned
            self.history.record(
                process, INFO, MEMBER_CRASH, topic=self.config.topic,
                detail={"partitions": sorted(held), "group": self.group, "member": tally.member},
            )  # fmt: skip
            member.client.kill()
            member.thread.join(EXIT_SLACK_S)
            tally.assigned = frozenset()
            self.restarts[process] += 1
            self._save_log(process, member, f".{self.restarts[process] - 1}")
            member.client.remove()
        return held

    def restart(self, process: str) -> bool:
        """Brings a crashed `process` back as a new process; False once the workload has stopped."""
        if self._stop.is_set():
            return False
        with self._lock:
            self.history.record(
                process, INFO, MEMBER_RESTART, topic=self.config.topic, detail={"group": self.group}
            )
            member = self._launch(process)
            self.crashed.discard(process)
        member.await_start(START_TIMEOUT_S)
        return True

    def assignment(self, process: str) -> frozenset[int]:
        return self.tallies[process].assigned

    def assignments(self, process: str) -> int:
        return self.tallies[process].assignments

    def handed(self, process: str) -> int:
        return self.tallies[process].handed
