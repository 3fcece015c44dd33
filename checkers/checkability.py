"""What a run must have done before an anomaly can be judged on it.

Some anomalies are defined by absence: `lost-write` is an acknowledged write the final read never
returned, `unseen` one above everything it read, `truncated-read` a polled record the final read lacks.
Without a finished final read, absence proves nothing; counting it would judge a run on what it never got
to read. Others need the cluster healed and every replica dumped. Anomalies defined by what was seen (a
value read twice, a read out of order, a send acknowledged below an earlier one) stay checkable in any
run: what a partial run saw did happen.

Pure: the run's phases and what its directory holds in, one reason per unjudgeable anomaly out.
"""

from __future__ import annotations

from collections.abc import Iterable

from checkers.names import LOST_WRITE, REPLICA_DIVERGENCE, TRUNCATED_READ, UNSEEN
from checkers.oracle import Verdict
from harness.phase_record import FINAL_READ, RECOVERY, REPLICA_DUMP, RunPhases

#: The run phases each anomaly's definition depends on; anomalies not listed need none.
NEEDED_PHASES: dict[str, tuple[str, ...]] = {
    LOST_WRITE: (FINAL_READ,),
    UNSEEN: (FINAL_READ,),
    TRUNCATED_READ: (FINAL_READ,),
    REPLICA_DIVERGENCE: (RECOVERY, REPLICA_DUMP),
}

NO_REPLICA_DUMPS = "the run has no replica dumps (replicas/replicas.parquet)"


def unchecked_reasons(anomalies: Iterable[str], phases: RunPhases, replicas_present: bool) -> dict[str, str]:
    """Why each anomaly that cannot be judged on this run cannot be; the others are absent."""
    reasons: dict[str, str] = {}
    for anomaly in anomalies:
        missing = [phase for phase in NEEDED_PHASES.get(anomaly, ()) if not phases.has(phase)]
        if missing:
            plural = "s" if len(missing) > 1 else ""
            needs = f"needs the {' and '.join(missing)} phase{plural}"
            reasons[anomaly] = f"{needs}, which this run did not complete"
        elif anomaly == REPLICA_DIVERGENCE and not replicas_present:
            reasons[anomaly] = NO_REPLICA_DUMPS
    return reasons


def run_verdict(
    judged: Verdict, phases: RunPhases, faults_line: str, none_applied: bool, undecided: str | None = None
) -> tuple[Verdict, str | None]:
    """The run's verdict, and why it is `unchecked` when it is.

    An anomaly found is reported whatever else went wrong: what a run saw did happen. But `ok` is a
    promise that Kafka kept its guarantees under the faults asked for; a run none of whose requested
    faults was applied, or that stopped before the phases its absence-defined anomalies need, cannot
    make it, and says `unchecked` with the reason instead. Neither can a run with anomalies that
    occurred but could not be judged (`undecided`: which, and why).
    """
    if judged in ("permitted", "violation"):
        return judged, None
    if none_applied:
        return "unchecked", f"no requested fault was applied ({faults_line})"
    if phases.partial:
        return "unchecked", f"{phases.describe()}: what needs the missing phases was not judged"
    if undecided:
        return "unchecked", f"anomalies occurred that could not be judged ({undecided})"
    return judged, None
