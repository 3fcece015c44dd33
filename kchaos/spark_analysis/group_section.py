"""The report's "Consumer group" section: what a run's group did, and what the group checks found.

Drawn only for a run whose history has consumer-group members (its summary then counts them): a run of
assigned readers has no group to report on, and a section of zeros would read as a group that did
nothing. Pure: `results.json` in, the section's rows out.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kchaos.checkers.rules.anomaly_names import GROUP_ANOMALY_NAMES

#: The summary's group counts, as the section labels them, in the order it lists them.
GROUP_COUNTS: tuple[tuple[str, str], ...] = (
    ("group_members", "members"),
    ("group_assignments", "assignments (one per member per rebalance)"),
    ("group_revocations", "revocations"),
    ("group_revocations_lost", "partitions reported lost"),
    ("group_commits_ok", "commits ok"),
    ("group_commits_failed", "commits failed (refused)"),
    ("group_commits_indeterminate", "commits indeterminate"),
)


@dataclass(frozen=True)
class GroupSection:
    """The section's rows: labelled counts, and each group anomaly's finding from `results.json`."""

    counts: list[tuple[str, int]]
    anomalies: dict[str, Mapping[str, Any]]


def group_section(results: Mapping[str, Any]) -> GroupSection | None:
    """The section for a run whose history has group members; None for any other."""
    summary = results.get("summary") or {}
    if not summary.get("group_members"):
        return None
    found = results.get("anomalies") or {}
    return GroupSection(
        counts=[(label, int(summary.get(key) or 0)) for key, label in GROUP_COUNTS],
        anomalies={name: found[name] for name in GROUP_ANOMALY_NAMES if name in found},
    )
