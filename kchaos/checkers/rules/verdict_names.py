"""The verdict names: one spelling per verdict, their order of seriousness, and the one colour table.

The checkers give verdicts, the terminal prints them and the reports draw them; all three take the names
and colours from here, so a verdict reads the same (and is the same colour) wherever it shows. Kept in the
checkers, below both the runner and the Spark reports, and free of any import, so either can load it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final, Literal, TypeGuard

Verdict = Literal["ok", "permitted", "violation", "unchecked"]

#: No anomaly occurred.
OK: Final = "ok"
#: Anomalies occurred that the documentation allows for this configuration and these faults.
PERMITTED: Final = "permitted"
#: Anomalies occurred that the documentation says cannot happen.
VIOLATION: Final = "violation"
#: Nothing could be judged, or what occurred could not be.
UNCHECKED: Final = "unchecked"

#: Verdicts from least to most serious.
VERDICT_SEVERITY: tuple[Verdict, ...] = (UNCHECKED, OK, PERMITTED, VIOLATION)


@dataclass(frozen=True)
class VerdictColour:
    """How one verdict is coloured: `terminal` is a click colour name, `hex` what figures and HTML use."""

    terminal: str
    hex: str


#: Each verdict's colour in the terminal and in the reports, side by side so they are chosen together.
VERDICT_COLOURS: Mapping[Verdict, VerdictColour] = {
    OK: VerdictColour(terminal="green", hex="#2ca02c"),
    PERMITTED: VerdictColour(terminal="yellow", hex="#e0a800"),
    VIOLATION: VerdictColour(terminal="red", hex="#d62728"),
    UNCHECKED: VerdictColour(terminal="white", hex="#7f7f7f"),
}


def is_verdict(name: str) -> TypeGuard[Verdict]:
    """Whether `name`, read from a file, is one of the verdicts."""
    return name in VERDICT_SEVERITY


def verdict_colour(name: str) -> VerdictColour:
    """The colour of verdict `name`; a name that is no verdict (an old or damaged file) looks `unchecked`."""
    return VERDICT_COLOURS[name if is_verdict(name) else UNCHECKED]
