"""The verdict vocabulary is complete in each of its tables: a verdict added to one is added to all."""

from __future__ import annotations

from typing import get_args

from kchaos.checkers.rules.verdict_names import (
    UNCHECKED,
    VERDICT_COLOURS,
    VERDICT_SEVERITY,
    Verdict,
    is_verdict,
    verdict_colour,
)


def test_every_verdict_has_a_severity_and_a_colour() -> None:
    assert set(VERDICT_SEVERITY) == set(get_args(Verdict)) == set(VERDICT_COLOURS)
    assert len(VERDICT_SEVERITY) == len(set(VERDICT_SEVERITY))


def test_an_unknown_name_is_coloured_as_unchecked() -> None:
    assert not is_verdict("lost")
    assert verdict_colour("lost") == VERDICT_COLOURS[UNCHECKED]
    assert verdict_colour("violation").terminal == "red"
