"""The worker-line formats: what each kind of line a client worker prints holds, defined once for both ends.

A worker (a librdkafka one here, or its Java twin in kchaos/compose/client/, whose javadoc lists the same
lines) prints one tab-separated line per event: its kind, then the worker's CLOCK_MONOTONIC in nanoseconds,
then the kind's fields. The librdkafka workers print these kinds, and the harness's recorders
(kchaos/workloads/processes/) read every worker's lines by these tables, so a line means the same on both
sides. Each table names a kind's fields after its kind and clock, as the recorder's line dataclass names
them; `said` fields are gathered in order.

Standard library only: the module runs in the client container too (kchaos/harness/rdkafka_image.py).
"""

from __future__ import annotations

from typing import Final

# --- a producer's lines: `kchaos/compose/rdkafka/worker.py`, KchaosProducer.java ---------------------------
STARTED: Final = "started"
INVOKED: Final = "invoke"
ACKED: Final = "ok"
ERRORED: Final = "error"
REFUSED: Final = "refused"
STOPPED: Final = "stopped"
#: `started VERSION`, `invoke VALUE PARTITION`, `ok VALUE PARTITION OFFSET`, `error VALUE PARTITION
#: EXCEPTION MESSAGE` (the send's callback), `refused VALUE PARTITION EXCEPTION MESSAGE` (thrown by send()
#: itself: never in the client's buffer), `stopped SENT OUTSTANDING`.
SEND_FIELDS: Final[dict[str, tuple[str, ...]]] = {
    STARTED: ("said",),
    INVOKED: ("value", "partition"),
    ACKED: ("value", "partition", "offset"),
    ERRORED: ("value", "partition", "exception", "message"),
    REFUSED: ("value", "partition", "exception", "message"),
    STOPPED: ("said", "said"),
}

# --- the reading lines of a reader, a group member and a read-write transaction ---------------------------
ASSIGNED: Final = "assign"
POLLED: Final = "poll"

# --- a transactional producer's lines: txn_worker.py, KchaosTransactions.java -----------------------------
BEGUN: Final = "begun"
BEGIN_FAILED: Final = "begin-failed"
COMMIT: Final = "commit"
COMMITTED: Final = "committed"
COMMIT_ERROR: Final = "commit-error"
ABORT: Final = "abort"
ABORTED: Final = "aborted"
ABORT_ERROR: Final = "abort-error"
RESTART: Final = "restart"
#: Its sends' lines carry their transaction first; so do its polls' (transaction_polls.py), the records a
#: read-write transaction read, after an `assign` of its consumer as a reader's.
TXN_FIELDS: Final[dict[str, tuple[str, ...]]] = {
    STARTED: ("said",),
    STOPPED: ("said", "said"),
    BEGUN: ("txn", "said"),
    BEGIN_FAILED: ("txn", "exception", "message"),
    INVOKED: ("txn", "value", "partition"),
    ACKED: ("txn", "value", "partition", "offset"),
    ERRORED: ("txn", "value", "partition", "exception", "message"),
    REFUSED: ("txn", "value", "partition", "exception", "message"),
    COMMIT: ("txn", "said"),
    ABORT: ("txn", "said"),
    COMMITTED: ("txn",),
    ABORTED: ("txn",),
    COMMIT_ERROR: ("txn", "exception", "message"),
    ABORT_ERROR: ("txn", "exception", "message"),
    RESTART: ("exception", "message"),
    ASSIGNED: ("partitions", "offsets"),
    POLLED: ("txn", "partition", "offset", "value"),
}

# --- a group member's lines: group_worker.py, KchaosGroupMember.java --------------------------------------
REVOKED: Final = "revoke"
LOST: Final = "lost"
POLL_ERROR: Final = "poll-error"
#: A commit asked for (its id and offsets), answered by `committed` or `commit-error` with the same id.
ASKED: Final = "commit"
MEMBER_FIELDS: Final[dict[str, tuple[str, ...]]] = {
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

# --- an assigned reader's lines: reader_worker.py, KchaosReader.java --------------------------------------
#: The lines saying a hold or release took effect.
HELD: Final = "hold"
RELEASED: Final = "release"
READER_FIELDS: Final[dict[str, tuple[str, ...]]] = {
    STARTED: ("said",),
    STOPPED: ("said",),
    ASSIGNED: ("partitions", "offsets"),
    POLLED: ("partition", "offset", "key", "value"),
    POLL_ERROR: ("exception", "message", "said"),
    HELD: (),
    RELEASED: (),
}

# --- an eos processor's own lines: eos_worker.py, KchaosEosProcessor.java ---------------------------------
# (it prints a group member's lines and a transactional producer's too)
OFFSETS: Final = "offsets"
OFFSETS_ERROR: Final = "offsets-error"
FATE: Final = "fate"
REWIND: Final = "rewind"
PROCESSOR_FIELDS: Final[dict[str, tuple[str, ...]]] = {
    OFFSETS: ("txn", "offsets"),
    OFFSETS_ERROR: ("txn", "exception", "message"),
    FATE: ("txn", "fate"),
    REWIND: ("partitions", "offsets", "member"),
}
#: The group member's lines a processor prints, recorded as a group member's are.
PROCESSOR_MEMBER_KINDS: Final = frozenset({STARTED, STOPPED, ASSIGNED, REVOKED, LOST, POLLED, POLL_ERROR})
