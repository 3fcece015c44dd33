"""The history and replica dumps as Spark DataFrames: schemas, loading, and the views checks start from.

Every anomaly starts from the same few kinds of rows — acknowledged sends, the invocations before them,
records read, consumer assignments, replica records — so the filters that decide what counts as
"acknowledged" or "read" live in one place. Filtering on both `f` and `type` is what keeps nemesis rows
(whose `value` is `start`/`stop`) out of every anomaly's input.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pyarrow.parquet as pq
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema
from pyspark.sql.types import StructType

# The operations are re-exported: the checks name row kinds by them.
from kchaos.model.events import ASSIGN as ASSIGN
from kchaos.model.events import FINAL_READ as FINAL_READ
from kchaos.model.events import INVOKE as INVOKE
from kchaos.model.events import NEMESIS_PROCESS, OK, SEND, TXN_SEND
from kchaos.model.events import POLL as POLL
from kchaos.model.history_files import history_path
from kchaos.model.history_schema import SCHEMA
from kchaos.model.replica_records import REPLICA_SCHEMA
from kchaos.model.run_files import RunDir

#: The Spark schema of a history, derived from the writer's so the two cannot drift apart.
HISTORY_STRUCT: StructType = from_arrow_schema(SCHEMA)

#: The Spark schema of `replicas/replicas.parquet`, likewise derived from the harness's writer.
REPLICA_STRUCT: StructType = from_arrow_schema(REPLICA_SCHEMA)

#: The `f` values whose `ok` rows are records a consumer read.
READ_FS = (POLL, FINAL_READ)

#: Row kinds of `HistoryViews.rows`: the `invoke` and `ok` rows of sends (`invoke`, `ack`), records read
#: (by their `f`), and consumer assignments.
ACK = "ack"
KINDS = (INVOKE, ACK, POLL, FINAL_READ, ASSIGN)

TPO = ("topic", "partition", "offset")
TP = ("topic", "partition")


def load_history(spark: SparkSession, run_dir: Path) -> DataFrame:
    """Reads a history with the declared schema, so one missing a column still loads (as nulls).

    By its absolute path: a Spark Connect server resolves a relative one in its own working directory,
    where `kchaos check rel2 --spark-remote ...` judged another run's history as this one's."""
    return spark.read.schema(HISTORY_STRUCT).parquet(str(history_path(run_dir).absolute()))


class OtherRunRead(ValueError):
    """The history Spark read is not the one this process sees at the run directory's path."""


def require_same_history(history: DataFrame, run_dir: Path, where: str) -> None:
    """Raises `OtherRunRead`, naming both, unless the history Spark read (`history`, loaded by `where`, a
    Spark Connect server) holds the rows and run ids of the one this process reads at `run_dir`: a server
    that sees other files at the same path (another machine, a container) would judge another run."""
    local = pq.read_table(history_path(run_dir), columns=["run_id"]).column("run_id")
    ids = sorted({str(value) for value in local.unique().to_pylist()})
    row = history.agg(F.count(F.lit(1)).alias("rows"), F.collect_set("run_id").alias("ids")).first()
    read = (int(row["rows"]), sorted(str(value) for value in row["ids"])) if row is not None else (0, [])
    if read != (len(local), ids):
        raise OtherRunRead(
            f"the Spark server at {where} read another history at {history_path(run_dir).absolute()} "
            f"({read[0]} rows of run {', '.join(read[1]) or 'none'}) than this machine holds there "
            f"({len(local)} rows of run {', '.join(ids) or 'none'}); a server must see this machine's run "
            "directories at the same paths: start one here with `kchaos spark-server`, or check without "
            "--spark-remote"
        )


def history_rows(run_dir: Path) -> int:
    """How many rows the run's history holds, from the Parquet footer: known before Spark starts, so the
    session can be sized for it (`kchaos.checkers.runtime.session.spark_session`)."""
    return int(pq.ParquetFile(history_path(run_dir)).metadata.num_rows)


def load_replicas(spark: SparkSession, run_dir: Path) -> DataFrame | None:
    """The run's replica records, or None when the run has no replica dumps.

    None is not "no divergence": a history converted from another tool, or a run whose dump failed, simply
    cannot be checked for `replica-divergence`, and the results must say so.
    """
    path = RunDir(run_dir).replicas_parquet
    if not path.exists():
        return None
    return spark.read.schema(REPLICA_STRUCT).parquet(str(path.absolute()))


