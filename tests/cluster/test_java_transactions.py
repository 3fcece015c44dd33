"""The Java client's transactional producers on a real cluster: `kchaos run --client java --workload txn` as
a user runs it, with the transaction coordinator killed under them. Each producer is the release's Java
client in a container of its own, and its history is the one the librdkafka transactional workload
writes, so the transaction checks judge it: they must have judged it (a check not run would make the
verdict vacuous), transactions must have committed and aborted, and every commit and abort must name the
transaction protocol the client used."""

from __future__ import annotations

import json
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
from kchaos.model.releases import Release
from kchaos.model.txn_protocol import TRANSACTION_PROTOCOL_DERIVED, TRANSACTION_PROTOCOL_OBSERVED
from tests.cluster.conftest import kchaos_run

pytestmark = pytest.mark.cluster

#: The installed command, as a user runs it (beside the interpreter of the virtualenv).


# Nightly: CI runs the Java client's transactional workload, judged, with its protocol in every commit,
# in tests/cluster/test_txn_attacks.py::test_a_java_client_frozen_with_its_commit_outstanding_on_4_3_1 (and
# a killed coordinator under transactions in tests/chaos/test_transactions.py).
@pytest.mark.nightly
def test_a_java_transactional_run_passes_with_its_transactions_judged(tmp_path: Path) -> None:
    files = kchaos_run(
        tmp_path, "javatxn", "--client", "java", "--workload", "txn", "--duration", "20",
        "--nemesis", "kill:target=txn-coordinator", "--fault-interval", "3", "--fault-duration", "5",
    )  # fmt: skip
    config = json.loads(files.config.read_text(encoding="utf-8"))
    assert (config["client"], config["workload"]) == ("java", "txn")
    results = json.loads(files.results.read_text(encoding="utf-8"))
    assert results["verdict"] == "ok", results
    anomalies = results["anomalies"]
    for name in (ABORTED_READ, UNCOMMITTED_READ, LOST_COMMITTED, PARTIAL_TRANSACTION):
        assert anomalies[name]["count"] == 0, (name, anomalies[name])
    transactions = results["transactions"]
    print(f"transactions: {transactions}")
    assert transactions["committed"] > 0 and transactions["aborted"] > 0, transactions

    history = pd.read_parquet(history_path(files.path))
    ours = history[history["process"].str.startswith("producer-")]
    begun = ours[(ours["f"] == TXN_BEGIN) & (ours["type"] == OK)]
    assert {json.loads(d)[TRANSACTIONAL_ID] for d in begun["detail"]} == {
        f"kchaos-javatxn-producer-{n}" for n in range(config["producers"])
    }
    assert (ours["f"] == TXN_SEND).sum() > 0
    # The worker stamps its rows with its own clock (the host's CLOCK_MONOTONIC): they fall inside the
    # harness's own rows' span, so one clock orders a read against the commit it followed.
    harness = history[~history["process"].str.startswith("producer-")]["time_ns"]
    assert harness.min() < ours["time_ns"].min() and ours["time_ns"].max() < harness.max()
    ends = ours[ours["f"].isin([TXN_COMMIT, TXN_ABORT]) & (ours["type"] == INVOKE)]
    protocols = [json.loads(d) for d in ends["detail"]]
    # A 4.0+ client says which protocol it used; an older one has only protocol 1, known from its code.
    key = (
        TRANSACTION_PROTOCOL_OBSERVED
        if Release.parse(config["kafka_version"]).parts >= (4, 0)
        else TRANSACTION_PROTOCOL_DERIVED
    )
    assert protocols and all(key in p for p in protocols), protocols[:5]
    print(f"protocols used: {sorted({p[key] for p in protocols})} ({key})")


# CI runs a Java client older than the cluster (3.9.2 against 4.3.1) in tests/cluster/test_client_faults.py:
# test_a_java_client_killed_by_the_nemesis_is_restarted_and_loses_nothing_it_acknowledged
@pytest.mark.nightly
def test_a_java_client_of_another_release_is_the_one_that_runs_and_says_its_protocol(tmp_path: Path) -> None:
    """`--java-client-version 3.9.2` against 4.3.1 brokers: the 3.9.2 client, which has no transaction
    protocol 2 (KIP-890 part 2 came with the 4.0 client), is what commits, and its rows say protocol 1."""
    files = kchaos_run(
        tmp_path, "mixed", "--client", "java", "--java-client-version", "3.9.2", "--kafka-version", "4.3.1",
        "--workload", "txn", "--duration", "15", "--nemesis", "none",
    )  # fmt: skip
    config = json.loads(files.config.read_text(encoding="utf-8"))
    assert (config["kafka_version"], config["java_client_version"]) == ("4.3.1", "3.9.2")
    assert json.loads(files.results.read_text(encoding="utf-8"))["verdict"] == "ok"
    history = pd.read_parquet(history_path(files.path))
    commits = history[(history["f"] == TXN_COMMIT) & (history["type"] == INVOKE)]
    assert len(commits) > 0
    assert all(json.loads(d) == {TRANSACTION_PROTOCOL_DERIVED: 1} for d in commits["detail"])
    assert "Java client 3.9.2 started" in files.harness_log.read_text(encoding="utf-8")
