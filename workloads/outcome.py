"""How a producer error becomes a history outcome: definitely not written (`fail`) or unknown (`info`).

Calling a send failed when it may have been written would turn a later read of it into a phantom, and calling
it `ok` would invent a loss. So only errors raised before a request could leave the client are `fail`; every
error after that (timeouts, a leader that died mid-request, NOT_ENOUGH_REPLICAS after an earlier attempt
may have appended) is `info`: indeterminate, fine to appear, never a loss if absent.
"""

from __future__ import annotations

from confluent_kafka import KafkaError

from harness.events import FAIL, INFO, OK, EventType

#: Errors librdkafka reports for a message it never put on the wire.
_NEVER_SENT = frozenset(
    {
        KafkaError._UNKNOWN_PARTITION,
        KafkaError._UNKNOWN_TOPIC,
        KafkaError._INVALID_ARG,
        KafkaError._QUEUE_FULL,
        KafkaError.MSG_SIZE_TOO_LARGE,
        KafkaError.INVALID_RECORD,
        KafkaError.TOPIC_AUTHORIZATION_FAILED,
    }
)


def outcome_of(error: KafkaError | None) -> EventType:
    if error is None:
        return OK
    return FAIL if error.code() in _NEVER_SENT else INFO


def error_text(error: KafkaError) -> str:
    return f"{error.name()}: {error.str()}"
