"""The kinds of option a fault takes, each with its default, what it accepts, its check and its help.

An option says once what it accepts: the spec parser checks a value with it, `kchaos faults` and
docs/faults.md list it from it, so the listing cannot offer a value a run refuses. Targets are options too
(`kchaos.model.fault_targets`), since what they accept depends on which faults can aim at ZooKeeper or at
client processes.

Pure (no Docker, no Kafka).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass


class SpecError(ValueError):
    """A fault spec names an unknown fault, option or target, or a value its option refuses; the message
    names the fault, the option and what is accepted."""


def is_whole_number(text: str) -> bool:
    """ASCII digits only. `str.isdigit` also takes fullwidth and Arabic-Indic digits, which Python's
    int reads but `tc` and the schedule's keys do not: a value passed that way failed in `tc` after the
    cluster started."""
    return text.isascii() and text.isdigit()


def check_ascii(fault: str, key: str, value: str, default: str) -> None:
    """Refuses a value with a character outside ASCII, whatever the option: every value a fault takes
    (numbers, node ids, words) is ASCII, and one that is not would be kept in the schedule's keys."""
    if not value.isascii():
        raise SpecError(
            f"{fault}: {key}={value!r} holds a character outside ASCII (digits must be 0-9); write it in "
            f"plain ASCII, e.g. {fault}:{key}={default}"
        )


@dataclass(frozen=True)
class Aims:
    """What the parser knows that a target option's check and help need: whether this fault can aim at
    client processes and the ZooKeeper node, and which faults can."""

    takes_clients: bool = False
    takes_zookeeper: bool = False
    client_faults: tuple[str, ...] = ()
    zookeeper_faults: tuple[str, ...] = ()


@dataclass(frozen=True)
class Option(ABC):
    """One option of a fault: `key=value` in a spec, `default` when left out."""

    key: str
    default: str

    @abstractmethod
    def check(self, fault: str, value: str, aims: Aims) -> None:
        """Raises SpecError, naming `fault`, the option and the fix, for a value it does not accept."""

    @abstractmethod
    def accepts(self, aims: Aims) -> str:
        """What it accepts, for `kchaos faults` (`a whole number from 1 to 100 (percent of ...)`)."""

    def example(self, fault: str) -> str:
        """`e.g. loss:percent=20`: the option spelled with its default."""
        return f"e.g. {fault}:{self.key}={self.default}"


@dataclass(frozen=True)
class Choice(Option):
    """One of a few words; `meaning` says what they do, in the listing and in a refusal."""

    choices: tuple[str, ...] = ()
    meaning: str = ""

    def check(self, fault: str, value: str, aims: Aims) -> None:
        if value not in self.choices:
            meaning = f" ({self.meaning})" if self.meaning else ""
            example = next(c for c in self.choices if c != self.default)  # the default may be what was tried
            raise SpecError(
                f"{fault}: {self.key} must be one of {', '.join(self.choices)}{meaning}, got {value!r}; "
                f"e.g. {fault}:{self.key}={example}"
            )

    def accepts(self, aims: Aims) -> str:
        listed = " or ".join(self.choices)
        return f"{listed} ({self.meaning})" if self.meaning else listed


@dataclass(frozen=True)
class Flag(Option):
    """true or false."""

    def check(self, fault: str, value: str, aims: Aims) -> None:
        if value not in ("true", "false"):
            raise SpecError(f"{fault}: {self.key} must be true or false, got {value!r}")

    def accepts(self, aims: Aims) -> str:
        return "true or false"


@dataclass(frozen=True)
class Number(Option):
    """A whole number from `low` to `high` (no bound: None). A value outside would be refused by `tc`, do
    nothing (`loss:percent=0`), or stop every write for a reason other than the fault under test; better
    refused before a cluster starts. `also` says what it must respect beyond its bounds, which the fault's
    own check holds it to."""

    low: int = 0
    high: int | None = None
    what: str = ""
    also: str = ""

    @property
    def bounds(self) -> str:
        return f"from {self.low} to {self.high}" if self.high is not None else f"at least {self.low}"

    def check(self, fault: str, value: str, aims: Aims) -> None:
        if not is_whole_number(value):
            raise SpecError(
                f"{fault}: {self.key} must be a whole number ({self.what}), got {value!r}; "
                f"{self.example(fault)}"
            )
        if int(value) < self.low or (self.high is not None and int(value) > self.high):
            raise SpecError(
                f"{fault}: {self.key} must be {self.bounds} ({self.what}), got {value}; {self.example(fault)}"
            )

    def accepts(self, aims: Aims) -> str:
        also = f"; {self.also}" if self.also else ""
        return f"a whole number {self.bounds} ({self.what}){also}"


@dataclass(frozen=True)
class Described(Option):
    """A value whose check depends on the fault's other options, so the fault's own check makes it
    (`clock`'s offset, bounded by its mode); the option says only what it accepts."""

    text: str = ""

    def check(self, fault: str, value: str, aims: Aims) -> None:
        """Nothing on its own: see the fault's `check_options`."""

    def accepts(self, aims: Aims) -> str:
        return self.text
