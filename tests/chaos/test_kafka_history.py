"""Losses Kafka's history fixed, provoked on the releases that had them and passed on the releases that
fixed them, with the same named scenario.

KIP-101 (leader epochs, 0.11): before it, a replica told to follow a new leader truncated its log to its
own high watermark, which lags the leader's by a fetch round; elected before it fetched those records
back, it lost writes every in-sync replica had acknowledged. The documentation promised then what it
promises now, so on 0.10.2 that loss is a `violation`, and the report names the KIP that fixed it; on
0.11 and on today's release the same sequence loses nothing.

KIP-279 (2.0): after two fast unclean elections a follower asked its leader where an epoch the leader
never had ended, and before 2.0 kept records the leader had replaced. On 0.11 its fetcher then dies on
the leader's batches and it never rejoins; today the replicas agree.

0.10.2 and 0.11 run in ZooKeeper mode (they have no other), today's release in KRaft mode. For KIP-101 CI runs
the high-watermark truncation on 0.10.2.2; the tests marked `nightly` (the same sequence on 0.11 and today's
release, the divergence scenario and KIP-279 on both sides of its fix) run in the nightly workflow.
Producers are idempotent where the release has them (from 0.11), as Kafka's producer defaults to today.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import pytest

from kchaos.model.releases import DEFAULT_KAFKA_VERSION
from kchaos.model.run_files import RunDir
from kchaos.runner.outcome import RunOutcome
from kchaos.runner.pytest_plugin import ChaosRun
from tests.chaos.promises import assert_promise_kept
from tests.cluster.conftest import scenario_observed
from tests.test_explain import section, told

pytestmark = pytest.mark.cluster

#: The last release before leader epochs, and the first with them.
BEFORE_KIP_101 = "0.10.2.2"
WITH_KIP_101 = "0.11.0.3"


def assert_sequence_ran(outcome: RunOutcome) -> dict[str, Any]:
    """Every step of the scenario happened: the second replica led, then the last one, still in sync."""
    seen = scenario_observed(outcome)
    print(f"observed: {seen}")
    assert seen["second_led_after_s"] is not None, seen
    assert seen["last_led_after_s"] is not None, f"the truncated replica was never elected: {seen}"
    return seen


@pytest.mark.chaos(kafka_version=BEFORE_KIP_101)
def test_before_leader_epochs_a_follower_truncated_to_its_high_watermark_loses_committed_writes(
    chaos_run: ChaosRun,
) -> None:
    """0.10.2: the follower truncates to its high watermark when it is told to follow the new leader, and
    is elected before it fetches the truncated, acknowledged records back. A violation of the promise
    that a committed message survives while an in-sync replica lives, named as KIP-101's."""
    outcome = chaos_run(scenario="kip-101-hw-truncation")

    seen = assert_sequence_ran(outcome)
    lost = outcome.results["anomalies"]["lost-write"]
    print(f"lost {lost['count']} acknowledged writes")
    assert lost["count"] > 0, outcome.describe()
    assert (lost["verdict"], lost["rule_id"]) == ("violation", "committed-not-lost"), lost
    assert lost["known_fix"].startswith("KIP-101, fixed in 0.11.0"), lost
    assert {example["partition"] for example in lost["examples"]} == {seen["partition"]}, lost
    assert outcome.verdict == "violation"
    assert_explain_tells_the_loss(outcome, lost["examples"][0])


def assert_explain_tells_the_loss(outcome: RunOutcome, example: dict[str, Any]) -> None:
    """`kchaos explain` of the run tells how the record was lost: acknowledged at its offset, then a
    follower's log truncated below it and that follower elected, in the brokers' own lines (0.10's
    `Truncating log kchaos-2 to offset 28.` and the controller's `Selected new leader and ISR`)."""
    lines = told(str(outcome.run_dir), "--max-examples", "1")
    print("\n".join(lines))
    name, offset = f"{example['topic']}-{example['partition']}", example["offset"]
    assert lines[0] == f"{example['value']} (lost-write)", lines[:3]
    assert f"acknowledged at {name} offset {offset}" in lines[2], lines[:3]
    timeline = section(lines, "what the cluster did")
    cut = next(n for n, line in enumerate(timeline) if line.endswith(f", cutting off offset {offset}"))
    assert any("elected leader" in line for line in timeline[cut + 1 :]), timeline
    logs = "\n".join(section(lines, f"the brokers' logs about {name}"))
    assert f"Truncating log {name} to offset " in logs, logs
    assert "Selected new leader and ISR" in logs, logs


