"""The pandas reference of the consumer-group anomalies against histories whose ground truth is stated by
hand (`tests/group_histories.py`); `tests/test_groups.py` holds the Spark checker to the same."""

from __future__ import annotations

import pytest

from kchaos.checkers.rules.anomaly_names import OFFSET_REGRESSION
from tests.canned_histories import SCENARIOS
from tests.group_histories import (
    GROUP_SCENARIOS,
    MEMBER_0,
    NOTHING,
    commit,
    join,
    regression_id,
    two_groups_history,
)
from tests.histories import HistoryBuilder
from tests.reference.anomalies import reference_anomaly_ids
from tests.reference.groups import group_duplicate_kinds, reference_group_anomaly_ids


@pytest.mark.parametrize("name", GROUP_SCENARIOS)
def test_reference_finds_exactly_the_stated_group_anomalies(name: str) -> None:
    scenario = GROUP_SCENARIOS[name]()
    history = scenario.history.pandas()
    assert reference_group_anomaly_ids(history) == scenario.expected_group_ids()
    assert group_duplicate_kinds(history) == scenario.expected_kinds()


@pytest.mark.parametrize("name", GROUP_SCENARIOS)
def test_reference_poll_order_takes_rebalances_for_what_they_are(name: str) -> None:
    """Partitions moving between members, a member resuming from the committed offset and records handed
    again to a successor are new assignments, not skips or reads going back."""
    scenario = GROUP_SCENARIOS[name]()
    assert reference_anomaly_ids(scenario.history.pandas()) == scenario.expected_ids()


@pytest.mark.parametrize("name", SCENARIOS)
def test_histories_without_group_members_are_not_checked_for_group_anomalies(name: str) -> None:
    """Not "none found": the group anomalies do not apply, so none is named."""
    assert reference_group_anomaly_ids(SCENARIOS[name]().history.pandas()) == {}


def test_info_commits_neither_prove_a_loss_nor_a_regression() -> None:
    """An `info` commit may or may not have been applied: a record below it that no member was handed is
    no loss, and an `ok` commit below it no regression; a `fail` commit was refused outright."""
    h = HistoryBuilder()
    written = h.sends(6)
    join(h, MEMBER_0, [0])
    for value, offset in written[:2]:
        h.read(value, offset, process=MEMBER_0)
    commit(h, MEMBER_0, {0: 6}, outcome="info")
    commit(h, MEMBER_0, {0: 5}, outcome="fail")
    commit(h, MEMBER_0, {0: 2})
    assert reference_group_anomaly_ids(h.pandas()) == NOTHING


def test_each_group_has_its_own_position() -> None:
    """Two groups each handed a record once is no redelivery, and one group committing below another's
    offset no regression; within a group, going back is one."""
    h, back = two_groups_history()
    assert reference_group_anomaly_ids(h.pandas()) == {**NOTHING, OFFSET_REGRESSION: {regression_id(back)}}
