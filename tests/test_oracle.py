"""The guarantee oracle: documented expectations per configuration and faults, and the verdicts."""

from __future__ import annotations

from dataclasses import replace

import pytest

from kchaos.checkers.anomalies.registry import ANOMALIES
from kchaos.checkers.faults import FaultInterval
from kchaos.checkers.results import guarantee_context
from kchaos.checkers.rules.anomaly_names import DUPLICATE, INCONSISTENT_OFFSET, LOST_WRITE, UNSEEN
from kchaos.checkers.rules.oracle import FAILOVER_KINDS, UNCLEAN_ELECTION_KINDS, GuaranteeContext
from kchaos.checkers.rules.rule_table import RULES
from kchaos.checkers.rules.verdicts import Judgement, judge, judge_all, overall_verdict
from kchaos.model.fault_table import KINDS
from tests.docs_text import section

DURABLE = GuaranteeContext(
    acks="all",
    min_insync_replicas=2,
    replication_factor=3,
    unclean_leader_election=False,
    idempotence=True,
    fault_kinds=frozenset({"partition"}),
    max_concurrent_crashed=0,
)
ACKS_1 = replace(DURABLE, acks="1", min_insync_replicas=1)


def test_acks_1_with_a_partition_fault_permits_lost_writes() -> None:
    judgement = judge(LOST_WRITE, 4, ACKS_1)
    assert (judgement.expected, judgement.verdict, judgement.rule_id) == (
        "possible",
        "permitted",
        "acks-1-failover",
    )
    assert "acks" in judgement.source
    assert judge(UNSEEN, 2, ACKS_1).verdict == "permitted"


def test_acks_1_without_faults_promises_no_loss() -> None:
    judgement = judge(LOST_WRITE, 1, replace(ACKS_1, fault_kinds=frozenset()))
    assert (judgement.expected, judgement.verdict) == ("none", "violation")


def test_acks_all_lost_write_with_an_insync_replica_alive_is_a_violation() -> None:
    judgement = judge(LOST_WRITE, 1, DURABLE)
    assert (judgement.expected, judgement.verdict, judgement.rule_id) == (
        "none",
        "violation",
        "committed-not-lost",
    )
    assert "Replicated logs" in judgement.source
    assert judge(LOST_WRITE, 0, DURABLE).verdict == "ok"
    assert judge(UNSEEN, 3, DURABLE).verdict == "violation"
    assert judge(INCONSISTENT_OFFSET, 1, DURABLE).verdict == "violation"


def test_unclean_election_permits_loss_and_duplicates() -> None:
    unclean = replace(DURABLE, unclean_leader_election=True)
    for anomaly in (LOST_WRITE, UNSEEN, INCONSISTENT_OFFSET, DUPLICATE):
        assert judge(anomaly, 1, unclean).verdict == "permitted", anomaly


def test_every_replica_crashed_at_once_lifts_the_durability_promise() -> None:
    crashed = replace(DURABLE, fault_kinds=frozenset({"crash"}), max_concurrent_crashed=3)
    assert judge(LOST_WRITE, 1, crashed).rule_id == "every-replica-crashed"
    assert judge(LOST_WRITE, 1, replace(crashed, max_concurrent_crashed=2)).verdict == "violation"


def test_min_insync_1_with_a_crash_still_promises_no_loss() -> None:
    lone_leader = replace(
        DURABLE, min_insync_replicas=1, fault_kinds=frozenset({"crash"}), max_concurrent_crashed=1
    )
    assert judge(LOST_WRITE, 1, lone_leader).verdict == "violation"


def test_duplicates_follow_idempotence() -> None:
    assert judge(DUPLICATE, 2, replace(DURABLE, idempotence=False)).verdict == "permitted"
    judgement = judge(DUPLICATE, 2, DURABLE)
    assert (judgement.verdict, judgement.rule_id) == ("violation", "idempotent-producer")
    assert "KIP-98" in judgement.source


def test_idempotence_does_not_cover_sends_that_timed_out_in_flight() -> None:
    timed_out = replace(DURABLE, sends_timed_out=5)
    judgement = judge(DUPLICATE, 2, timed_out)
    assert (judgement.verdict, judgement.rule_id) == ("permitted", "idempotent-epoch-bump")
    assert "KIP-360" in judgement.source
    # Timeouts excuse duplicates only: a lost acknowledged write is still a broken promise.
    assert judge(LOST_WRITE, 1, timed_out).verdict == "violation"


