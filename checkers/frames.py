"""The history as Spark DataFrames: its schema, how a run's history is loaded, and the views checks share.

Every check starts from the same two views — acknowledged sends and records read — so the filters that
decide what counts as "acknowledged" or "read" live in one place. Filtering on both `f` and `type` is
what keeps nemesis rows (whose `value` is `start`/`stop`) out of every anomaly's input.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema
from pyspark.sql.types import StructType

from harness.history import NEMESIS_PROCESS, SCHEMA, history_path

#: The Spark schema of a history, derived from the writer's so the two cannot drift apart.
HISTORY_STRUCT: StructType = from_arrow_schema(SCHEMA)

SEND = "send"
POLL = "poll"
FINAL_READ = "final-read"
#: The `f` values whose `ok` rows are records a consumer read.
READ_FS = (POLL, FINAL_READ)

TPO = ("topic", "partition", "offset")


def load_history(spark: SparkSession, run_dir: Path) -> DataFrame:
    """Reads a history with the declared schema, so one missing a column still loads (as nulls)."""
    return spark.read.schema(HISTORY_STRUCT).parquet(str(history_path(run_dir)))


def is_acknowledged_send() -> Column:
    return (F.col("f") == SEND) & (F.col("type") == "ok")


def is_nemesis() -> Column:
    """Null-safe, so negating it never turns a row with no `process` into a silently dropped null."""
    return F.col("process").eqNullSafe(NEMESIS_PROCESS)


def is_read() -> Column:
    return F.col("f").isin(*READ_FS) & (F.col("type") == "ok") & ~is_nemesis()


@dataclass(frozen=True)
class HistoryViews:
    """The two inputs of every anomaly definition, derived once per check.

    `acknowledged`: one row per `ok` send — where Kafka said the value was written.
    `reads`: one row per record a consumer returned, in polls or the final read.
    """

    acknowledged: DataFrame
    reads: DataFrame

    @classmethod
    def of(cls, history: DataFrame) -> HistoryViews:
        acknowledged = history.filter(is_acknowledged_send() & ~is_nemesis()).select(
            "topic", "partition", "offset", "key", "value", "process", "index", "wall_time"
        )
        reads = history.filter(is_read() & F.col("value").isNotNull()).select(
            "topic", "partition", "offset", "key", "value", "process", "f", "index", "wall_time"
        )
        return cls(acknowledged=acknowledged, reads=reads)

    def cache(self) -> HistoryViews:
        """Both views feed several joins; caching them reads the Parquet once instead of once per check."""
        return HistoryViews(acknowledged=self.acknowledged.cache(), reads=self.reads.cache())

    def unpersist(self) -> None:
        self.acknowledged.unpersist()
        self.reads.unpersist()
