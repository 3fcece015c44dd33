"""What the oracle expects of a consumer group: redelivery always allowed, loss and offsets going back
only where the log itself can lose committed records, and an unknown where the run cannot tell."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given
from hypothesis import strategies as st

from kchaos.checkers.rules.anomaly_names import (
    EOS_DUPLICATE,
    EOS_LOST,
    GROUP_ANOMALY_NAMES,
    GROUP_DUPLICATE,
    GROUP_LOST,
    LOST_COMMITTED,
    LOST_WRITE,
    OFFSET_REGRESSION,
)
from kchaos.checkers.rules.oracle import GuaranteeContext
from kchaos.checkers.rules.verdicts import judge
from tests.test_oracle import ACKS_1, DURABLE

contexts = st.builds(
    GuaranteeContext,
    acks=st.sampled_from(["all", "1"]),
    min_insync_replicas=st.integers(1, 3),
    replication_factor=st.integers(1, 5),
    unclean_leader_election=st.booleans(),
    idempotence=st.booleans(),
    fault_kinds=st.frozensets(st.sampled_from(["crash", "stop", "partition", "pause", "power-loss"])),
    max_concurrent_crashed=st.integers(0, 5),
    synced_every_append=st.booleans(),
    isr_fates=st.dictionaries(
        st.sampled_from(["0", "1"]), st.sampled_from(["lost-power", "kept-power", "unknown"])
    ),
)


@given(contexts)
def test_redelivery_is_always_permitted(ctx: GuaranteeContext) -> None:
    judgement = judge(GROUP_DUPLICATE, 3, ctx)
    assert (judgement.verdict, judgement.rule_id) == ("permitted", "group-redelivery")
    assert "#semantics" in judgement.source


@given(contexts)
def test_a_group_loses_records_only_where_the_log_loses_writes(ctx: GuaranteeContext) -> None:
    """`group-lost` follows `lost-write`'s rules to their last: a record the log lost before any member got
    to it is one; with the record in the log, a group that skipped it broke at-least-once delivery."""
    group, log = judge(GROUP_LOST, 1, ctx), judge(LOST_WRITE, 1, ctx)
    assert group.expected == log.expected
    if log.rule_id == "committed-not-lost":
        assert (group.verdict, group.rule_id) == ("violation", "group-receives-below-commit")


def test_offsets_go_back_only_where_committed_records_can_be_truncated() -> None:
    assert (judge(OFFSET_REGRESSION, 1, DURABLE).verdict, judge(OFFSET_REGRESSION, 1, DURABLE).rule_id) == (
        "violation",
        "group-generation-fencing",
    )
    assert judge(OFFSET_REGRESSION, 1, ACKS_1).verdict == "violation"  # consumers commit only what they read
    for ctx in (replace(DURABLE, unclean_leader_election=True), replace(DURABLE, max_concurrent_crashed=3)):
        judgement = judge(OFFSET_REGRESSION, 1, ctx)
        assert (judgement.verdict, judgement.rule_id) == ("permitted", "group-offsets-truncated")


def test_after_a_power_loss_a_regression_is_judged_only_where_the_partition_lost_its_isr() -> None:
    """The group's commits live in __consumer_offsets, whose in-sync replicas kchaos does not record: a
    regression after a power loss is unjudged unless the partition's own ISR lost power, which explains
    it."""
    power = replace(
        DURABLE, fault_kinds=frozenset({"power-loss"}), isr_fates={"0": "lost-power", "1": "kept-power"}
    )
    judgement = judge(OFFSET_REGRESSION, 3, power, by_partition={"0": 1, "1": 2})
    assert judgement.verdict == "unchecked"
    assert judgement.partitions is not None
    assert {key: (part.verdict, part.rule_id) for key, part in judgement.partitions.items()} == {
        "0": ("permitted", "group-offsets-truncated"),
        "1": ("unchecked", "group-offsets-power-loss"),
    }
    assert judge(OFFSET_REGRESSION, 0, power).verdict == "ok"


def test_every_group_anomaly_has_a_rule_with_a_source() -> None:
    for ctx in (DURABLE, ACKS_1, replace(DURABLE, unclean_leader_election=True)):
        for name in GROUP_ANOMALY_NAMES:
            assert judge(name, 1, ctx).source


@given(contexts)
def test_processed_output_is_lost_only_where_committed_transactions_can_be(ctx: GuaranteeContext) -> None:
    """`eos-lost` follows `lost-committed`'s rules: output a committed transaction wrote is lost only where
    the log loses committed records; otherwise the group's offsets moved past an input whose output was
    never committed, which exactly-once processing forbids."""
    eos, committed = judge(EOS_LOST, 1, ctx), judge(LOST_COMMITTED, 1, ctx)
    assert eos.expected == committed.expected
    if committed.rule_id == "committed-transaction-not-lost":
        assert (eos.verdict, eos.rule_id) == ("violation", "exactly-once-processing")
        assert "KIP-447" in eos.source


def test_processed_output_is_committed_twice_only_where_the_group_commits_can_go_back() -> None:
    """`eos-duplicate` is judged as `offset-regression` is where the group's commits themselves can be
    truncated, and is a violation of exactly-once processing everywhere else, acks=1 included (an eos
    processor's producer is idempotent whatever the run's plain producers use)."""
    for ctx in (DURABLE, ACKS_1):
        judgement = judge(EOS_DUPLICATE, 1, ctx)
        assert (judgement.verdict, judgement.rule_id) == ("violation", "exactly-once-processing")
    for ctx in (replace(DURABLE, unclean_leader_election=True), replace(DURABLE, max_concurrent_crashed=3)):
        judgement = judge(EOS_DUPLICATE, 1, ctx)
        assert (judgement.verdict, judgement.rule_id) == ("permitted", "group-offsets-truncated")
    power = replace(DURABLE, fault_kinds=frozenset({"power-loss"}), isr_fates={"0": "kept-power"})
    assert judge(EOS_DUPLICATE, 1, power).verdict == "unchecked"
