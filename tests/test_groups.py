"""The consumer-group anomalies on Spark against histories whose ground truth is stated by hand (the pandas
reference is held to the same in `tests/test_reference_groups.py`), the existing checks of both engines on
a group history with rebalances, and when the group anomalies apply at all."""

from __future__ import annotations

import pytest
from pyspark.sql import SparkSession

from kchaos.checkers.anomalies.findings import find_anomalies
from kchaos.checkers.passes.group_passes import has_group_members
from kchaos.checkers.rules.anomaly_names import (
    AFTER_REBALANCE,
    ANOMALY_NAMES,
    EOS_ANOMALY_NAMES,
    GROUP_ANOMALY_NAMES,
    GROUP_DUPLICATE,
    GROUP_LOST,
    OFFSET_REGRESSION,
    REPLICA_DIVERGENCE,
    WITHIN_ASSIGNMENT,
)
from kchaos.checkers.summary import has_groups, summarize
from tests.canned_histories import SCENARIOS
from tests.checker_ids import anomaly_ids, group_anomaly_ids
from tests.group_histories import (
    GROUP,
    GROUP_SCENARIOS,
    MEMBER_0,
    MEMBER_1,
    NOTHING,
    commit,
    join,
    regression_id,
    two_groups_history,
)
from tests.histories import HistoryBuilder
from tests.reference.anomalies import reference_anomaly_ids
from tests.reference.groups import reference_group_anomaly_ids


@pytest.mark.parametrize("name", GROUP_SCENARIOS)
def test_spark_finds_exactly_the_stated_group_anomalies(spark: SparkSession, name: str) -> None:
    """The same ids as the reference (`tests/test_reference_groups.py`) is held to."""
    scenario = GROUP_SCENARIOS[name]()
    assert group_anomaly_ids(scenario.history.frame(spark)) == scenario.expected_group_ids()


@pytest.mark.parametrize("name", GROUP_SCENARIOS)
def test_existing_checks_take_rebalances_for_what_they_are(spark: SparkSession, name: str) -> None:
    """Partitions moving between members, a member resuming from the committed offset and records handed
    again to a successor are new assignments, not skips or reads going back: the existing checks find
    only what the scenario states, in both engines."""
    scenario = GROUP_SCENARIOS[name]()
    assert reference_anomaly_ids(scenario.history.pandas()) == scenario.expected_ids()
    assert anomaly_ids(scenario.history.frame(spark)) == scenario.expected_ids()


def test_findings_of_a_group_history_add_the_group_anomalies_with_kinds(spark: SparkSession) -> None:
    scenario = GROUP_SCENARIOS["group-anomalies"]()
    findings = find_anomalies(scenario.history.frame(spark), max_examples=10)
    assert list(findings) == [*ANOMALY_NAMES, *GROUP_ANOMALY_NAMES]
    assert not findings[REPLICA_DIVERGENCE].checked
    expected = scenario.expected_group_ids()
    assert [name for name in GROUP_ANOMALY_NAMES if not findings[name].checked] == list(EOS_ANOMALY_NAMES)
    for name in expected:
        assert findings[name].count == len(expected[name]), name
        assert {e["id"] for e in findings[name].examples} == expected[name], name
    duplicate = findings[GROUP_DUPLICATE]
    assert duplicate.by_kind == {AFTER_REBALANCE: 4, WITHIN_ASSIGNMENT: 1}
    assert sum(duplicate.by_partition.values()) == duplicate.count  # type: ignore[union-attr]
    lost = {e["value"]: e for e in findings[GROUP_LOST].examples}
    assert lost["v0-4"]["group"] == GROUP and lost["v0-4"]["committed"] == 13
    assert lost["v0-4"]["final_read_there"] == ["v0-4"] and lost["v0-4"]["handed_there"] == []
    assert lost["v1-1"]["group"] == "other" and lost["v1-1"]["topic"] == "kchaos"
    first = findings[OFFSET_REGRESSION].examples[0]
    assert (first["offset"], first["earlier_offset"], first["earlier_process"], first["back_by"]) == (
        8,
        10,
        MEMBER_0,
        2,
    )
    twice = next(e for e in duplicate.examples if e["value"] == "v0-12")
    assert (twice["kind"], twice["deliveries"], twice["first_member"], twice["last_member"]) == (
        WITHIN_ASSIGNMENT,
        2,
        MEMBER_1,
        MEMBER_1,
    )


