"""The oracle under power loss: judged per partition, from the in-sync replicas the run itself recorded.

Synthetic histories shaped as a run records them (nemesis start/stop rows of kind `power-loss`, leader-watch
rows with each partition's ISR) go through the same pure steps `check_run` takes: fault intervals, the
guarantee context, the verdicts. No cluster and no Spark.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from kchaos.checkers.faults import fault_intervals, max_concurrent_crashed
from kchaos.checkers.power_loss import isr_fates
from kchaos.checkers.results import _context_json, guarantee_context
from kchaos.checkers.rules.anomaly_names import (
    INCONSISTENT_OFFSET,
    LOST_WRITE,
    NONMONOTONIC_SEND,
    TRUNCATED_READ,
    UNSEEN,
)
from kchaos.checkers.rules.checkability import run_verdict
from kchaos.checkers.rules.oracle import GuaranteeContext
from kchaos.checkers.rules.verdicts import judge, judge_all, overall_verdict, undecided_anomalies
from kchaos.model.events import LEADER, LEADER_WATCH_PROCESS
from kchaos.model.phase_record import RUN_PHASES, RunPhases
from tests.histories import HistoryBuilder

CONFIG: dict[str, Any] = {
    "acks": "all",
    "min_insync_replicas": 2,
    "replication_factor": 3,
    "unclean_leader_election": False,
    "idempotence": True,
    "partitions": 2,
    "brokers": 3,
}
BROKER_FLUSH = {"log.flush.interval.messages": "1"}


def power_loss(h: HistoryBuilder, nodes: list[int], key: str = "power-loss#1") -> None:
    h.fault("power-loss", key, "start", kind="power-loss", nodes=nodes)
    h.fault("power-loss", key, "stop", kind="power-loss", nodes=nodes)


def context_of(h: HistoryBuilder, **config: Any) -> GuaranteeContext:
    """What `check_run` builds from this history and configuration."""
    faults = fault_intervals(h.rows)
    watched = [row for row in h.rows if row["process"] == LEADER_WATCH_PROCESS and row["f"] == LEADER]
    return guarantee_context({**CONFIG, **config}, faults, 0, watched)


def watched_power_loss(isrs: dict[int, list[int]], nodes: list[int]) -> HistoryBuilder:
    """The leader watcher records each partition's ISR, then the power goes on `nodes`."""
    h = HistoryBuilder()
    for partition, isr in isrs.items():
        h.leader(partition, isr[0], isr)
    power_loss(h, nodes)
    return h


def lost(ctx: GuaranteeContext, by_partition: dict[str, int], anomaly: str = LOST_WRITE) -> Any:
    return judge(anomaly, sum(by_partition.values()), ctx, by_partition=by_partition)


# --- every in-sync replica lost power -----------------------------------------------------------------------


def test_losing_power_on_every_replica_without_sync_permits_the_loss() -> None:
    ctx = context_of(watched_power_loss({0: [1, 2, 3], 1: [2, 3, 1]}, [1, 2, 3]))
    assert ctx.isr_fates == {"0": "lost-power", "1": "lost-power"}
    judgement = lost(ctx, {"0": 4, "1": 1})
    assert (judgement.verdict, judgement.rule_id) == ("permitted", "power-loss-took-isr")
    assert "Design > Persistence" in judgement.source and "log.flush.interval.ms" in judgement.source
    assert judgement.to_json()["partitions"] == {
        "0": {"count": 4, "verdict": "permitted", "rule_id": "power-loss-took-isr"},
        "1": {"count": 1, "verdict": "permitted", "rule_id": "power-loss-took-isr"},
    }
    assert lost(ctx, {"1": 2}, UNSEEN).verdict == "permitted"
    # Anomalies not counted per partition are judged for the run: every partition fared alike here.
    assert judge(TRUNCATED_READ, 1, ctx).verdict == "permitted"
    assert judge(INCONSISTENT_OFFSET, 1, ctx).rule_id == "power-loss-took-isr"


def test_the_power_loss_rule_is_cited_before_every_replica_crashed() -> None:
    ctx = context_of(watched_power_loss({0: [1, 2, 3]}, [1, 2, 3]))
    crashed_too = replace(ctx, fault_kinds=ctx.fault_kinds | {"crash"}, max_concurrent_crashed=3)
    assert lost(crashed_too, {"0": 1}).rule_id == "power-loss-took-isr"


