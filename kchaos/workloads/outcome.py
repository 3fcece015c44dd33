"""How a client error becomes a history outcome: definitely not done (`fail`) or unknown (`info`).

Said here for sends; offset commits follow the same rule (`commit_outcome`): `fail` only for a refusal.

Calling a send failed when it may have been written would turn a later read of it into a phantom, and calling
it `ok` would invent a loss. So only errors raised before a request could leave the client are `fail`; every
error after that (timeouts, a leader that died mid-request, NOT_ENOUGH_REPLICAS after an earlier attempt
may have appended) is `info`: indeterminate, fine to appear, never a loss if absent.
"""

from __future__ import annotations

from confluent_kafka import KafkaError

from kchaos.compose.rdkafka.transaction_calls import NEVER_SENT
from kchaos.model.events import FAIL, INFO, OK, EventType

#: Errors with which a group coordinator refused an offset commit: the offsets were not committed.
_COMMIT_REFUSED = frozenset(
    {
        KafkaError.ILLEGAL_GENERATION,
        KafkaError.UNKNOWN_MEMBER_ID,
        KafkaError.REBALANCE_IN_PROGRESS,
        KafkaError.FENCED_INSTANCE_ID,
        KafkaError.STALE_MEMBER_EPOCH,  # the consumer protocol's (KIP-848) refusal of a stale member's commit
        KafkaError._ASSIGNMENT_LOST,
        KafkaError.OFFSET_METADATA_TOO_LARGE,
        KafkaError.GROUP_AUTHORIZATION_FAILED,
        KafkaError.TOPIC_AUTHORIZATION_FAILED,
    }
)


def _outcome(error: KafkaError | None, not_done: frozenset[int]) -> EventType:
    """`ok` without an error, `fail` for an error that says the operation did not happen, else `info`."""
    if error is None:
        return OK
    return FAIL if error.code() in not_done else INFO


def outcome_of(error: KafkaError | None) -> EventType:
    """A send's outcome: `fail` only for errors raised before the message left the client."""
    return _outcome(error, NEVER_SENT)


def commit_outcome(error: KafkaError | None) -> EventType:
    """An offset commit's outcome: `fail` when the coordinator refused it, `info` when it may or may not
    have been applied (a timeout, a coordinator that moved)."""
    return _outcome(error, _COMMIT_REFUSED)


def error_text(error: KafkaError) -> str:
    return f"{error.name()}: {error.str()}"


#: `NEVER_SENT` by name, as a librdkafka process prints its delivery errors
#: (kchaos/compose/rdkafka/worker.py).
NEVER_SENT_NAMES = frozenset(KafkaError(code).name() for code in NEVER_SENT)


def named_send_outcome(name: str, message: str | None) -> tuple[EventType, str]:
    """A librdkafka process's failed send, by the error's name and text: the outcome `outcome_of` gives the
    error in the harness, and the same text as `error_text`."""
    return (FAIL if name in NEVER_SENT_NAMES else INFO), f"{name}: {message}" if message else name


#: `_COMMIT_REFUSED` by name, as a librdkafka group member process prints its commit errors.
_COMMIT_REFUSED_NAMES = frozenset(KafkaError(code).name() for code in _COMMIT_REFUSED)


def named_commit_outcome(name: str) -> EventType:
    """A librdkafka process's failed offset commit, by the error's name: the outcome `commit_outcome` gives
    the error in the harness."""
    return FAIL if name in _COMMIT_REFUSED_NAMES else INFO
