"""Every occurrence id the Spark checkers find, for tests that hold them to the pandas reference
(`tests.reference`) or to a scenario's planted ids.

A check never needs every id (it counts, and spells out the first few), so this lives with the tests: it
collects every id to the driver, which only a history of test size allows.
"""

from __future__ import annotations

from functools import reduce

from pyspark.sql import DataFrame

from kchaos.checkers.anomalies.definition import Anomaly
from kchaos.checkers.anomalies.group_anomalies import GROUP_ANOMALIES
from kchaos.checkers.anomalies.registry import ANOMALIES
from kchaos.checkers.passes.frames import HistoryViews
from kchaos.checkers.passes.group_passes import has_group_members
from kchaos.checkers.passes.history_passes import Passes


def _ids(anomalies: dict[str, Anomaly], passes: Passes) -> dict[str, set[str]]:
    """Every checked anomaly's ids, collected in one job (an anomaly with none has an empty set)."""
    checked = [anomaly for anomaly in anomalies.values() if anomaly.is_checked(passes)]
    ids: dict[str, set[str]] = {anomaly.name: set() for anomaly in checked}
    frames = [frame for anomaly in checked for frame in anomaly.ids(passes)]
    for row in reduce(DataFrame.union, frames).collect() if frames else []:
        ids[row["anomaly"]].add(row["id"])
    return ids


def anomaly_ids(history: DataFrame, replicas: DataFrame | None = None) -> dict[str, set[str]]:
    """The ids of every occurrence of every anomaly checked, as `tests.reference.anomalies` names them.

    `replica-divergence` is absent without replicas, the transaction anomalies without transactions.
    """
    passes = Passes(HistoryViews.of(history, replicas))
    try:
        return _ids(ANOMALIES, passes)
    finally:
        passes.unpersist()


def group_anomaly_ids(history: DataFrame) -> dict[str, set[str]]:
    """The ids of every occurrence of every group anomaly checked, as `tests.reference.groups` names them;
    empty when the history has no group members."""
    if not has_group_members(history):
        return {}
    passes = Passes(HistoryViews.of(history))
    try:
        return _ids(GROUP_ANOMALIES, passes)
    finally:
        passes.unpersist()