def test_a_power_loss_alone_does_not_count_as_crashed_nodes() -> None:
    """Counted run-wide, three of five nodes losing power would let `every-replica-crashed` excuse a
    partition whose in-sync replicas all kept power."""
    h = watched_power_loss({0: [1, 2, 3], 1: [3, 4, 5]}, [1, 2, 3])
    ctx = context_of(h, brokers=5)
    assert max_concurrent_crashed(fault_intervals(h.rows)) == 0
    assert ctx.isr_fates == {"0": "lost-power", "1": "kept-power"}
    judgement = lost(ctx, {"1": 2})
    assert (judgement.verdict, judgement.rule_id) == ("violation", "committed-not-lost")


# --- synced appends -----------------------------------------------------------------------------------------


def test_syncing_every_append_on_the_brokers_makes_the_loss_a_violation() -> None:
    ctx = context_of(watched_power_loss({0: [1, 2, 3]}, [1, 2, 3]), broker_config=BROKER_FLUSH)
    assert ctx.synced_every_append
    judgement = lost(ctx, {"0": 3})
    assert (judgement.verdict, judgement.rule_id) == ("violation", "synced-appends-survive")
    assert "log.flush.interval.messages" in judgement.source and "Design > Persistence" in judgement.source
    # Every replica crashed at once would excuse an unsynced loss; a synced one it cannot.
    crashed = replace(ctx, fault_kinds=ctx.fault_kinds | {"crash"}, max_concurrent_crashed=3)
    assert lost(crashed, {"0": 3}).verdict == "violation"
    assert judge(TRUNCATED_READ, 1, crashed).verdict == "violation"


def test_syncing_every_append_of_the_topic_makes_the_loss_a_violation() -> None:
    ctx = context_of(watched_power_loss({0: [1, 2, 3]}, [1, 2, 3]), topic_config={"flush.messages": "1"})
    judgement = lost(ctx, {"0": 3})
    assert (judgement.verdict, judgement.rule_id) == ("violation", "synced-appends-survive")
    assert "`flush.messages`" in judgement.source


def test_the_topics_flush_setting_overrides_the_brokers() -> None:
    h = watched_power_loss({0: [1, 2, 3]}, [1, 2, 3])
    ctx = context_of(h, broker_config=BROKER_FLUSH, topic_config={"flush.messages": "10000"})
    assert not ctx.synced_every_append
    assert lost(ctx, {"0": 3}).verdict == "permitted"


def test_synced_appends_leave_reordered_sends_to_the_producer_rules() -> None:
    ctx = context_of(watched_power_loss({0: [1, 2, 3]}, [1, 2, 3]), broker_config=BROKER_FLUSH)
    assert judge(NONMONOTONIC_SEND, 1, replace(ctx, idempotence=False)).rule_id == "retries-reorder"
    assert judge(NONMONOTONIC_SEND, 1, ctx).verdict == "violation"


# --- an in-sync replica kept power --------------------------------------------------------------------------


def test_the_leader_alone_losing_power_with_a_full_isr_is_a_violation() -> None:
    ctx = context_of(watched_power_loss({0: [1, 2, 3]}, [1]))
    judgement = lost(ctx, {"0": 2})
    assert (judgement.verdict, judgement.rule_id) == ("violation", "committed-not-lost")
    assert judge(TRUNCATED_READ, 1, replace(ctx, isr_fates={"0": "kept-power"})).verdict == "violation"


def test_the_leader_alone_losing_power_after_the_isr_shrank_to_it_permits_the_loss() -> None:
    h = HistoryBuilder()
    h.leader(0, 1, [1, 2, 3])
    h.leader(0, 1, [1])  # the followers fell behind
    power_loss(h, [1])
    judgement = lost(context_of(h, partitions=1), {"0": 2})
    assert (judgement.verdict, judgement.rule_id) == ("permitted", "power-loss-took-isr")


# --- Eligible Leader Replicas (KIP-966) ---------------------------------------------------------------------


def test_an_eligible_leader_replica_that_kept_power_makes_the_loss_a_violation() -> None:
    """ISR shrunk to the leader below min.insync.replicas: the followers went to the ELR holding every
    committed record, and the release elects one when the leader is gone; its power loss excuses nothing."""
    h = HistoryBuilder()
    h.leader(0, 1, [1, 2, 3])
    h.leader(0, 1, [1], elr=[2, 3])
    power_loss(h, [1])
    ctx = context_of(h, partitions=1)
    assert ctx.isr_fates == {"0": "kept-power"}
    judgement = lost(ctx, {"0": 2})
    assert (judgement.verdict, judgement.rule_id) == ("violation", "committed-not-lost")
    assert "Eligible Leader Replicas" in judgement.rule and "KIP-966" in judgement.source


