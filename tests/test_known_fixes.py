"""A violation on a release from before the fix of its promise names that fix; later releases' do not."""

from __future__ import annotations

from kchaos.checkers.rules.known_fixes import known_fix
from kchaos.checkers.rules.oracle import GuaranteeContext
from kchaos.checkers.rules.verdicts import judge

DURABLE = {
    "acks": "all", "min_insync_replicas": 2, "replication_factor": 3, "unclean_leader_election": False,
    "idempotence": False, "fault_kinds": frozenset({"crash", "partition"}), "max_concurrent_crashed": 1,
}  # fmt: skip


def test_kip_101_is_named_for_releases_before_0_11_only() -> None:
    assert (known_fix("committed-not-lost", "0.10.2.2") or "").startswith("KIP-101, fixed in 0.11.0")
    assert known_fix("committed-not-lost", "0.11.0.3") is None
    assert known_fix("committed-not-lost", None) is None
    assert known_fix("acks-1-failover", "0.10.2.2") is None


def test_kip_279_is_named_for_divergence_before_2_0() -> None:
    assert "KIP-279" in (known_fix("replicas-converge", "0.11.0.3") or "")
    both = known_fix("replicas-converge", "0.10.2.2") or ""
    assert "KIP-101" in both and "KIP-279" in both
    assert known_fix("replicas-converge", "2.0.0") is None


def test_a_lost_write_on_0_10_is_a_violation_naming_kip_101() -> None:
    judged = judge("lost-write", 2, GuaranteeContext(**DURABLE, kafka_version="0.10.2.2"))
    assert (judged.verdict, judged.rule_id) == ("violation", "committed-not-lost")
    assert judged.to_json()["known_fix"].startswith("KIP-101")


def test_a_verdict_that_is_no_violation_names_no_fix() -> None:
    assert (
        "known_fix"
        not in judge("lost-write", 0, GuaranteeContext(**DURABLE, kafka_version="0.10.2.2")).to_json()
    )
    acks_1 = GuaranteeContext(**{**DURABLE, "acks": "1"}, kafka_version="0.10.2.2")
    assert judge("lost-write", 3, acks_1).known_fix is None


def test_kafka_3968_is_named_for_a_synced_loss_before_3_0_only() -> None:
    """2.8.2 lost whole partition directories to `power-loss:dirents=lost` with every append synced."""
    assert (known_fix("synced-appends-survive", "2.8.2") or "").startswith("KAFKA-3968, fixed in 3.0.0")
    assert known_fix("synced-appends-survive", "3.9.2") is None
    assert known_fix("committed-not-lost", "2.8.2") is None


def test_kip_890_is_named_on_4_x_when_the_run_s_transactions_used_protocol_1() -> None:
    """KIP-890's fix needs the client too: librdkafka speaks protocol 1 to a 4.3.1 cluster, so a torn
    transaction there is the known hole still open, and the note says why; a run that used protocol 2
    names no fix, and a 3.x run names it whatever its client."""
    on_4 = known_fix("read-committed-isolation", "4.3.1", frozenset({1})) or ""
    assert on_4.startswith("KIP-890, fixed in 4.0.0 for transaction protocol 2 only")
    assert "used protocol 1" in on_4 and "librdkafka#5423" in on_4
    assert known_fix("read-committed-isolation", "4.3.1", frozenset({2})) is None
    assert known_fix("read-committed-isolation", "4.3.1") is None
    on_3 = known_fix("read-committed-isolation", "3.9.2", frozenset({1})) or ""
    assert on_3.startswith("KIP-890, fixed in 4.0.0: ")
    assert known_fix("committed-not-lost", "4.3.1", frozenset({1})) is None  # not a transaction rule


def test_the_judgement_names_the_fix_from_the_context_s_protocols() -> None:
    ctx = GuaranteeContext(**DURABLE, kafka_version="4.3.1", transaction_protocols=frozenset({1}))
    judged = judge("uncommitted-read", 8, ctx)
    assert judged.verdict == "violation" and "protocol 1" in (judged.known_fix or "")
