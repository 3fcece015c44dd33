"""The report's "What happened" section: the story of each violating record, as `kchaos explain` tells it.

A reader who opens a violation's report wants to know how the records were lost before which rule forbade
it, so the stories come first. They are told by `kchaos.checkers.story` (the same lines `kchaos explain`
prints), from the run directory alone; a part the run did not keep (no replicas/, no logs/) is said as the
story says it, and a history that cannot be read becomes one line instead of a report that is not drawn.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kchaos.checkers.story import RunEvidence, tell, violating_records
from kchaos.model.history import HistoryCorrupt
from kchaos.model.run_settings import RunSettings

#: At most this many stories on the page (each is a screen); `kchaos explain` tells the rest.
REPORT_STORIES = 5


@dataclass(frozen=True)
class Stories:
    """What the section shows: each told record's value and story lines, how many violating records were
    left untold, the violated anomalies whose examples name no record, and why no story could be read."""

    told: list[tuple[str, list[str]]]
    more: int
    untold: list[str]
    unreadable: str | None = None
    #: The command that tells the records left out here.
    explain: str = ""


def story_limit(config: Mapping[str, Any]) -> int:
    """How many stories the report tells: the run's --max-examples (as config.json recorded it, else the
    setting's default), at most `REPORT_STORIES`."""
    wanted = config.get("max_examples")
    if not isinstance(wanted, int) or wanted < 1:
        wanted = RunSettings.model_fields["max_examples"].default
    return min(REPORT_STORIES, int(wanted))


def report_stories(run_dir: Path, results: Mapping[str, Any], config: Mapping[str, Any]) -> Stories | None:
    """The stories of `results`' first violating records, None for a run with no violation."""
    subjects, total, untold = violating_records(results, story_limit(config))
    if not subjects and not untold:
        return None
    explain = f"kchaos explain {run_dir} --max-examples {max(total, 1)}"
    if not subjects:
        return Stories([], 0, untold, explain=explain)
    try:
        evidence = RunEvidence.load(run_dir, [subject.value for subject in subjects])
    except (HistoryCorrupt, OSError) as exc:
        return Stories([], total, untold, f"the history could not be read ({exc})", explain)
    told = [(subject.value, tell(evidence, subject)) for subject in subjects]
    return Stories(told, total - len(told), untold, explain=explain)
