"""The request attacks on a real cluster: producer-0's EndTxn held by the request proxy until its application
retried it, got an answer and began its next transaction, then delivered, late. Each attempt must show in
the history that the request was released after the next transaction sent a record, the broker's answer to
the late request must be recorded, and the verdict must be honest: `violation` exactly when a record was
lost, an aborted or uncommitted one read at read_committed, or a transaction torn.

CI runs the Java client on 4.3.1 (transaction protocol 2), two attempts, about 70 s: no late EndTxn may be
taken. The nightly runs finding 1 (docs/findings.md): 3.9.2 with its own Java client, and 4.3.1 with
librdkafka processes waiting for their commits (both protocol 1), ten attempts each, where the coordinator
takes a late commit into the producer's next transaction."""

from __future__ import annotations

import json
from typing import Any

import pandas as pd
import pytest

from kchaos.checkers.rules.anomaly_names import (
    ABORTED_READ,
    LOST_COMMITTED,
    PARTIAL_TRANSACTION,
    UNCOMMITTED_READ,
)
from kchaos.model.events import INVOKE, TXN_ABORT, TXN_COMMIT
from kchaos.model.history_files import history_path
from kchaos.model.scenario_table import SCENARIOS
from kchaos.model.txn_protocol import TRANSACTION_PROTOCOL_OBSERVED
from kchaos.nemesis.request_attacks import RequestAttack, txn_endtxn_held
from kchaos.runner.outcome import RunOutcome
from kchaos.runner.pytest_plugin import ChaosRun
from tests.cluster.conftest import assert_no_leftovers, nemesis_events, scenario_observed

pytestmark = pytest.mark.cluster

#: What a late request may make: each a violation of the transaction rules, none excused.
BROKEN = (LOST_COMMITTED, ABORTED_READ, PARTIAL_TRANSACTION, UNCOMMITTED_READ)


def assert_released_late_and_verdict_honest(outcome: RunOutcome, attempts: int) -> dict[str, Any]:
    observed = scenario_observed(outcome)
    print(
        f"attempts: {observed.get('attempts_made')}, windows reached: {observed.get('windows_reached')}, "
        f"late answers: {observed.get('late_answers')}"
    )
    assert observed["attempts_made"] == attempts, observed
    assert observed["windows_reached"] >= 1, observed
    steps = nemesis_events(outcome)
    for attempt in observed["attempts"]:
        if not attempt["reached"]:
            continue
        assert attempt["held_index"] < attempt["moved_on_index"] < attempt["added_index"], attempt
        assert attempt["added_index"] < attempt["released_index"] < attempt["answer_index"], attempt
        answered = steps[(steps["key"] == attempt["fault"]) & (steps["value"] == "answered")]
        assert len(answered) == 1 and answered["detail"].iloc[0]["error"] == attempt["answer"]
    found = {name: outcome.count(name) for name in BROKEN}
    print(f"verdict {outcome.verdict}, {found}")
    for name in BROKEN:
        assert outcome.results["anomalies"][name]["checked"] is True, name
    assert outcome.verdict == ("violation" if any(found.values()) else "ok"), outcome.results
    assert_no_leftovers()
    return observed


def test_a_late_endtxn_is_never_taken_under_transaction_protocol_2(chaos_run: ChaosRun) -> None:
    """Two attempts of `txn-endtxn-held` (the named scenario makes ten) on 4.3.1 with the Java client, which
    speaks protocol 2 there (observed on every commit and abort): the late EndTxn reaches the coordinator
    after the client's retry was answered and its next transaction began, and is refused, whatever the
    refusal says; nothing is lost or torn."""
    settings = {**SCENARIOS["txn-endtxn-held"].settings, "duration": 10.0, "client": "java"}
    attack = RequestAttack(txn_endtxn_held.api, txn_endtxn_held.target, attempts_wanted=2)
    outcome = chaos_run(scenario=attack, kafka_version="4.3.1", **settings)
    observed = assert_released_late_and_verdict_honest(outcome, 2)
    assert outcome.verdict == "ok", outcome.results
    reached = [attempt for attempt in observed["attempts"] if attempt["reached"]]
    assert all(attempt["answer"] not in (None, "NONE") for attempt in reached), reached
    assert all(attempt["client_connected"] is False for attempt in reached), reached
    history = pd.read_parquet(history_path(outcome.run_dir))
    ours = history[history["process"] == "producer-0"]
    ends = ours[ours["f"].isin([TXN_COMMIT, TXN_ABORT]) & (ours["type"] == INVOKE)]
    protocols = [json.loads(detail).get(TRANSACTION_PROTOCOL_OBSERVED) for detail in ends["detail"]]
    assert protocols and set(protocols) == {2}, protocols


@pytest.mark.nightly  # CI: test_a_late_endtxn_is_never_taken_under_transaction_protocol_2, the same attack
@pytest.mark.parametrize(
    ("kafka_version", "client", "policy"),
    [("3.9.2", "java", "retry"), ("4.3.1", "librdkafka-process", "wait")],
)
def test_a_late_commit_is_taken_into_the_next_transaction_under_transaction_protocol_1(
    chaos_run: ChaosRun, kafka_version: str, client: str, policy: str
) -> None:
    """Finding 1 (docs/findings.md), ten attempts a run: 3.9.2 with its own Java client, and 4.3.1 with
    librdkafka, which speaks protocol 1 to it, under an application that waits for its commit (librdkafka
    sends the EndTxn again only after its 60 s request timeout). The coordinator answers some late EndTxn
    NONE: it took a commit the application had retried and left behind as the end of its next transaction.
    The verdict is `violation` exactly when a record of a transaction its application never committed was
    read at read_committed, or one was lost or torn."""
    outcome = chaos_run(
        scenario="txn-endtxn-held", kafka_version=kafka_version, client=client, txn_on_timeout=policy
    )
    observed = assert_released_late_and_verdict_honest(outcome, 10)
    assert observed["late_answers"].get("NONE", 0) >= 1, observed


@pytest.mark.nightly  # CI: test_a_late_endtxn_is_never_taken_under_transaction_protocol_2 (one request late)
@pytest.mark.parametrize(
    ("kafka_version", "client"), [("4.3.1", "java"), ("4.3.1", "librdkafka-process"), ("3.9.2", "java")]
)
def test_a_late_marker_of_a_killed_coordinator_reaches_its_leader_after_the_next_transaction(
    chaos_run: ChaosRun, kafka_version: str, client: str
) -> None:
    """`txn-markers-held`, ten attempts: each reached attempt's marker was held at a leader while its
    coordinator was killed, another broker coordinated, and a leader took a record of the producer's next
    transaction before the old marker was delivered; the leader's answer is recorded, and the verdict is
    `violation` exactly when a record was lost, an aborted or uncommitted one read, or a transaction torn."""
    outcome = chaos_run(scenario="txn-markers-held", kafka_version=kafka_version, client=client)
    observed = assert_released_late_and_verdict_honest(outcome, 10)
    for attempt, failover in zip(observed["attempts"], observed["failovers"], strict=True):
        if attempt["reached"]:
            assert failover["new_coordinator"] not in (None, failover["coordinator"]), failover
            assert attempt["client_connected"] is False, attempt  # the killed coordinator's connection