def test_a_history_without_group_members_is_not_checked_for_the_group_anomalies(spark: SparkSession) -> None:
    """Not "none found": the group anomalies do not apply, so neither engine names them."""
    scenario = SCENARIOS["poll-order"]()
    frame = scenario.history.frame(spark)
    assert not has_group_members(frame)
    assert reference_group_anomaly_ids(scenario.history.pandas()) == {}
    assert group_anomaly_ids(frame) == {}
    assert not set(find_anomalies(frame)) & set(GROUP_ANOMALY_NAMES)
    assert not has_groups(summarize(frame))


def test_summary_counts_what_the_group_did(spark: SparkSession) -> None:
    summary = summarize(GROUP_SCENARIOS["group-rebalance"]().history.frame(spark))
    assert has_groups(summary)
    assert {key: value for key, value in summary.items() if key.startswith("group_")} == {
        "group_members": 2,
        "group_assignments": 4,
        "group_revocations": 2,
        "group_revocations_lost": 1,
        "group_commits_ok": 4,
        "group_commits_failed": 1,
        "group_commits_indeterminate": 1,
    }


def test_info_commits_neither_prove_a_loss_nor_a_regression(spark: SparkSession) -> None:
    """An `info` commit may or may not have been applied: a record below it that no member was handed is
    no loss, and an `ok` commit below it no regression; `fail` commits were refused outright."""
    h = HistoryBuilder()
    written = h.sends(6)
    join(h, MEMBER_0, [0])
    for value, offset in written[:2]:
        h.read(value, offset, process=MEMBER_0)
    commit(h, MEMBER_0, {0: 6}, outcome="info")
    commit(h, MEMBER_0, {0: 5}, outcome="fail")
    commit(h, MEMBER_0, {0: 2})
    assert reference_group_anomaly_ids(h.pandas()) == NOTHING
    assert group_anomaly_ids(h.frame(spark)) == NOTHING


def test_a_record_redelivered_to_another_group_is_no_duplicate_and_a_regression_is_per_group(
    spark: SparkSession,
) -> None:
    """Each group has its own position: two groups each handed a record once is not a redelivery, and one
    group committing below another's offset is not a regression."""
    h, back = two_groups_history()
    expected = {**NOTHING, OFFSET_REGRESSION: {regression_id(back)}}
    assert reference_group_anomaly_ids(h.pandas()) == expected
    assert group_anomaly_ids(h.frame(spark)) == expected


def test_a_commit_answered_late_is_ordered_by_when_it_was_asked_for(spark: SparkSession) -> None:
    """A member frozen with its commit's answer on the way hears `ok` after its successor's commits went
    further: the coordinator applied it first (somewhere between request and answer), so it is no
    regression. The same lower commit asked for after the successor's was answered is one."""
    h = HistoryBuilder()
    asked = commit(h, MEMBER_1, {0: 3})  # the frozen member's last commit that was answered at once
    pending = h.event(MEMBER_1, "info", "poll", topic="kchaos")  # stands for the moment it asked again
    commit(h, MEMBER_0, {0: 9})  # its successor, while it was frozen
    late = commit(h, MEMBER_1, {0: 4}, asked_at=pending)  # answered after the thaw, asked before
    assert asked < pending < late
    assert reference_group_anomaly_ids(h.pandas()) == NOTHING
    assert group_anomaly_ids(h.frame(spark)) == NOTHING
    # Asked for after the successor's commit was answered: surely applied after it, so a regression.
    again = commit(h, MEMBER_1, {0: 5}, asked_at=late)
    expected = {**NOTHING, OFFSET_REGRESSION: {regression_id(again)}}
    assert reference_group_anomaly_ids(h.pandas()) == expected
    assert group_anomaly_ids(h.frame(spark)) == expected
