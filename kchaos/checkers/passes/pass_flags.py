"""The shape every pass's output takes: only the rows some anomaly flags, each flag a non-null boolean column.

Shared by the passes (`kchaos.checkers.passes.value_pass`, `kchaos.checkers.passes.order_passes`,
`kchaos.checkers.passes.offset_pass`): keeping only flagged rows is what makes a cached pass small, and a
history breaking the contract that values are unique per send fails the check (`raise_error`) here instead of
being guessed at.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import reduce

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F


def _any(flags: Iterable[Column]) -> Column:
    return reduce(lambda a, b: a | b, flags)


def _unique_per_send(breach: Column) -> Column:
    """Fails the check at the first value acknowledged twice, naming it: the unique-value contract of the
    history is what lets one value stand for one send."""
    message = F.concat(
        F.lit("history contract broken: value "),
        F.coalesce(F.col("value"), F.lit("<null>")),
        F.lit(" has several ok sends; a value must be unique per send"),
    )
    return F.when(breach, F.raise_error(message)).otherwise(F.lit(False))


def flagged(
    rows: DataFrame, flags: dict[str, Column], *columns: str, breach: Column | None = None
) -> DataFrame:
    """The rows with at least one flag set, the flags as non-null booleans.

    Rows where `breach` holds are kept too, with a column that fails the check when the pass is computed
    (the breach can then not be filtered away before it is seen).
    """
    named = [F.coalesce(flag, F.lit(False)).alias(name) for name, flag in flags.items()]
    keep = _any(F.col(name) for name in flags)
    if breach is not None:
        named.append(F.coalesce(breach, F.lit(False)).alias("breach"))
        keep = keep | F.col("breach")
    kept = rows.select(*columns, *named).filter(keep)
    if breach is None:
        return kept
    # Kept as a column: a cached pass computes every column, so the breach cannot be optimised away.
    return kept.withColumn("breach", _unique_per_send(F.col("breach")))
