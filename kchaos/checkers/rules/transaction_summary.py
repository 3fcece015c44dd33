"""What a history's transactions came to: how many committed, aborted or stayed undecided, and how much of
what was read the transaction anomalies could judge.

Kept apart from the Spark code that counts it (`kchaos.checkers.passes.transaction_passes`) so that
checkability, results and the report, none of which needs a JVM, can read it. A history without transactions
has no summary (None), which is how everything downstream tells a run that wrote none.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class TransactionSummary:
    """Counts of one history's transactions (how each ended as `tests.reference.transactions.Transactions`
    defines it) and records; `committed_records`, the records of committed transactions whose send was
    acknowledged (what a transactional run's headline counts as acknowledged, and `lost-committed` as
    owed); and `reads_of_unknown_isolation`: records returned by readers whose isolation level the history
    does not record (their start rows name none), which no isolation anomaly can judge."""

    transactions: int
    committed: int
    aborted: int
    records: int
    committed_records: int
    reads_of_unknown_isolation: int
    #: The transaction protocols its commits and aborts used, as their rows recorded (observed or derived;
    #: `kchaos.model.txn_protocol`); empty when no row said.
    protocols: tuple[int, ...] = ()

    @property
    def undecided(self) -> int:
        """Neither committed nor aborted: open, or a commit or abort whose outcome is not known."""
        return self.transactions - self.committed - self.aborted

    def to_json(self) -> dict[str, Any]:
        return {
            "transactions": self.transactions,
            "committed": self.committed,
            "aborted": self.aborted,
            "undecided": self.undecided,
            "records": self.records,
            "committed_records": self.committed_records,
            "reads_of_unknown_isolation": self.reads_of_unknown_isolation,
            "protocols": list(self.protocols),
        }
