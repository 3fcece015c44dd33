"""librdkafka's transactional producers as processes (`--client librdkafka-process --workload txn`) on a real
cluster, as a user runs it, with the transaction coordinator killed under them. Each producer is a
librdkafka process in a container of its own (kchaos/compose/rdkafka/txn_worker.py), recorded by the Java
transactional workload's recorder, so the transaction checks judge it: they must have judged it (a check
not run would make the verdict vacuous), transactions must have committed and aborted, every commit and
abort must say librdkafka's protocol (1, derived: it sends EndTxn v1), and the rows must be the process's
(stamped with its clock, inside the harness's own span). And its process frozen with its commit or abort
outstanding (`txn-client-pause`, two attempts) on 4.3.1, where librdkafka still sends EndTxn v1: the window
must be reached and the verdict honest (KAFKA-17754 is not fenced on protocol 1, so a `violation` here
would be a finding, not a harness fault)."""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path

import pandas as pd
import pytest

from kchaos.checkers.rules.anomaly_names import (
    ABORTED_READ,
    LOST_COMMITTED,
    PARTIAL_TRANSACTION,
    UNCOMMITTED_READ,
)
from kchaos.model.events import INVOKE, OK, TRANSACTIONAL_ID, TXN_ABORT, TXN_BEGIN, TXN_COMMIT, TXN_SEND
from kchaos.model.history_files import history_path
from kchaos.model.scenario_table import SCENARIOS
from kchaos.model.txn_protocol import TRANSACTION_PROTOCOL_DERIVED
from kchaos.nemesis.txn_attacks import txn_client_pause
from kchaos.runner.pytest_plugin import ChaosRun
from tests.cluster.conftest import kchaos_run
from tests.cluster.test_txn_attacks import assert_windows_reached_and_verdict_honest

pytestmark = pytest.mark.cluster

#: The installed command, as a user runs it (beside the interpreter of the virtualenv).


@pytest.mark.nightly  # CI: librdkafka processes are the default client of tests/chaos/test_transactions.py
def test_a_librdkafka_process_transactional_run_passes_with_its_transactions_judged(tmp_path: Path) -> None:
    files = kchaos_run(
        tmp_path, "rdtxn", "--client", "librdkafka-process", "--workload", "txn", "--kafka-version", "4.3.1",
        "--duration", "20", "--nemesis", "kill:target=txn-coordinator", "--fault-interval", "3",
        "--fault-duration", "5",
    )  # fmt: skip
    config = json.loads(files.config.read_text(encoding="utf-8"))
    assert (config["client"], config["workload"]) == ("librdkafka-process", "txn")
    assert config["client_image"].startswith("kchaos/rdkafka-client:")
    results = json.loads(files.results.read_text(encoding="utf-8"))
    assert results["verdict"] == "ok", results
    anomalies = results["anomalies"]
    for name in (ABORTED_READ, UNCOMMITTED_READ, LOST_COMMITTED, PARTIAL_TRANSACTION):
        assert anomalies[name]["checked"] is True and anomalies[name]["count"] == 0, (name, anomalies[name])
    transactions = results["transactions"]
    print(f"transactions: {transactions}")
    assert transactions["committed"] > 0 and transactions["aborted"] > 0, transactions

    history = pd.read_parquet(history_path(files.path))
    ours = history[history["process"].str.startswith("producer-")]
    begun = ours[(ours["f"] == TXN_BEGIN) & (ours["type"] == OK)]
    assert {json.loads(d)[TRANSACTIONAL_ID] for d in begun["detail"]} == {
        f"kchaos-rdtxn-producer-{n}" for n in range(config["producers"])
    }
    # The plan's values, keyed by their transaction as the in-process workload writes them.
    sent = ours[(ours["f"] == TXN_SEND) & (ours["type"] == OK)]
    assert len(sent) > 0 and all(
        v.startswith(f"{k}-") for k, v in zip(sent["key"], sent["value"], strict=True)
    )
    # Stamped by the process with its own clock (the host's CLOCK_MONOTONIC): inside the harness's rows' span.
    harness = history[~history["process"].str.startswith("producer-")]["time_ns"]
    assert harness.min() < ours["time_ns"].min() and ours["time_ns"].max() < harness.max()
    ends = ours[ours["f"].isin([TXN_COMMIT, TXN_ABORT]) & (ours["type"] == INVOKE)]
    assert len(ends) > 0 and all(json.loads(d) == {TRANSACTION_PROTOCOL_DERIVED: 1} for d in ends["detail"])
    # The producers' stderr is librdkafka's own log, kept with the run.
    assert (files.logs / "producer-0.log").exists()


# Nightly: CI runs the same attack on the Java client (tests/cluster/test_txn_attacks.py), and the run above
# covers librdkafka's transactional processes; docs/scenarios.md's table holds this cell's ten attempts.
@pytest.mark.nightly
def test_a_librdkafka_process_frozen_with_its_commit_outstanding_on_4_3_1(chaos_run: ChaosRun) -> None:
    """Two attempts of `txn-client-pause` (the named scenario makes ten) with librdkafka's producers as
    processes: each caught EndTxn (v1) must be held outstanding through the freeze in at least one attempt,
    and every commit and abort says protocol 1, derived."""
    settings = {**SCENARIOS["txn-client-pause"].settings, "duration": 10.0, "client": "librdkafka-process"}
    outcome = chaos_run(
        scenario=partial(txn_client_pause, attempts_wanted=2), kafka_version="4.3.1", **settings
    )
    observed = assert_windows_reached_and_verdict_honest(outcome, 2)
    assert any(a["reached"] and a["outcome_after_stop"] for a in observed["attempts"]), observed
    history = pd.read_parquet(history_path(outcome.run_dir))
    ends = history[history["f"].isin([TXN_COMMIT, TXN_ABORT]) & (history["type"] == INVOKE)]
    assert len(ends) > 0 and all(json.loads(d) == {TRANSACTION_PROTOCOL_DERIVED: 1} for d in ends["detail"])
