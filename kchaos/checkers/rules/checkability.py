"""What a run must have done before an anomaly can be judged on it.

Some anomalies are defined by absence: `lost-write` is an acknowledged write the final read never
returned, `unseen` one above everything it read, `truncated-read` a polled record the final read lacks.
Without a finished final read, absence proves nothing; counting it would judge a run on what it never got
to read. Others need the cluster healed and every replica dumped. Anomalies defined by what was seen (a
value read twice, a read out of order, a send acknowledged below an earlier one) stay checkable in any
run: what a partial run saw did happen.

The transaction anomalies need transactions: a run that wrote none has nothing they could be judged on,
and says so rather than `ok`; so do a consumer group's end-to-end ones (`eos-lost`, `eos-duplicate`),
whose output its members write in transactions. Those about what readers at read_committed returned
(`aborted-read`, `uncommitted-read`) also need each reader's isolation level: records returned by a reader
whose level the history does not record could be either, so a run with such reads cannot promise there
were none, though what its recorded readers returned is still reported.

Pure: the run's phases and what its directory holds in, one reason per unjudgeable anomaly out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from kchaos.checkers.rules.anomaly_names import (
    EOS_ANOMALY_NAMES,
    EOS_LOST,
    LOST_COMMITTED,
    LOST_WRITE,
    NONMONOTONIC_SEND,
    PARTIAL_TRANSACTION,
    REPLICA_DIVERGENCE,
    TRANSACTION_ANOMALY_NAMES,
    TRUNCATED_READ,
    UNSEEN,
)
from kchaos.checkers.rules.oracle import ISOLATION_ANOMALIES
from kchaos.checkers.rules.transaction_summary import TransactionSummary
from kchaos.checkers.rules.verdict_names import PERMITTED, UNCHECKED, VIOLATION, Verdict
from kchaos.model.phase_record import READ_TO_END, RECOVERY, REPLICA_DUMP, RunPhases

#: The run phases each anomaly's definition depends on; anomalies not listed need none.
NEEDED_PHASES: dict[str, tuple[str, ...]] = {
    LOST_WRITE: (READ_TO_END,),
    UNSEEN: (READ_TO_END,),
    TRUNCATED_READ: (READ_TO_END,),
    REPLICA_DIVERGENCE: (RECOVERY, REPLICA_DUMP),
    LOST_COMMITTED: (READ_TO_END,),
    PARTIAL_TRANSACTION: (READ_TO_END,),
    EOS_LOST: (READ_TO_END,),
}

NO_REPLICA_DUMPS = "the run has no replica dumps (replicas/replicas.parquet)"
NO_TRANSACTIONS = "the run wrote no transactions (no txn-send rows), so there is nothing to judge"
#: The anomalies of plain sends alone: what became of an acknowledged `send`, and the order sends were
#: acknowledged in. Records written in transactions have their own (`lost-committed`).
SEND_ANOMALIES = (LOST_WRITE, UNSEEN, NONMONOTONIC_SEND)
NO_PLAIN_SENDS = (
    "the run wrote every record in a transaction (no send was acknowledged); `lost-committed` judges what "
    "became of them"
)
NO_ACKNOWLEDGED_SENDS = "no send was acknowledged, so no acknowledged write was at stake"
#: Why a run that had no write acknowledged, plain or in a transaction, cannot say `ok`.
NOTHING_ACKNOWLEDGED = (
    "no write was acknowledged, so the faults had nothing to lose: is the cluster reachable from the "
    "workload? (see the run's errors)"
)
NO_EOS = (
    "the group's members wrote no transactions (not --workload eos), so it has no output to judge end to end"
)


def unknown_isolation(reads: int) -> str:
    """Why an isolation anomaly none of whose occurrences was found is still not `ok`."""
    return (
        f"{reads} record{'s' if reads != 1 else ''} returned by readers whose isolation level the history "
        "does not record (no `isolation` in their assign or final-read rows), which may have been "
        "read_committed; none found among the readers whose level is recorded"
    )


def unchecked_reasons(
    anomalies: Iterable[str],
    phases: RunPhases,
    replicas_present: bool,
    transactions: TransactionSummary | None = None,
    found: Mapping[str, int | None] | None = None,
    sends_acknowledged: int | None = None,
) -> dict[str, str]:
    """Why each anomaly that cannot be judged on this run cannot be; the others are absent.

    `transactions` None: the run wrote no transactions. `found`, the counts of the anomalies found: an
    isolation anomaly found is reported whatever the unrecorded readers did, one not found is unchecked
    when some reader's level is unknown (without `found`, whenever it is). `sends_acknowledged`: how many
    plain sends were; none leaves nothing for the send anomalies, whose `ok` would promise what was never
    at stake (None: not known, judged as before)."""
    reasons: dict[str, str] = {}
    counts = found or {}
    no_sends = sends_acknowledged == 0
    for anomaly in anomalies:
        missing = [phase for phase in NEEDED_PHASES.get(anomaly, ()) if not phases.has(phase)]
        passed = [why for phase in NEEDED_PHASES.get(anomaly, ()) if (why := phases.skip_reason(phase))]
        if passed:
            reasons[anomaly] = passed[0]
        elif anomaly in SEND_ANOMALIES and no_sends and not counts.get(anomaly):
            reasons[anomaly] = NO_PLAIN_SENDS if transactions is not None else NO_ACKNOWLEDGED_SENDS
        elif anomaly in TRANSACTION_ANOMALY_NAMES and transactions is None:
            reasons[anomaly] = NO_TRANSACTIONS
        elif anomaly in EOS_ANOMALY_NAMES and transactions is None:
            reasons[anomaly] = NO_EOS
        elif missing:
            plural = "s" if len(missing) > 1 else ""
            needs = f"needs the {' and '.join(missing)} phase{plural}"
            reasons[anomaly] = f"{needs}, which this run did not complete"
        elif anomaly == REPLICA_DIVERGENCE and not replicas_present:
            reasons[anomaly] = NO_REPLICA_DUMPS
        elif (
            anomaly in ISOLATION_ANOMALIES
            and transactions is not None
            and transactions.reads_of_unknown_isolation
            and not counts.get(anomaly)
        ):
            reasons[anomaly] = unknown_isolation(transactions.reads_of_unknown_isolation)
    return reasons


def run_verdict(
    judged: Verdict,
    phases: RunPhases,
    faults_line: str,
    none_applied: bool,
    undecided: str | None = None,
    acknowledged: int | None = None,
) -> tuple[Verdict, str | None]:
    """The run's verdict, and why it is `unchecked` when it is.

    A violation found is reported whatever else went wrong: what a run saw did happen, and an anomaly
    whose phases the run did not complete is never judged (`unchecked_reasons`), so a violation rests
    only on phases that were. But `ok` and `permitted` are both promises about the whole run: that
    nothing happened beyond what the documentation allows under the faults asked for. A partial run
    cannot make either: whether it is `permitted` must not turn on which unrelated anomaly it happened to
    see before it stopped. So a partial run is `violation` or `unchecked`, nothing else. A run none of
    whose requested faults was applied, or that had no write acknowledged (`acknowledged`, plain and in
    transactions, 0; None: not known), cannot promise `ok` either, and says `unchecked` with the reason
    instead. Neither can a run with anomalies that occurred but could not be judged (`undecided`: which,
    and why).
    """
    if judged == VIOLATION:
        return judged, None
    if phases.partial:
        return UNCHECKED, f"{phases.describe()}: what needs the missing phases was not judged"
    if judged == PERMITTED:
        return judged, None
    if none_applied:
        return UNCHECKED, f"no requested fault was applied ({faults_line})"
    if acknowledged == 0:
        return UNCHECKED, NOTHING_ACKNOWLEDGED
    if undecided:
        return UNCHECKED, f"anomalies occurred that could not be judged ({undecided})"
    return judged, None