def is_acknowledged_send() -> Column:
    return (F.col("f") == SEND) & (F.col("type") == OK)


def is_nemesis() -> Column:
    """Null-safe, so negating it never turns a row with no `process` into a silently dropped null."""
    return F.col("process").eqNullSafe(NEMESIS_PROCESS)


def is_read() -> Column:
    return F.col("f").isin(*READ_FS) & (F.col("type") == OK) & ~is_nemesis()


def count_where(condition: Column) -> Column:
    """How many rows of a group (or of a whole frame) `condition` holds for: 0, never null, when none do."""
    return F.count(F.when(condition, 1))


def flag(anomaly: str) -> str:
    """The flag column of a pass marking the rows that are occurrences of `anomaly` (or of one kind of it,
    `values-differ` or `offset-differs`): the anomaly's name as a column name, so a flag is never read as
    anything else."""
    return anomaly.replace("-", "_")


def row_kind() -> Column:
    """What a history row is to the checks (null: nothing they use)."""
    return (
        F.when(is_nemesis(), None)
        .when(is_acknowledged_send(), ACK)
        .when((F.col("f") == SEND) & (F.col("type") == INVOKE), INVOKE)
        .when(is_read() & F.col("value").isNotNull(), F.col("f"))
        .when((F.col("f") == ASSIGN) & (F.col("type") == OK), ASSIGN)
    )


def is_transactional_record() -> Column:
    """A row of a record written inside a transaction (`txn-send`), whatever its outcome."""
    return (F.col("f") == TXN_SEND) & ~is_nemesis()


def has_transactions(history: DataFrame) -> bool:
    """Whether any record was written inside a transaction: one small job, which a Parquet history answers
    from its row groups' statistics for the most part."""
    return not history.filter(is_transactional_record()).isEmpty()


@dataclass(frozen=True)
class HistoryViews:
    """The inputs of every anomaly definition: filters of the history, and the replica dumps if any.

    `rows(kinds)`: the history rows of those kinds (`invoke`, `ack`, `poll`, `final-read`, `assign`), with
    a `kind` column, in one scan however many kinds are asked for.
    `partitions`: per topic-partition, the highest offset read, whether the final read covered it (a
    `final-read` invoke or ok row exists) and the highest offset it read — a handful of rows.
    `replicas`: each broker's records, or None when the run has no replica dumps.
    `transactional`: records were written inside transactions (`txn-send` rows), so the topic holds
    control markers and the transaction anomalies apply (`kchaos.checkers.passes.transaction_passes`). Known
    before the checks are planned, so a history without transactions plans none of their work.
    """

    history: DataFrame
    replicas: DataFrame | None
    transactional: bool = False

    @classmethod
    def of(
        cls, history: DataFrame, replicas: DataFrame | None = None, transactional: bool | None = None
    ) -> HistoryViews:
        """`transactional` None: asked of the history (`has_transactions`, one small job)."""
        return cls(history, replicas, has_transactions(history) if transactional is None else transactional)

    def rows(self, *kinds: str) -> DataFrame:
        unknown = set(kinds) - set(KINDS)
        if unknown:
            raise ValueError(f"unknown row kinds {sorted(unknown)}; known: {KINDS}")
        return self.history.select(
            row_kind().alias("kind"),
            "process",
            "topic",
            "partition",
            "offset",
            "value",
            "index",
            "time_ns",
            "wall_time",
        ).filter(F.col("kind").isin(*kinds))

    @property
    def acknowledged(self) -> DataFrame:
        """One row per `ok` send — where Kafka said the value was written."""
        return self.rows(ACK)

    @property
    def reads(self) -> DataFrame:
        """One row per record a consumer returned, in polls or the final read."""
        return self.rows(*READ_FS)

    @property
    def partitions(self) -> DataFrame:
        read = is_read() & F.col("value").isNotNull()
        final_read = (F.col("f") == FINAL_READ) & ~is_nemesis()
        return (
            self.history.filter(
                F.col("topic").isNotNull()
                & F.col("partition").isNotNull()
                & (read | (final_read & F.col("type").isin(INVOKE, OK)))
            )
            .groupBy(*TP)
            .agg(
                F.max(F.when(read, F.col("offset"))).alias("highest_read_offset"),
                F.max(final_read.cast("int")).alias("final_read_covered"),
                F.max(F.when(final_read & read, F.col("offset"))).alias("final_read_highest_offset"),
            )
            .withColumn("final_read_covered", F.col("final_read_covered") == 1)
        )
