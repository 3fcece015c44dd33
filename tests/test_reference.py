"""The pandas reference and the Spark checker against scenarios whose anomaly ids are stated by hand."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import SparkSession

from kchaos.checkers.passes.frames import load_history, load_replicas
from kchaos.checkers.rules.anomaly_names import ANOMALY_NAMES, REPLICA_DIVERGENCE, TRANSACTION_ANOMALY_NAMES
from kchaos.model.history import HistoryWriter
from kchaos.model.history_files import history_path
from kchaos.model.replica_records import REPLICA_SCHEMA
from kchaos.model.run_files import RunDir
from tests.canned_histories import SCENARIOS, Scenario
from tests.checker_ids import anomaly_ids
from tests.histories import HistoryBuilder
from tests.reference.anomalies import reference_anomaly_ids
from tests.replica_dumps import ReplicasBuilder


def reference_ids(scenario: Scenario) -> dict[str, set[str]]:
    replicas = scenario.replicas.pandas() if scenario.replicas is not None else None
    return reference_anomaly_ids(scenario.history.pandas(), replicas)


def spark_ids(spark: SparkSession, scenario: Scenario) -> dict[str, set[str]]:
    replicas = scenario.replicas.frame(spark) if scenario.replicas is not None else None
    return anomaly_ids(scenario.history.frame(spark), replicas)


@pytest.mark.parametrize("name", SCENARIOS)
def test_reference_finds_exactly_the_stated_anomalies(name: str) -> None:
    scenario = SCENARIOS[name]()
    assert reference_ids(scenario) == scenario.expected_ids()


@pytest.mark.parametrize("name", SCENARIOS)
def test_spark_finds_exactly_the_stated_anomalies(spark: SparkSession, name: str) -> None:
    scenario = SCENARIOS[name]()
    assert spark_ids(spark, scenario) == scenario.expected_ids()


def test_without_replicas_divergence_is_absent_not_empty(spark: SparkSession) -> None:
    scenario = SCENARIOS["clean"]()
    scenario.replicas = None
    for ids in (reference_ids(scenario), spark_ids(spark, scenario)):
        assert REPLICA_DIVERGENCE not in ids
        assert list(ids) == [
            name
            for name in ANOMALY_NAMES
            if name != REPLICA_DIVERGENCE and name not in TRANSACTION_ANOMALY_NAMES
        ]


def test_reference_reads_a_run_directory_as_spark_does(tmp_path: Path, spark: SparkSession) -> None:
    """Through Parquet (nullable integers, Arrow strings) both engines still agree."""
    scenario = SCENARIOS["loss"]()
    files = RunDir(tmp_path)
    writer = HistoryWriter(files, "parquet-test")
    scenario.history.replay(writer)
    writer.finish()
    replicas = ReplicasBuilder()
    replicas.replicated([("a", 0), ("b", 1)])
    replicas.record(3, 1, "c")
    files.replicas.mkdir()
    table = pa.Table.from_pandas(replicas.pandas(), schema=REPLICA_SCHEMA, preserve_index=False)
    pq.write_table(table, files.replicas_parquet)
    history = pd.read_parquet(history_path(tmp_path))
    expected = {**scenario.expected_ids(), REPLICA_DIVERGENCE: {"kchaos/0/1"}}
    assert reference_anomaly_ids(history, pd.read_parquet(files.replicas_parquet)) == expected
    assert anomaly_ids(load_history(spark, tmp_path), load_replicas(spark, tmp_path)) == expected


def test_a_value_acknowledged_twice_is_refused(spark: SparkSession) -> None:
    """One value must stand for one send; two `ok` rows for it would make every verdict a guess."""
    h = HistoryBuilder()
    h.send("twice", 0)
    h.send("twice", 1, process="producer-1")
    h.final_reads([("twice", 0), ("twice", 1)])
    with pytest.raises(ValueError, match="twice"):
        reference_anomaly_ids(h.pandas())
    with pytest.raises(Exception, match="twice"):
        anomaly_ids(h.frame(spark))


def test_null_offsets_are_unknown_not_zero(spark: SparkSession) -> None:
    """An `ok` without an offset (librdkafka reports none for a retry it deduplicated) is neither lost nor
    out of order, and does not hide the order of the sends around it."""
    h = HistoryBuilder()
    h.send("a", 0)
    h.send("deduplicated", None)
    h.send("b", 1)
    h.send("c", 1)
    h.final_reads([("a", 0), ("b", 1), ("deduplicated", 2)])
    expected = {
        name: set()
        for name in ANOMALY_NAMES
        if name != REPLICA_DIVERGENCE and name not in TRANSACTION_ANOMALY_NAMES
    }
    expected["nonmonotonic-send"] = {"c"}
    expected["lost-write"] = {"c"}
    assert reference_anomaly_ids(h.pandas()) == expected
    assert anomaly_ids(h.frame(spark)) == expected
