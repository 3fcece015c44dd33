"""How the Java producer's send exception becomes a history outcome: definitely not done (`fail`) or unknown
(`info`), the rule kchaos's librdkafka producers follow too (kchaos/workloads/outcome.py).

Said once for both places a Java producer's outcomes are read: Kafka's VerifiableProducer's log
(kchaos/checkers/importers/verifiable_log.py) and kchaos's own Java worker
(kchaos/workloads/processes/worker_recorder.py), so one exception is never judged two ways.
"""

from __future__ import annotations

from kchaos.model.events import FAIL, INFO, MESSAGE_TIMED_OUT, EventType

#: Java exceptions that mean the record never reached a broker (rejected by the client itself, or refused
#: before any append). Every other send error may have been written: indeterminate.
NEVER_SENT_EXCEPTIONS = frozenset(
    {
        "RecordTooLargeException",
        "SerializationException",
        "InvalidTopicException",
        "TopicAuthorizationException",
        "BufferExhaustedException",
        "InvalidRecordException",
    }
)

#: The Java producer's delivery timeout; recorded under kchaos's name for it so the oracle's
#: `idempotent-epoch-bump` rule sees it.
TIMEOUT_EXCEPTION = "TimeoutException"


def java_send_outcome(exception: str, message: str | None) -> tuple[EventType, str]:
    """The history outcome of a failed send and its error text (`Class: message`); `exception` may be the
    class's full name, with or without `class `."""
    simple = exception.removeprefix("class ").rsplit(".", 1)[-1]
    text = f"{simple}: {message}" if message else simple
    if simple == TIMEOUT_EXCEPTION:
        return INFO, f"{MESSAGE_TIMED_OUT}: {text}"
    return (FAIL if simple in NEVER_SENT_EXCEPTIONS else INFO), text
