"""A group run checked end to end: the group anomalies judged in `results.json`, and the report's
"Consumer group" section, which a run without group members does not have."""

from __future__ import annotations

from pathlib import Path

from pyspark.sql import SparkSession

from kchaos.checkers.results import check_run
from kchaos.checkers.rules.anomaly_names import (
    EOS_ANOMALY_NAMES,
    EOS_DUPLICATE,
    EOS_LOST,
    GROUP_ANOMALY_NAMES,
    GROUP_DUPLICATE,
    GROUP_LOST,
    OFFSET_REGRESSION,
    TRANSACTION_ANOMALY_NAMES,
)
from kchaos.checkers.rules.checkability import NO_EOS
from kchaos.spark_analysis.report import write_report
from tests.group_histories import GROUP_SCENARIOS
from tests.test_report import lossy_history, make_run


def test_a_group_run_is_judged_on_the_group_anomalies_and_reported(
    tmp_path: Path, spark: SparkSession
) -> None:
    run_dir = make_run(tmp_path, GROUP_SCENARIOS["group-anomalies"]().history, acks="all", idempotence=True)
    results = check_run(run_dir)
    anomalies = results["anomalies"]
    assert list(anomalies)[-len(GROUP_ANOMALY_NAMES) :] == list(GROUP_ANOMALY_NAMES)
    assert (anomalies[GROUP_LOST]["count"], anomalies[GROUP_LOST]["verdict"]) == (2, "violation")
    assert anomalies[GROUP_LOST]["rule_id"] == "group-receives-below-commit"
    duplicate = anomalies[GROUP_DUPLICATE]
    assert (duplicate["verdict"], duplicate["by_kind"]) == (
        "permitted",
        {"after-rebalance": 4, "within-assignment": 1},
    )
    assert anomalies[OFFSET_REGRESSION]["verdict"] == "violation"
    assert results["verdict"] == "violation"
    assert results["summary"]["group_members"] == 3
    html = write_report(run_dir, results, spark).read_text(encoding="utf-8")
    assert 'id="consumer-group"' in html
    assert 'id="group-group-duplicate"' in html and "after-rebalance: 4" in html
    assert 'id="examples-group-lost"' in html


def test_a_clean_group_run_with_rebalances_only_shows_permitted_redelivery(
    tmp_path: Path, spark: SparkSession
) -> None:
    run_dir = make_run(tmp_path, GROUP_SCENARIOS["group-rebalance"]().history, acks="all", idempotence=True)
    results = check_run(run_dir)
    assert results["verdict"] == "permitted"
    assert {name: a["verdict"] for name, a in results["anomalies"].items() if a["verdict"] != "ok"} == {
        "replica-divergence": "unchecked",
        GROUP_DUPLICATE: "permitted",
        **{name: "unchecked" for name in TRANSACTION_ANOMALY_NAMES},  # the run wrote no transactions
        **{name: "unchecked" for name in EOS_ANOMALY_NAMES},  # nor did its group
    }
    assert {results["anomalies"][name]["unchecked_reason"] for name in EOS_ANOMALY_NAMES} == {NO_EOS}


def test_an_eos_run_is_judged_end_to_end_and_reported(tmp_path: Path, spark: SparkSession) -> None:
    """The eos scenario's lost and twice-committed output are violations of exactly-once processing, with
    examples that name the input and where its output is."""
    run_dir = make_run(tmp_path, GROUP_SCENARIOS["eos"]().history, acks="all", idempotence=True)
    results = check_run(run_dir)
    anomalies = results["anomalies"]
    for name in EOS_ANOMALY_NAMES:
        assert (anomalies[name]["count"], anomalies[name]["verdict"], anomalies[name]["rule_id"]) == (
            1, "violation", "exactly-once-processing"), anomalies[name]  # fmt: skip
    (lost,) = anomalies[EOS_LOST]["examples"]
    assert (lost["value"], lost["offset"], lost["committed"]) == ("v0-3", 3, 10)
    (twice,) = anomalies[EOS_DUPLICATE]["examples"]
    assert (twice["value"], twice["outputs"], len(twice["output_places"])) == ("v0-7", 2, 2)
    html = write_report(run_dir, results, spark).read_text(encoding="utf-8")
    assert 'id="group-eos-lost"' in html and 'id="examples-eos-duplicate"' in html


def test_a_run_without_group_members_has_no_group_anomalies_and_no_group_section(
    tmp_path: Path, spark: SparkSession
) -> None:
    run_dir = make_run(tmp_path, lossy_history())
    results = check_run(run_dir)
    assert not set(results["anomalies"]) & set(GROUP_ANOMALY_NAMES)
    assert not any(key.startswith("group_") for key in results["summary"])
    assert 'id="consumer-group"' not in write_report(run_dir, results, spark).read_text(encoding="utf-8")
