"""How faults are named on the command line: `name[:option=value]...`, e.g. `pause:target=controller`.

This module is pure data (no Docker, no Kafka) so the configuration can validate a whole nemesis before
anything starts, and so `--help`, the README and the error messages all list the same faults and options.
"""

from __future__ import annotations

from dataclasses import dataclass

#: Who a fault hits. Numbers name nodes (`2`, or `1+3` for several).
TARGETS = ("leader", "followers", "controller", "random", "minority", "majority", "all")

#: Every fault, with its options and their defaults. An empty default means "required or derived".
FAULT_OPTIONS: dict[str, dict[str, str]] = {
    # Process faults
    "kill": {"target": "leader"},
    "stop": {"target": "leader"},
    "pause": {"target": "leader"},
    "rolling-restart": {"target": "all"},
    # Network faults (iptables in each node's namespace)
    "isolate": {"target": "leader"},
    "cut-replication": {},
    "halves": {},
    "ring": {},
    "bridge": {},
    "cut-clients": {"target": "leader"},
    "one-way": {"from": "leader", "to": "followers"},
    # Degraded links (tc netem; skipped with a clear message where the kernel has no netem)
    "latency": {"target": "leader", "ms": "200", "jitter": "50"},
    "loss": {"target": "leader", "percent": "20"},
    "bandwidth": {"target": "leader", "kbit": "256"},
    # Configuration faults
    "unclean-election": {"scope": "topic", "trigger": "true"},
    "min-isr": {"value": "1"},
}

#: Names kept for the first two faults kchaos had; each is a fault with a fixed target.
ALIASES = {"kill-leader": "kill:target=leader", "isolate-leader": "isolate:target=leader"}

FAULT_NAMES = tuple(FAULT_OPTIONS) + tuple(ALIASES)


@dataclass(frozen=True)
class FaultSpec:
    """A parsed fault: its name and every option, defaults filled in."""

    name: str
    options: tuple[tuple[str, str], ...]

    def option(self, key: str) -> str:
        return dict(self.options)[key]

    def __str__(self) -> str:
        defaults = FAULT_OPTIONS[self.name]
        changed = [f"{k}={v}" for k, v in self.options if defaults.get(k) != v]
        return ":".join([self.name, *changed])


class SpecError(ValueError):
    """A fault spec names an unknown fault, option or target; the message lists what is accepted."""


def parse_spec(text: str) -> FaultSpec:
    text = ALIASES.get(text.strip(), text.strip())
    name, *parts = text.split(":")
    if name not in FAULT_OPTIONS:
        raise SpecError(f"unknown fault {name!r}; choose from {', '.join(FAULT_NAMES)}")
    options = dict(FAULT_OPTIONS[name])
    for part in parts:
        key, sep, value = part.partition("=")
        if not sep or key not in options:
            accepted = ", ".join(f"{k}=..." for k in FAULT_OPTIONS[name]) or "no options"
            raise SpecError(f"{name}: option {part!r} not understood; {name} takes {accepted}")
        options[key] = value
    for key in ("target", "from", "to"):
        if key in options:
            check_target(name, options[key])
    for key in ("ms", "jitter", "percent", "kbit", "value"):
        if key in options and not options[key].isdigit():
            raise SpecError(f"{name}: {key} must be a whole number, got {options[key]!r}")
    if name == "unclean-election" and options["scope"] not in ("topic", "cluster"):
        raise SpecError("unclean-election: scope must be topic or cluster")
    return FaultSpec(name, tuple(sorted(options.items())))


def check_target(fault: str, target: str) -> None:
    if target in TARGETS:
        return
    if all(part.isdigit() and int(part) > 0 for part in target.split("+")):
        return
    raise SpecError(
        f"{fault}: target {target!r} not understood; use {', '.join(TARGETS)} or node ids like 2 or 1+3"
    )
