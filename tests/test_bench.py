"""The benchmark's generator plants exactly the anomalies it claims: otherwise its timings would compare
engines on the wrong answer. Timings themselves are never asserted here (see bench/run.py)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from pyspark.sql import SparkSession

from bench.generate import generate
from kchaos.checkers.passes.frames import load_history, load_replicas
from kchaos.model.history_files import history_path
from kchaos.model.run_files import RunDir
from tests.checker_ids import anomaly_ids
from tests.reference.anomalies import reference_anomaly_ids


def test_generated_history_holds_exactly_the_planted_counts(tmp_path: Path, spark: SparkSession) -> None:
    expected = generate(100_000, tmp_path / "run", replicas=True)
    run_dir = tmp_path / "run"
    planted = expected["anomalies"]
    assert set(planted) >= {"lost-write", "truncated-read", "replica-divergence"}
    assert all(count > 0 for count in planted.values())

    history = pd.read_parquet(history_path(run_dir))
    assert len(history) == expected["history_rows"]
    reference = reference_anomaly_ids(history, pd.read_parquet(RunDir(run_dir).replicas_parquet))
    assert {name: len(ids) for name, ids in reference.items()} == planted
    found = anomaly_ids(load_history(spark, run_dir), load_replicas(spark, run_dir))
    assert found == reference