@pytest.mark.parametrize(
    "release",
    [
        pytest.param({"kafka_version": WITH_KIP_101}, id=WITH_KIP_101, marks=pytest.mark.nightly),
        # Nightly too (57 s of CI): CI keeps KIP-101's loss on 0.10.2.2 above, the scenario's sequence
        # driven by state, and today's release losing nothing to a killed leader in test_default_run.py.
        pytest.param(
            {"kafka_version": DEFAULT_KAFKA_VERSION}, id=DEFAULT_KAFKA_VERSION, marks=pytest.mark.nightly
        ),
    ],
)
def test_with_leader_epochs_the_same_sequence_loses_nothing(
    chaos_run: ChaosRun, release: dict[str, str]
) -> None:
    """0.11 and today: the follower asks its new leader where its epoch ends instead of truncating to its
    high watermark, so when it is elected it still has every acknowledged write."""
    outcome = chaos_run(scenario="kip-101-hw-truncation", **release)

    assert_sequence_ran(outcome)
    assert outcome.results["summary"]["sends_acknowledged"] > 100
    for anomaly in ("lost-write", "unseen", "inconsistent-offset", "replica-divergence"):
        assert outcome.count(anomaly) == 0, outcome.describe()
    assert_promise_kept(outcome)


@pytest.mark.nightly  # CI's proof of KIP-101 on 0.10 is the high-watermark truncation test above
@pytest.mark.chaos(kafka_version=BEFORE_KIP_101)
def test_before_leader_epochs_an_old_leader_back_after_an_unclean_election_keeps_diverging_records(
    chaos_run: ChaosRun,
) -> None:
    """0.10.2, unclean election on: the follower elected uncleanly writes where the old leader had other
    records, and the old leader, back as its follower, truncates only to its own high watermark. Losing
    those records is permitted (unclean election); replicas left holding different records at one offset
    break the promise that replicas converge, named as KIP-101's."""
    outcome = chaos_run(scenario="kip-101-divergence")

    seen = scenario_observed(outcome)
    print(f"observed: {seen}")
    assert seen["unclean_elected_after_s"] is not None and seen["old_leader_back_after_s"] is not None, seen
    diverged = outcome.results["anomalies"]["replica-divergence"]
    print(f"replica-divergence: {diverged['count']}")
    assert diverged["count"], outcome.describe()
    assert (diverged["verdict"], diverged["rule_id"]) == ("violation", "replicas-converge"), diverged
    assert "KIP-101, fixed in 0.11.0" in diverged["known_fix"], diverged
    assert outcome.verdict_of("lost-write") in ("ok", "permitted")


@pytest.mark.nightly  # today's release converging after an unclean election: test_replication_guarantees
def test_with_leader_epochs_replicas_agree_after_the_same_unclean_election(chaos_run: ChaosRun) -> None:
    """Today's release, same sequence: the old leader truncates to where the new leader's epoch began, so
    what the unclean election lost is lost everywhere alike, and the replicas agree."""
    outcome = chaos_run(scenario="kip-101-divergence")

    seen = scenario_observed(outcome)
    print(f"observed: {seen}")
    assert seen["unclean_elected_after_s"] is not None and seen["old_leader_back_after_s"] is not None, seen
    judged = outcome.results["anomalies"]["replica-divergence"]
    assert (judged["checked"], judged["count"]) == (True, 0), outcome.describe()
    assert outcome.verdict in ("ok", "permitted"), outcome.describe()


