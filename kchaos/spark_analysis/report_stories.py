"""The report's "What happened" section: the story of each violation, as `kchaos explain` tells it.

A reader who opens a violation's report wants to know how the records were lost before which rule forbade
it, so the stories come first. They are told by `kchaos.checkers.stories.teller` (the same lines `kchaos
explain` prints: a lost record's, a replica divergence's, a transaction's), from the run directory alone; a
part the run did not keep (no replicas/, no logs/) is said as the story says it, and a history that cannot be
read becomes one line instead of a report that is not drawn.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kchaos.checkers.stories.teller import choose, tell_all
from kchaos.model.history_files import HistoryCorrupt
from kchaos.model.run_settings import RunSettings

#: At most this many stories on the page (each is a screen); `kchaos explain` tells the rest.
REPORT_STORIES = 5


@dataclass(frozen=True)
class Stories:
    """What the section shows: each told story's id (a record's value, a place, a transaction) and lines,
    how many violations were left untold, the violated anomalies whose examples name nothing a story
    tells, and why no story could be read."""

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
    """The stories of `results`' first violations, None for a run with no violation."""
    chosen = choose(results, story_limit(config))
    if not chosen.subjects and not chosen.untold:
        return None
    explain = f"kchaos explain {run_dir} --max-examples {max(chosen.total, 1)}"
    if not chosen.subjects:
        return Stories([], 0, chosen.untold, explain=explain)
    try:
        told = tell_all(run_dir, chosen.subjects)
    except (HistoryCorrupt, OSError) as exc:
        return Stories([], chosen.total, chosen.untold, f"the history could not be read ({exc})", explain)
    return Stories(told, chosen.total - len(told), chosen.untold, explain=explain)