def _judgements(**counts: int) -> list[Judgement]:
    return list(judge_all({name.replace("_", "-"): n for name, n in counts.items()}, ACKS_1).values())


@pytest.mark.parametrize(
    ("counts", "expected"),
    [
        ({"lost_write": 0, "duplicate": 0}, "ok"),
        ({"lost_write": 3, "duplicate": 0}, "permitted"),
        ({"lost_write": 3, "duplicate": 1}, "violation"),
        ({"lost_write": 0, "duplicate": 1}, "violation"),
    ],
)
def test_overall_verdict_is_the_worst(counts: dict[str, int], expected: str) -> None:
    assert overall_verdict(_judgements(**counts)) == expected


def test_every_anomaly_has_a_rule_under_every_context() -> None:
    contexts = [
        replace(DURABLE, acks=acks, unclean_leader_election=unclean, idempotence=idem, fault_kinds=kinds)
        for acks in ("all", "1")
        for unclean in (False, True)
        for idem in (False, True)
        for kinds in (frozenset(), frozenset({"crash"}))
    ]
    for ctx in contexts:
        for anomaly in ANOMALIES:
            assert judge(anomaly, 1, ctx).source


def test_unseen_expectation_matches_lost_write() -> None:
    for ctx in (DURABLE, ACKS_1, replace(DURABLE, unclean_leader_election=True)):
        assert judge(UNSEEN, 1, ctx).expected == judge(LOST_WRITE, 1, ctx).expected


def test_every_rule_says_when_it_applies_what_it_promises_and_where_that_is_documented() -> None:
    assert len({rule.id for rule in RULES}) == len(RULES)
    assert all(rule.source and rule.applies_when and rule.statement and rule.anomalies for rule in RULES)


def test_docs_guarantee_rules_table_is_the_rule_table() -> None:
    """docs/rules.md prints the rules in the order they are tried: a reader sees what the checker enforces."""
    rows = [line for line in section("rules.md", "# Guarantee rules").splitlines() if line.startswith("| `")]
    expected = [
        f"| `{rule.id}` | {', '.join(sorted(rule.anomalies))} | {rule.expected} | "
        f"{rule.applies_when} | {rule.source} |"
        for rule in RULES
    ]
    assert rows == expected


def test_the_oracle_reads_its_fault_kinds_from_the_fault_table() -> None:
    """The kinds each rule depends on are the table's: the ones the oracle always had, ZooKeeper's outages
    (a session that expires meanwhile moves leaders, so they count as a failover), a reassignment (a
    moved leader's replica takes its leadership with it), a broker added or drained (likewise), a
    corruption (its node is killed to be damaged), a full disk (its broker halts) and a replaced one (its
    broker is killed). A clock off moves nothing by itself, nor does a voter taken out of the quorum, nor a
    slow disk."""
    assert {
        "crash", "power-loss", "stop", "partition", "pause", "zookeeper", "reassign", "membership", "corrupt",
        "disk-full", "disk-replaced",
    } == FAILOVER_KINDS  # fmt: skip
    assert {"unclean-election"} == UNCLEAN_ELECTION_KINDS
    failover = next(rule for rule in RULES if rule.id == "acks-1-failover")
    assert all(kind in failover.applies_when for kind in FAILOVER_KINDS)
    for kind in KINDS:
        moved = judge(LOST_WRITE, 1, replace(ACKS_1, fault_kinds=frozenset({kind}))).rule_id
        assert (moved == "acks-1-failover") == (kind in FAILOVER_KINDS), kind


def test_a_fault_that_switches_unclean_election_on_lifts_durability() -> None:
    faults = [FaultInterval("unclean-election#1", "unclean-election", "unclean-election", (), None, 0, 0.0)]
    config = {"acks": "all", "min_insync_replicas": 2, "replication_factor": 3,
              "unclean_leader_election": False, "idempotence": True}  # fmt: skip
    ctx = guarantee_context(config, faults)
    assert ctx.unclean_leader_election
    assert judge(LOST_WRITE, 1, ctx).rule_id == "unclean-election"
    assert not guarantee_context(config, []).unclean_leader_election