def test_a_power_loss_of_the_isr_and_every_eligible_leader_replica_permits_the_loss() -> None:
    h = HistoryBuilder()
    h.leader(0, 1, [1], elr=[2])
    power_loss(h, [1, 2])
    assert context_of(h, partitions=1).isr_fates == {"0": "lost-power"}


def test_a_row_without_the_elr_is_judged_only_when_every_replica_lost_power() -> None:
    """A watcher that did not record the ELR cannot say whether a replica outside the ISR that kept power
    was eligible: that loss is unjudged. Power lost on every replica needs no ELR to judge."""
    for lost_on, fate in (([1], "unknown"), ([1, 2, 3], "lost-power")):
        h = HistoryBuilder()
        h.leader(0, 1, [1], elr=None)
        power_loss(h, lost_on)
        assert context_of(h, partitions=1).isr_fates == {"0": fate}, lost_on
    h = HistoryBuilder()
    h.leader(0, 1, [1], elr=None, replicas=None)
    power_loss(h, [1, 2, 3])
    assert context_of(h, partitions=1).isr_fates == {"0": "unknown"}
    h = HistoryBuilder()
    h.leader(0, 1, [1, 2], elr=None, replicas=None)
    power_loss(h, [1])
    assert context_of(h, partitions=1).isr_fates == {"0": "kept-power"}  # an ISR member kept power


def test_an_isr_recorded_after_the_power_went_does_not_count() -> None:
    h = HistoryBuilder()
    h.leader(0, 1, [1, 2, 3])
    h.fault("power-loss", "power-loss#1", "start", kind="power-loss", nodes=[1])
    h.leader(0, 1, [1])  # recorded once the power was already gone: too late to say what it took
    h.fault("power-loss", "power-loss#1", "stop", kind="power-loss", nodes=[1])
    assert context_of(h, partitions=1).isr_fates == {"0": "kept-power"}


def test_each_partition_is_judged_by_its_own_isr() -> None:
    ctx = context_of(watched_power_loss({0: [1], 1: [1, 2, 3]}, [1]))
    assert ctx.isr_fates == {"0": "lost-power", "1": "kept-power"}
    assert lost(ctx, {"0": 3}).verdict == "permitted"
    assert lost(ctx, {"1": 1}).verdict == "violation"
    both = lost(ctx, {"0": 3, "1": 1})
    assert (both.verdict, both.rule_id) == ("violation", "committed-not-lost")
    assert {key: part.verdict for key, part in (both.partitions or {}).items()} == {
        "0": "permitted",
        "1": "violation",
    }


def test_an_anomaly_not_counted_per_partition_is_unjudged_when_partitions_fared_differently() -> None:
    ctx = context_of(watched_power_loss({0: [1], 1: [1, 2, 3]}, [1]))
    judgement = judge(TRUNCATED_READ, 1, ctx)
    assert (judgement.verdict, judgement.expected, judgement.rule_id) == (
        "unchecked",
        "unknown",
        "power-loss-isr-unknown",
    )
    assert "partition 0 but not of partition 1" in str(judgement.unchecked_reason)
    assert judge(TRUNCATED_READ, 0, ctx).verdict == "ok"


def test_a_crash_alongside_the_power_loss_counts_towards_every_replica_down() -> None:
    h = HistoryBuilder()
    h.leader(0, 1, [1, 2, 3])
    h.fault("kill", "kill#1", "start", kind="crash", nodes=[2, 3])
    power_loss(h, [1])
    h.fault("kill", "kill#1", "stop", kind="crash", nodes=[2, 3])
    assert context_of(h, partitions=1).isr_fates == {"0": "lost-power"}


def test_a_crash_alone_is_not_a_power_loss() -> None:
    """ISR {2, 3} down by crash while node 1, out of the ISR, lost power: nothing in sync lost power."""
    h = HistoryBuilder()
    h.leader(0, 2, [2, 3])
    h.fault("kill", "kill#1", "start", kind="crash", nodes=[2, 3])
    power_loss(h, [1])
    assert context_of(h, partitions=1).isr_fates == {"0": "kept-power"}


# --- the ISR was not recorded -------------------------------------------------------------------------------


