"""Which transaction protocols a history's commits and aborts used: what decides whether a fix that needs
protocol 2 (KIP-890 part 2) was in force for the run, since a 4.x cluster still runs protocol 1 for a
client that speaks only it (librdkafka)."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from kchaos.checkers.passes.frames import INVOKE
from kchaos.model.events import TXN_ABORT, TXN_COMMIT
from kchaos.model.txn_protocol import TRANSACTION_PROTOCOL_DERIVED, TRANSACTION_PROTOCOL_OBSERVED


def transaction_protocols(history: DataFrame) -> tuple[int, ...]:
    """The transaction protocols the history's commits and aborts used, from their invoke rows' `detail`
    (observed where the client said, else derived from its code: `kchaos.model.txn_protocol`)."""
    used = F.coalesce(
        F.get_json_object("detail", f"$.{TRANSACTION_PROTOCOL_OBSERVED}"),
        F.get_json_object("detail", f"$.{TRANSACTION_PROTOCOL_DERIVED}"),
    ).cast("int")
    ends = history.filter(F.col("f").isin(TXN_COMMIT, TXN_ABORT) & (F.col("type") == INVOKE)).select(
        used.alias("protocol")
    )
    found = ends.filter(F.col("protocol").isNotNull()).distinct().collect()
    return tuple(sorted(int(row["protocol"]) for row in found))
