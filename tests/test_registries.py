"""Where two tables must name the same things (a table of rows and the code behind each row), a test holds
them in agreement: one way for every pair, run by CI, rather than an import that raises or an `assert` that
`python -O` strips. The pair of fault rows and fault classes is held by
`tests/test_fault_table.py::test_every_row_has_exactly_one_class_and_every_class_one_row`."""

from __future__ import annotations

from kchaos.checkers.anomalies.group_anomalies import GROUP_ANOMALIES
from kchaos.checkers.rules.anomaly_names import GROUP_ANOMALY_NAMES
from kchaos.model.scenario_table import SCENARIOS
from kchaos.nemesis.scenarios import SEQUENCES


def test_every_scenario_row_has_a_sequence_and_every_sequence_a_row() -> None:
    assert sorted(SEQUENCES) == sorted(SCENARIOS)


def test_the_group_anomalies_are_defined_in_the_order_the_report_names_them() -> None:
    assert tuple(GROUP_ANOMALIES) == GROUP_ANOMALY_NAMES