def assert_fast_failover_ran(outcome: RunOutcome, rejoined: bool = True) -> dict[str, Any]:
    """Both unclean elections happened, the second leader wrote in between, and (where the release lets
    it) the follower came back into the ISR."""
    seen = scenario_observed(outcome)
    print(f"observed: {seen}")
    for step in ("second_led_after_s", "second_wrote_after_s", "first_led_again_after_s"):
        assert seen[step] is not None, f"{step}: {seen}"
    assert (seen["second_back_after_s"] is not None) == rejoined, seen
    # The second leader's writes lie at offsets the first had filled with other records.
    assert seen["second_acknowledged_to"] < seen["first_acknowledged_to"], seen
    return seen


def diverged_offsets(outcome: RunOutcome, partition: int, a: int, b: int) -> list[int]:
    """Offsets at which replicas `a` and `b` of the partition hold different records, in their dumps."""
    dumped = pd.read_parquet(RunDir(outcome.run_dir).replicas / "replicas.parquet")
    mine = dumped[dumped["partition"] == partition].set_index(["offset", "broker"])["value"].unstack()
    both = mine[[a, b]].dropna()
    return [int(offset) for offset in both.index[both[a] != both[b]]]


@pytest.mark.nightly  # CI's proof of the ZooKeeper era is KIP-101's high-watermark truncation on 0.10 above
@pytest.mark.chaos(kafka_version=WITH_KIP_101, recovery_timeout=15.0)
def test_with_leader_epochs_but_before_kip_279_a_fast_double_failover_leaves_a_follower_diverged_for_good(
    chaos_run: ChaosRun,
) -> None:
    """0.11: leader epochs, but a leader asked about an epoch it never had answers with where its next own
    epoch began. After two fast unclean elections the follower keeps the records it wrote in the epoch its
    leader missed, at offsets where the leader holds others, and its fetcher dies on the leader's batches
    (`Out of order offsets`): it never rejoins. kchaos says so: the run stops at recovery naming the
    partition's ISR, and the divergence that needs a recovered cluster to judge is `unchecked`, not `ok`;
    the dumps show it."""
    outcome = chaos_run(scenario="kip-279-fast-failover")

    seen = assert_fast_failover_ran(outcome, rejoined=False)
    partition, first, second = seen["partition"], seen["first"], seen["second"]
    phases = outcome.results["phases"]
    assert phases["missing"] == ["recovery"], phases
    assert f"{partition} ISR [{first}] of" in phases["stop_reason"], phases
    assert "needs the recovery phase" in outcome.unchecked()["replica-divergence"]["unchecked_reason"]
    assert outcome.verdict in ("permitted", "unchecked"), outcome.describe()
    follower_log = (RunDir(outcome.run_dir).logs / f"kafka-{second}.log").read_text(errors="replace")
    assert "Out of order offsets" in follower_log
    diverged = diverged_offsets(outcome, partition, first, second)
    print(f"offsets where nodes {first} and {second} hold different records: {len(diverged)}")
    # Within what `first` acknowledged alone: `second`'s records of the epoch `first` missed.
    assert diverged and max(diverged) < seen["first_acknowledged_to"], diverged[-5:]


@pytest.mark.nightly  # with the 0.11 test above: the nightly runs KIP-279 on both sides of its fix
def test_after_kip_279_replicas_agree_after_the_same_fast_double_failover(chaos_run: ChaosRun) -> None:
    """Today's release, same sequence: the leader answers with the largest epoch both replicas know, the
    follower truncates its records of the missed epoch, rejoins, and the replicas agree."""
    outcome = chaos_run(scenario="kip-279-fast-failover")

    assert_fast_failover_ran(outcome)
    judged = outcome.results["anomalies"]["replica-divergence"]
    assert (judged["checked"], judged["count"]) == (True, 0), outcome.describe()
    assert outcome.verdict in ("ok", "permitted"), outcome.describe()
