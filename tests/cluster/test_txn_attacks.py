"""The transaction-protocol attacks on a real cluster: a producer's commit or abort (EndTxn) caught
outstanding and its client frozen, or its coordinator frozen or killed, attempt after attempt. Each attempt
must show in the history whether it reached its window (the EndTxn's invoke row before the fault's start
row, its outcome after), at least one must have, and the verdict must be honest: `violation` exactly when
a committed record was lost, an aborted one read or a transaction torn, `ok` otherwise.

CI runs the Java client on 4.3.1 (transaction protocol 2) with its process frozen, two attempts (and
librdkafka's processes likewise, tests/cluster/test_rdkafka_transactions.py); the nightly cells are the
scenarios of `kchaos/matrices/clients.yaml`, ten attempts each."""

from __future__ import annotations

import json
from functools import partial
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
from kchaos.nemesis.txn_attacks import txn_client_pause
from kchaos.runner.outcome import RunOutcome
from kchaos.runner.pytest_plugin import ChaosRun
from tests.cluster.conftest import assert_no_leftovers, nemesis_events, scenario_observed

pytestmark = pytest.mark.cluster

#: What a transaction attack may find: each is a violation of the transaction rules, none is excused.
TORN = (LOST_COMMITTED, ABORTED_READ, PARTIAL_TRANSACTION)


def assert_windows_reached_and_verdict_honest(outcome: RunOutcome, attempts: int) -> dict[str, Any]:
    observed = scenario_observed(outcome)
    print(f"attempts: {observed.get('attempts_made')}, windows reached: {observed.get('windows_reached')}")
    assert observed["attempts_made"] == attempts, observed
    assert observed["windows_reached"] >= 1, observed
    events = nemesis_events(outcome)
    for attempt in observed["attempts"]:
        starts = events[(events["key"] == attempt["fault"]) & (events["value"] == "start")]
        assert len(starts) == 1 and int(starts["index"].iloc[0]) == attempt["start_index"], attempt
        if attempt["reached"]:
            assert attempt["invoke_index"] < attempt["start_index"] < attempt["outcome_index"], attempt
    found = {name: outcome.count(name) for name in TORN}
    print(f"verdict {outcome.verdict}, {found}")
    assert outcome.verdict == ("violation" if any(found.values()) else "ok"), outcome.results
    assert_no_leftovers()
    return observed


def test_a_java_client_frozen_with_its_commit_outstanding_on_4_3_1(chaos_run: ChaosRun) -> None:
    """Two attempts of `txn-client-pause` (the named scenario makes ten): protocol 2, so nothing may be
    lost or torn, and the window must have been reached, the client thawed after its EndTxn was answered."""
    settings = {**SCENARIOS["txn-client-pause"].settings, "duration": 10.0}
    outcome = chaos_run(
        scenario=partial(txn_client_pause, attempts_wanted=2), kafka_version="4.3.1", **settings
    )
    observed = assert_windows_reached_and_verdict_honest(outcome, 2)
    assert outcome.verdict == "ok", outcome.results
    assert any(a["reached"] and a["outcome_after_stop"] for a in observed["attempts"]), observed
    # The Java client's transactional workload, judged (CI's run of it; the plain run is nightly,
    # tests/cluster/test_java_transactions.py): the transaction checks ran, transactions committed, and
    # every commit or abort names the protocol the 4.3.1 client says it used.
    for name in (*TORN, UNCOMMITTED_READ):
        assert outcome.results["anomalies"][name]["checked"] is True, name
    assert outcome.results["transactions"]["committed"] > 0, outcome.results["transactions"]
    history = pd.read_parquet(history_path(outcome.run_dir))
    ours = history[history["process"].str.startswith("producer-")]
    ends = ours[ours["f"].isin([TXN_COMMIT, TXN_ABORT]) & (ours["type"] == INVOKE)]
    protocols = [json.loads(detail) for detail in ends["detail"]]
    assert protocols and all(TRANSACTION_PROTOCOL_OBSERVED in p for p in protocols), protocols[:5]


@pytest.mark.nightly
@pytest.mark.parametrize(
    ("scenario", "kafka_version", "client"),
    [
        ("txn-client-pause", "3.9.2", "java"),
        ("txn-client-pause", "3.9.2", "librdkafka-process"),
        *[
            (scenario, version, client)
            for scenario in ("txn-coordinator-pause", "txn-coordinator-failover")
            for version in ("3.9.2", "4.3.1")
            for client in ("librdkafka", "java")
        ],
    ],
)
def test_a_transaction_attack_reaches_its_window_and_is_judged_honestly(
    chaos_run: ChaosRun, scenario: str, kafka_version: str, client: str
) -> None:
    outcome = chaos_run(scenario=scenario, kafka_version=kafka_version, client=client)
    assert_windows_reached_and_verdict_honest(outcome, 10)
