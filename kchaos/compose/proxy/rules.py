"""A rule: which requests the proxy holds, drops or delays, as the controller sent it in a `rule` command.

A rule selects on the request header and the connection only (API key, client id, the client's address:
`peers` takes only those addresses, `not_peers` all but those), so it means the same on every release
line. It selects at most `count` requests (0: no limit), each
filter-matching request with `probability`, drawn from the rule's own RNG seeded by `seed`: the same
requests in the same order select the same subset, so a run's choice can be replayed. A removed rule stops
selecting but keeps what it holds until it is released: a hold is only ever ended by a release, a delay's
timer, or its connection's end, so no request is silently let go.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Protocol

from .framing import Header

ACTIONS: Final = ("hold", "drop", "delay")
_FIELDS: Final = frozenset(
    {"op", "rule", "action", "api_keys", "client_id", "client_prefix", "peers", "not_peers", "count"}
    | {"probability"}
    | {"seed", "delay_ms"}
)


class RuleError(ValueError):
    """A `rule` command the proxy refuses; the message names the field as the controller sent it."""


class HeldRequest(Protocol):
    """A request a rule holds, as the rule needs it: to end the hold and to say what it is."""

    def release(self, by: str) -> bool:
        """Lets the request go on in its connection's order; False when it was no longer held."""
        ...

    def describe(self) -> dict[str, Any]:
        """The request's identity as events and `status` show it."""
        ...


@dataclass(eq=False)
class Rule:
    """One rule and what it holds now."""

    rule_id: str
    action: str
    api_keys: frozenset[int] | None
    client_id: str | None
    client_prefix: str | None
    peers: frozenset[str] | None
    #: Addresses whose requests it never takes: kchaos's nodes, for a rule on clients' requests only.
    not_peers: frozenset[str] | None
    count: int
    probability: float
    seed: int
    delay_ms: int | None
    active: bool = True
    selected: int = 0
    held: list[HeldRequest] = field(default_factory=list)
    rng: random.Random = field(init=False)

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)

    def matches(self, header: Header, peer: str) -> bool:
        """Whether the request passes the filters; draws nothing (see `select`)."""
        return (
            self.active
            and (self.api_keys is None or header.api_key in self.api_keys)
            and (self.client_id is None or header.client_id == self.client_id)
            and (
                self.client_prefix is None
                or (header.client_id is not None and header.client_id.startswith(self.client_prefix))
            )
            and (self.peers is None or peer in self.peers)
            and (self.not_peers is None or peer not in self.not_peers)
        )

    def select(self, header: Header, peer: str) -> bool:
        """Whether this rule takes the request: the filters, then the probability draw (only for requests
        that pass the filters, so the draws follow the matching requests alone), then the count."""
        if not self.matches(header, peer):
            return False
        if self.probability < 1.0 and self.rng.random() >= self.probability:
            return False
        self.selected += 1
        if self.count and self.selected >= self.count:
            self.active = False
        return True

    def describe(self) -> dict[str, Any]:
        return {
            "rule": self.rule_id,
            "action": self.action,
            "active": self.active,
            "selected": self.selected,
            "count": self.count,
            "held": len(self.held),
        }


def _strings(command: Mapping[str, Any], key: str) -> frozenset[str] | None:
    value = command.get(key)
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(item, str) and item for item in value):
        raise RuleError(f"{key} must be a list of non-empty strings, got {value!r}")
    return frozenset(value)


def _integer(command: Mapping[str, Any], key: str, default: int, lowest: int) -> int:
    value = command.get(key, default)
    if not isinstance(value, int) or isinstance(value, bool) or value < lowest:
        raise RuleError(f"{key} must be a whole number of at least {lowest}, got {value!r}")
    return value


def _optional_string(command: Mapping[str, Any], key: str) -> str | None:
    value = command.get(key)
    if value is not None and not isinstance(value, str):
        raise RuleError(f"{key} must be a string, got {value!r}")
    return value


def parse_rule(command: Mapping[str, Any]) -> Rule:
    """The rule a `rule` command describes, or RuleError naming the field and what it accepts."""
    unknown = sorted(set(command) - _FIELDS)
    if unknown:
        raise RuleError(f"unknown field(s) {', '.join(unknown)}; a rule takes {', '.join(sorted(_FIELDS))}")
    rule_id = command.get("rule")
    if not isinstance(rule_id, str) or not rule_id:
        raise RuleError(f"rule must be a non-empty string naming the rule, got {rule_id!r}")
    action = command.get("action")
    if action not in ACTIONS:
        raise RuleError(f"action must be one of {', '.join(ACTIONS)}, got {action!r}")
    api_keys = command.get("api_keys")
    if api_keys is not None and (
        not isinstance(api_keys, list)
        or not all(isinstance(key, int) and not isinstance(key, bool) and key >= 0 for key in api_keys)
    ):
        raise RuleError(f"api_keys must be a list of API keys (whole numbers >= 0), got {api_keys!r}")
    probability = command.get("probability", 1.0)
    if (
        not isinstance(probability, int | float)
        or isinstance(probability, bool)
        or not 0.0 <= probability <= 1.0
    ):
        raise RuleError(f"probability must be a number from 0 to 1, got {probability!r}")
    delay_ms: int | None = None
    if action == "delay":
        delay_ms = _integer(command, "delay_ms", -1, 1)
    elif "delay_ms" in command:
        raise RuleError(f"delay_ms is for action delay only; this rule's action is {action}")
    return Rule(
        rule_id=rule_id,
        action=str(action),
        api_keys=frozenset(api_keys) if api_keys is not None else None,
        client_id=_optional_string(command, "client_id"),
        client_prefix=_optional_string(command, "client_prefix"),
        peers=_strings(command, "peers"),
        not_peers=_strings(command, "not_peers"),
        count=_integer(command, "count", 1, 0),
        probability=float(probability),
        seed=_integer(command, "seed", 0, -(2**63)),
        delay_ms=delay_ms,
    )