def test_a_partition_whose_isr_was_never_recorded_is_unjudged_with_the_reason() -> None:
    ctx = context_of(watched_power_loss({0: [1, 2, 3]}, [1, 2, 3]))  # partition 1 never watched
    assert ctx.isr_fates == {"0": "lost-power", "1": "unknown"}
    judgement = lost(ctx, {"1": 2})
    assert (judgement.count, judgement.verdict, judgement.rule_id) == (
        2,
        "unchecked",
        "power-loss-isr-unknown",
    )
    assert judgement.checked and judgement.undecided
    assert "partition 1" in str(judgement.unchecked_reason) and "leader watcher" in str(
        judgement.unchecked_reason
    )
    shown = judgement.to_json()
    assert (shown["checked"], shown["count"], shown["unchecked_reason"]) == (
        True,
        2,
        judgement.unchecked_reason,
    )
    # A permitted loss elsewhere does not vouch for it; a violation elsewhere still fails the run.
    assert lost(ctx, {"0": 1, "1": 2}).verdict == "unchecked"
    kept = replace(ctx, isr_fates={"0": "kept-power", "1": "unknown"})
    assert lost(kept, {"0": 1, "1": 2}).verdict == "violation"


def test_an_unjudged_loss_keeps_the_run_from_passing() -> None:
    ctx = context_of(watched_power_loss({0: [1, 2, 3]}, [1, 2, 3]))
    judgements = judge_all({LOST_WRITE: 2, UNSEEN: 0}, ctx, by_partition={LOST_WRITE: {"1": 2}, UNSEEN: {}})
    assert overall_verdict(judgements.values()) == "unchecked"
    why = undecided_anomalies(judgements.values())
    assert why is not None and why.startswith("lost-write: in partition 1")
    complete = RunPhases(recorded=True, completed=RUN_PHASES)
    verdict, reason = run_verdict("unchecked", complete, "faults: 1 of 1 applied", False, why)
    assert verdict == "unchecked" and why in str(reason)
    assert run_verdict("ok", complete, "faults: 1 of 1 applied", False, None) == ("ok", None)


def test_an_isr_recorded_empty_is_not_known() -> None:
    h = HistoryBuilder()
    h.leader(0, -1, [])
    power_loss(h, [1, 2, 3])
    assert context_of(h, partitions=1).isr_fates == {"0": "unknown"}


def test_reordered_sends_without_idempotence_need_no_isr() -> None:
    assert context_of(HistoryBuilder()).isr_fates == {}  # no power loss: nothing to know
    h = HistoryBuilder()
    power_loss(h, [1])
    unwatched = context_of(h, idempotence=False)
    assert judge(NONMONOTONIC_SEND, 1, unwatched).rule_id == "retries-reorder"
    assert judge(NONMONOTONIC_SEND, 1, replace(unwatched, idempotence=True)).verdict == "unchecked"


# --- runs from before ---------------------------------------------------------------------------------------


def test_a_config_without_flush_or_topic_settings_is_judged_as_before() -> None:
    h = HistoryBuilder()
    h.leader(0, 1, [1, 2, 3])
    h.fault("kill", "kill#1", "start", kind="crash", nodes=[1, 2, 3])
    h.fault("kill", "kill#1", "stop", kind="crash", nodes=[1, 2, 3])
    old = {key: CONFIG[key] for key in ("acks", "min_insync_replicas", "replication_factor",
                                        "unclean_leader_election", "idempotence")}  # fmt: skip
    faults = fault_intervals(h.rows)
    ctx = guarantee_context(old, faults)
    assert (ctx.synced_every_append, dict(ctx.isr_fates), ctx.max_concurrent_crashed) == (False, {}, 3)
    split = lost(ctx, {"0": 2})
    assert split == judge(LOST_WRITE, 2, ctx)  # no power loss: no per-partition judging
    assert (split.rule_id, split.verdict, split.partitions) == ("every-replica-crashed", "permitted", None)
    assert "partitions" not in split.to_json()
    one_down = guarantee_context(old, [replace(faults[0], nodes=(1,))])
    assert lost(one_down, {"0": 2}).verdict == "violation"


def test_the_results_context_shows_the_new_facts() -> None:
    ctx = context_of(watched_power_loss({0: [1], 1: [1, 2, 3]}, [1]), broker_config={"num.io.threads": "4"})
    shown = _context_json(ctx)
    assert shown["synced_every_append"] is False
    assert shown["isr_at_power_loss"] == {"0": "lost-power", "1": "kept-power"}
    assert _context_json(guarantee_context(CONFIG, []))["isr_at_power_loss"] == {}


def test_partitions_the_watcher_saw_are_judged_even_beyond_the_configured_count() -> None:
    h = watched_power_loss({0: [1], 5: [1, 2]}, [1])
    faults = fault_intervals(h.rows)
    watched = [row for row in h.rows if row["process"] == LEADER_WATCH_PROCESS]
    assert isr_fates(faults, watched, ["0", "1"]) == {"0": "lost-power", "1": "unknown", "5": "kept-power"}
