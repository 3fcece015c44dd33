"""What `--producer-config` and `--consumer-config` may set: a platform team's own client settings, passed
to every producer (or every consumer) of the run, of either client, checked before any container starts.

A key is refused here when kchaos must own it, each with why:
- it has a flag of its own that the oracle or the workload reads (`acks`, `enable.idempotence`, the
  delivery and request timeouts, the isolation level, the group protocol, the commit mode): one setting,
  one spelling, so `config.json` and the verdict cannot disagree with what the clients ran with;
- the harness depends on it (`bootstrap.servers`, `client.id`, the serializers, `transactional.id`,
  `group.id`, `auto.offset.reset`, the callbacks): changing it would break the recording or the checks.

What the client itself rejects (an unknown key, a value out of range, a combination such as
`max.in.flight.requests.per.connection=6` with idempotence) is asked of the client, in its own words, once
its image is built and before the cluster starts (kchaos/harness/client_config_check.py).

The keys are the Java client's names, which librdkafka also takes (`linger.ms`, `batch.size`,
`compression.type`, `max.in.flight.requests.per.connection`, `retries`, ...): the same flag works for both
clients. librdkafka's own aliases of an owned key are refused too, so no spelling slips past.

Pure (no Docker, no Kafka): the configuration calls this as it validates, and the oracle reads
`max_in_flight` from what was recorded.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

#: No settings of the user's: the default of a settings builder given none.
NO_SETTINGS: Mapping[str, str] = MappingProxyType({})

#: A client property name: lower case words joined by '.' or '_' (librdkafka's callbacks end in `_cb`).
CLIENT_KEY = re.compile(r"[a-z0-9]+(?:[._][a-z0-9]+)*")

#: Producer keys with a flag of their own, and the flag.
PRODUCER_FLAGS: Final = {
    "acks": "--acks",
    "request.required.acks": "--acks",
    "enable.idempotence": "--idempotence / --no-idempotence",
    "delivery.timeout.ms": "--message-timeout-ms",
    "message.timeout.ms": "--message-timeout-ms",
    "request.timeout.ms": "--request-timeout-ms",
}
#: Consumer keys with a flag of their own, and the flag.
CONSUMER_FLAGS: Final = {
    "isolation.level": "--isolation",
    "group.protocol": "--group-protocol",
    "enable.auto.commit": "--commit",
    "enable.auto.offset.store": "--commit",
    "auto.commit.interval.ms": "--commit",
}

_BOOTSTRAP = "every client is pointed at the run's own brokers"
_CLIENT_ID = "names the process (producer-0, member-1, ...) the history and the nemesis know it by"
_SERIALIZER = "the workers write and read string keys and values the checks decode"
_CALLBACK = "the workers record every outcome through their own callbacks"

#: Producer keys the harness depends on, with why.
PRODUCER_OWNED: Final = {
    "bootstrap.servers": _BOOTSTRAP,
    "metadata.broker.list": _BOOTSTRAP,
    "client.id": _CLIENT_ID,
    "key.serializer": _SERIALIZER,
    "value.serializer": _SERIALIZER,
    "transactional.id": "--workload txn and eos give each producer its own, since one shared id would "
    "fence the others",
    "transaction.timeout.ms": "the transactional workloads set it to at least --message-timeout-ms, as "
    "the client requires",
    "max.block.ms": "it bounds each transactional call, which --txn-on-timeout's policies count on",
    "dr_cb": _CALLBACK,
    "dr_msg_cb": _CALLBACK,
    "error_cb": _CALLBACK,
    "on_delivery": _CALLBACK,
    "logger": _CALLBACK,
}
#: Consumer keys the harness depends on, with why.
CONSUMER_OWNED: Final = {
    "bootstrap.servers": _BOOTSTRAP,
    "metadata.broker.list": _BOOTSTRAP,
    "client.id": _CLIENT_ID,
    "key.deserializer": _SERIALIZER,
    "value.deserializer": _SERIALIZER,
    "group.id": "each reader names a group of its own, and a group's members the run's one group",
    "group.instance.id": "one value for every member would make them fence each other",
    "auto.offset.reset": "readers start from the earliest offset, so a truncated log is read over, not "
    "skipped, and the checks see it",
    "error_cb": _CALLBACK,
    "on_commit": _CALLBACK,
    "logger": _CALLBACK,
}

#: The producer's setting for requests in flight per connection, as either client spells it.
MAX_IN_FLIGHT_KEYS: Final = ("max.in.flight.requests.per.connection", "max.in.flight")


def checked_client_config(values: Mapping[str, str], *, producer: bool) -> dict[str, str]:
    """`values` if each key may be passed to the run's producers (`producer`) or consumers, else a
    ValueError naming the first that may not, why, and the fix."""
    flag = "--producer-config" if producer else "--consumer-config"
    flags = PRODUCER_FLAGS if producer else CONSUMER_FLAGS
    owned = PRODUCER_OWNED if producer else CONSUMER_OWNED
    checked: dict[str, str] = {}
    for raw_key, raw_value in values.items():
        key, value = str(raw_key).strip(), str(raw_value).strip()
        if not CLIENT_KEY.fullmatch(key):
            raise ValueError(
                f"{key!r} is no client property: write it in lower case as the clients name them "
                f"(e.g. {'linger.ms' if producer else 'fetch.max.bytes'})"
            )
        if not value or any(not character.isprintable() for character in value):
            raise ValueError(f"{key}: give it a value on one line, e.g. {flag} {key}=VALUE")
        if key in flags:
            raise ValueError(f"{key} is set by {flags[key]}; use that flag instead of {flag}")
        if key in owned:
            raise ValueError(f"{key} is set by kchaos itself ({owned[key]}); remove it from {flag}")
        checked[key] = value
    spelled = [key for key in MAX_IN_FLIGHT_KEYS if key in checked]
    if len(spelled) > 1:
        raise ValueError(f"{' and '.join(spelled)} are one setting; give it once")
    if spelled:
        max_in_flight(checked)  # a number the oracle can read, or refused now
    return checked


def setting_text(value: object) -> str:
    """A setting's value as the clients take it: text, a YAML or JSON `true` written `true`, not `True`."""
    return str(value).lower() if isinstance(value, bool) else str(value)


def max_in_flight(producer_config: Mapping[str, str]) -> int | None:
    """The producers' requests in flight per connection the user set, or None (the client's default:
    5 in Java, 1,000,000 in librdkafka). A ValueError when it is no whole number of at least 1."""
    for key in MAX_IN_FLIGHT_KEYS:
        if key in producer_config:
            text = str(producer_config[key]).strip()
            if not text.isascii() or not text.isdigit() or int(text) < 1:
                raise ValueError(f"{key}={text!r}: give a whole number of at least 1, e.g. {key}=1")
            return int(text)
    return None
