"""A builder for synthetic replica dumps: the records each broker's copy of a partition holds, in the
shape `replicas/replicas.parquet` has, for tests of replica divergence and of the replica screen.

Apart from the history builder (`tests.histories`) since only the replica tests need it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pandas as pd
from pyspark.sql import DataFrame, SparkSession

from kchaos.checkers.passes.frames import REPLICA_STRUCT
from tests.histories import TOPIC

REPLICA_COLUMNS = tuple(REPLICA_STRUCT.fieldNames())


class ReplicasBuilder:
    """Replica records as `replicas/replicas.parquet` holds them: one row per record in each broker's log."""

    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []

    def record(
        self,
        broker: int,
        offset: int,
        value: str | None,
        *,
        partition: int = 0,
        topic: str = TOPIC,
        leader_epoch: int = 0,
    ) -> None:
        self.rows.append(
            {"broker": broker, "topic": topic, "partition": partition, "offset": offset,
             "leader_epoch": leader_epoch, "key": value, "value": value}
        )  # fmt: skip

    def log(
        self,
        broker: int,
        values: Iterable[tuple[str | None, int]],
        *,
        partition: int = 0,
        topic: str = TOPIC,
        leader_epoch: int = 0,
    ) -> None:
        """A broker's copy of a partition: (value, offset) pairs, e.g. what `HistoryBuilder.sends` wrote."""
        for value, offset in values:
            self.record(broker, offset, value, partition=partition, topic=topic, leader_epoch=leader_epoch)

    def replicated(
        self, values: Iterable[tuple[str | None, int]], brokers: Iterable[int] = (1, 2, 3), **where: Any
    ) -> None:
        """The same log on every broker: what healthy replicas hold."""
        pairs = list(values)
        for broker in brokers:
            self.log(broker, pairs, **where)

    def frame(self, spark: SparkSession) -> DataFrame:
        return spark.createDataFrame(
            [tuple(row[c] for c in REPLICA_COLUMNS) for row in self.rows], schema=REPLICA_STRUCT
        )

    def pandas(self) -> pd.DataFrame:
        return pd.DataFrame(self.rows, columns=list(REPLICA_COLUMNS))
