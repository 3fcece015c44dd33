"""Which phases of a run completed, recorded in its history as they complete.

A run stopped half-way (Ctrl-C, SIGTERM, a harness error) leaves a history that looks like a finished
one: acknowledged sends and no final read look exactly like acknowledged sends that were all lost. The
checker can only tell the two apart if the run said what it got to do, so each phase that completes
writes one row, and a run that stops early writes one more naming where it was. The rows go into the
history (flushed per row) rather than a file of their own, so they survive exactly as long as the events
they qualify, and re-checking needs nothing but the history.

Rows: process `harness`, type `ok`, f `phase`, value the phase; a stop: type `info`, value `stopped`,
`detail` = `{"during": <what the run was doing>, "error": <why it stopped>}`; a phase the run could not
take at all (no replica to dump from a cluster kchaos cannot reach): type `info`, value the phase, `error`
why. A skipped phase is not missing (the run is complete), and what needs it is not checked, for that
reason.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kchaos.model.events import HARNESS_PROCESS, INFO, OK, PHASE
from kchaos.model.history_schema import parse_detail

#: The `value` of the row a run writes when it stops before completing every phase.
STOPPED = "stopped"

CLUSTER_UP = "cluster-up"
WORKLOAD = "workload"
HEAL = "heal"
RECOVERY = "recovery"
#: The final reader read every partition to its end. Not `final-read`: that word is the final reader's
#: operation (`f`) on every row it writes, and a phase row would be one more row with a different meaning.
READ_TO_END = "read-to-end"
REPLICA_DUMP = "replica-dump"

#: Every phase a complete run records, in the order it completes them.
RUN_PHASES: tuple[str, ...] = (CLUSTER_UP, WORKLOAD, HEAL, RECOVERY, READ_TO_END, REPLICA_DUMP)

#: Phase names histories recorded before a rename, and the phase each now reads as, so an old history is
#: judged as it was.
FORMER_PHASES: Mapping[str, str] = {"final-read": READ_TO_END}


class PhaseRecorder:
    """Writes phase rows into a history (anything with HistoryWriter's `record`)."""

    def __init__(self, history: Any) -> None:
        self.history = history
        self.completed: list[str] = []
        self.stopped_during: str | None = None

    def completed_phase(self, phase: str) -> None:
        if phase not in RUN_PHASES:
            raise ValueError(f"unknown run phase {phase!r}; known: {', '.join(RUN_PHASES)}")
        self.history.record(HARNESS_PROCESS, OK, PHASE, value=phase)
        self.completed.append(phase)

    def skipped(self, phase: str, reason: str) -> None:
        """Records that this run cannot take `phase` at all, and why."""
        if phase not in RUN_PHASES:
            raise ValueError(f"unknown run phase {phase!r}; known: {', '.join(RUN_PHASES)}")
        self.history.record(HARNESS_PROCESS, INFO, PHASE, value=phase, error=reason)

    def stopped(self, during: str, error: BaseException) -> None:
        """Records that the run stops here, before completing every phase; only the first stop counts
        (an error in the final read is where the run stopped, not the replica dump that still follows)."""
        if self.stopped_during is not None:
            return
        self.stopped_during = during
        reason = f"{type(error).__name__}: {error}".rstrip(": ")
        self.history.record(HARNESS_PROCESS, INFO, PHASE, value=STOPPED, error=reason,
                            detail={"during": during})  # fmt: skip


@dataclass(frozen=True)
class RunPhases:
    """What a history says about how far its run got.

    `recorded` is False for histories that carry no phase rows at all: those written by kchaos before
    phases were recorded, or converted from other tools' output. Nothing is known of them, so they are
    judged as complete runs, as they always were, and results say the phases were not recorded.
    """

    recorded: bool
    completed: tuple[str, ...]
    stopped_during: str | None = None
    stop_reason: str | None = None
    #: The phases the run could not take at all, each with why (`PhaseRecorder.skipped`).
    skipped: tuple[tuple[str, str], ...] = ()

    @property
    def missing(self) -> tuple[str, ...]:
        if not self.recorded:
            return ()
        passed = {phase for phase, _ in self.skipped}
        return tuple(phase for phase in RUN_PHASES if phase not in self.completed and phase not in passed)

    def skip_reason(self, phase: str) -> str | None:
        """Why the run could not take `phase`, None when it could."""
        return next((why for skipped, why in self.skipped if skipped == phase), None)

    @property
    def partial(self) -> bool:
        return bool(self.missing)

    def has(self, phase: str) -> bool:
        return not self.recorded or phase in self.completed

    def describe(self) -> str:
        """`complete run`, or `partial run (stopped during: fault active; missing: ...)`."""
        if not self.recorded:
            return "no phase rows in the history (written by another tool or an older kchaos)"
        if not self.partial:
            passed = "; ".join(f"{phase} not taken: {why}" for phase, why in self.skipped)
            return f"complete run ({passed})" if passed else "complete run"
        where = f"stopped during: {self.stopped_during}; " if self.stopped_during else ""
        return f"partial run ({where}missing: {', '.join(self.missing)})"

    def to_json(self) -> dict[str, Any]:
        return {
            "recorded": self.recorded,
            "complete": self.recorded and not self.partial,
            "completed": list(self.completed),
            "missing": list(self.missing),
            "stopped_during": self.stopped_during,
            "stop_reason": self.stop_reason,
            "skipped": {phase: why for phase, why in self.skipped},
            "description": self.describe(),
        }


def run_phases(rows: Iterable[Mapping[str, Any]]) -> RunPhases:
    """Reads the phase rows of a history (process `harness`, f `phase`), in any order."""
    completed: list[str] = []
    stopped_during: str | None = None
    stop_reason: str | None = None
    skipped: list[tuple[str, str]] = []
    seen = False
    for row in sorted(rows, key=lambda r: int(r["index"])):
        if row.get("process") != HARNESS_PROCESS or row.get("f") != PHASE:
            continue
        seen = True
        phase = FORMER_PHASES.get(str(row.get("value")), row.get("value"))
        if row.get("type") == OK and phase in RUN_PHASES and phase not in completed:
            completed.append(str(phase))
        elif row.get("type") == INFO and phase in RUN_PHASES:
            skipped.append((str(phase), str(row.get("error") or "no reason recorded")))
        elif row.get("value") == STOPPED:
            during = parse_detail(row.get("detail")).get("during")
            stopped_during = str(during) if during else stopped_during
            stop_reason = row.get("error") or stop_reason
    return RunPhases(seen, tuple(completed), stopped_during, stop_reason, tuple(skipped))
