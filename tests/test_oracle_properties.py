"""Properties of the oracle: how `judge` and `judge_all` decide, over generated guarantee contexts.

Apart from the checker properties (`tests.test_properties`) since they need no history and no Spark.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from kchaos.checkers.rules.anomaly_names import ANOMALY_NAMES, NONMONOTONIC_SEND, REPLICA_DIVERGENCE
from kchaos.checkers.rules.oracle import COMMITTED_LOSS_ANOMALIES, READ_ANOMALIES, GuaranteeContext
from kchaos.checkers.rules.rule_table import RULES
from kchaos.checkers.rules.verdicts import judge, judge_all, overall_verdict

contexts = st.builds(
    GuaranteeContext,
    acks=st.sampled_from(["all", "1"]),
    min_insync_replicas=st.integers(1, 3),
    replication_factor=st.integers(1, 5),
    unclean_leader_election=st.booleans(),
    idempotence=st.booleans(),
    fault_kinds=st.frozensets(
        st.sampled_from(["crash", "stop", "partition", "pause", "degrade", "reconfigure"])
    ),
    max_concurrent_crashed=st.integers(0, 5),
    sends_timed_out=st.integers(0, 3),
)


def committed_records_can_be_truncated(ctx: GuaranteeContext) -> bool:
    return ctx.unclean_leader_election or ctx.max_concurrent_crashed >= ctx.replication_factor


@given(contexts)
def test_readers_can_only_go_wrong_when_committed_records_are_truncated(ctx: GuaranteeContext) -> None:
    for anomaly in READ_ANOMALIES:
        judgement = judge(anomaly, 1, ctx)
        assert (judgement.expected == "possible") == committed_records_can_be_truncated(ctx), anomaly
        assert judgement.verdict == ("permitted" if committed_records_can_be_truncated(ctx) else "violation")


@given(contexts)
def test_sends_reorder_only_without_idempotence_or_after_truncation(ctx: GuaranteeContext) -> None:
    acks_1_failover = ctx.acks == "1" and bool(ctx.fault_kinds & {"crash", "stop", "partition", "pause"})
    possible = committed_records_can_be_truncated(ctx) or acks_1_failover or not ctx.idempotence
    assert (judge(NONMONOTONIC_SEND, 2, ctx).expected == "possible") == possible


@given(contexts, st.integers(0, 5))
def test_replica_divergence_is_never_expected(ctx: GuaranteeContext, count: int) -> None:
    judgement = judge(REPLICA_DIVERGENCE, count, ctx)
    assert (judgement.expected, judgement.rule_id) == ("none", "replicas-converge")
    assert judgement.verdict == ("ok" if count == 0 else "violation")


@given(contexts, st.dictionaries(st.sampled_from(ANOMALY_NAMES), st.one_of(st.none(), st.integers(0, 3))))
def test_unchecked_anomalies_never_decide_the_verdict(
    ctx: GuaranteeContext, counts: dict[str, int | None]
) -> None:
    judgements = judge_all(counts, ctx)
    checked = [j for j in judgements.values() if j.checked]
    assert overall_verdict(judgements.values()) == overall_verdict(checked)
    for name, count in counts.items():
        assert (judgements[name].verdict == "unchecked") == (count is None)
        assert judgements[name].to_json()["checked"] == (count is not None)


@given(contexts)
def test_the_deciding_rule_is_the_first_that_applies(ctx: GuaranteeContext) -> None:
    for anomaly in ANOMALY_NAMES:
        decided = judge(anomaly, 1, ctx).rule_id
        first = next(rule for rule in RULES if anomaly in rule.anomalies and rule.applies(ctx))
        assert decided == first.id
        if anomaly in COMMITTED_LOSS_ANOMALIES and committed_records_can_be_truncated(ctx):
            assert judge(anomaly, 1, ctx).expected == "possible"
