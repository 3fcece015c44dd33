"""Properties: generated histories with planted anomalies, checked by Spark and by the pandas reference.

The histories come from `tests.planted_histories`: clean runs of a small model (`tests.history_model`)
with a random subset of anomaly kinds planted, each by a local edit whose every consequence the injection
states — so the expected ids are known without running any checker — and both engines must report exactly
those ids. The oracle's properties live in `tests.test_oracle_properties`.

Spark work per example is one `anomaly_ids` call on a few hundred rows, about two seconds: the README's test
command draws a few histories per property, and the nightly workflow many more (the tests marked
`nightly`).
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from pyspark.sql import SparkSession

from kchaos.checkers.anomalies.findings import find_anomalies
from tests.checker_ids import anomaly_ids
from tests.planted_histories import Drawn, planted_histories
from tests.reference.anomalies import reference_anomaly_ids

CHECKER_SETTINGS = settings(
    max_examples=6,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
#: The nightly workflow's sample.
MANY = settings(CHECKER_SETTINGS, max_examples=60)


@CHECKER_SETTINGS
@given(planted_histories())
def test_both_engines_find_exactly_the_planted_anomalies(spark: SparkSession, drawn: Drawn) -> None:
    both_engines_find_exactly_the_planted_anomalies(spark, drawn)


@pytest.mark.nightly
@MANY
@given(planted_histories())
def test_both_engines_find_exactly_the_planted_anomalies_in_many_histories(
    spark: SparkSession, drawn: Drawn
) -> None:
    both_engines_find_exactly_the_planted_anomalies(spark, drawn)


def both_engines_find_exactly_the_planted_anomalies(spark: SparkSession, drawn: Drawn) -> None:
    for name, ids in drawn.expected.items():
        event(f"{name}: {'some' if ids else 'none'}")
    replicas_pd = drawn.replicas.pandas() if drawn.replicas is not None else None
    assert reference_anomaly_ids(drawn.history.pandas(), replicas_pd) == drawn.expected
    replicas = drawn.replicas.frame(spark) if drawn.replicas is not None else None
    assert anomaly_ids(drawn.history.frame(spark), replicas) == drawn.expected


@settings(CHECKER_SETTINGS, max_examples=3)
@given(planted_histories(), st.integers(0, 3))
def test_findings_count_the_ids_and_show_the_first_ones(spark: SparkSession, drawn: Drawn, cap: int) -> None:
    replicas = drawn.replicas.frame(spark) if drawn.replicas is not None else None
    findings = find_anomalies(drawn.history.frame(spark), max_examples=cap, replicas=replicas)
    for name, finding in findings.items():
        if name not in drawn.expected:
            assert (finding.checked, finding.count, finding.examples) == (False, None, [])
            continue
        assert finding.count == len(drawn.expected[name]), name
        assert len(finding.examples) == min(cap, len(drawn.expected[name])), name
        assert {example["id"] for example in finding.examples} <= drawn.expected[name], name
