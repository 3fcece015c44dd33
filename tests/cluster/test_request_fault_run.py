"""A request fault through a whole `kchaos run` on a real cluster (4.3.1, three nodes, the txn workload).

Cost: one run writing 20 s, about 50 s in all. The proxy's own behaviour on a broker is
tests/cluster/test_request_proxy.py; this is the run's side: proxies started because the plan has a `hold`,
the request's steps written to the history before it closes, and a verdict.

Nightly: CI holds an EndTxn through a whole run in tests/cluster/test_request_attacks.py
(`test_a_late_endtxn_is_never_taken_under_transaction_protocol_2`: the proxies started for the run, each
step and the coordinator's answer in the history, a verdict), and the plan's side of starting the proxies
is `needs_request_proxies` in tests/test_scenarios.py.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from kchaos.model.events import NEMESIS_PROCESS, REQUEST, STOP
from kchaos.model.history_files import history_path
from tests.cluster.conftest import assert_no_leftovers

pytestmark = pytest.mark.cluster

KCHAOS = str(Path(sys.executable).parent / "kchaos")


@pytest.mark.nightly  # CI: tests/cluster/test_request_attacks.py, the same run's side of a held EndTxn
def test_a_run_that_holds_an_end_txn_records_each_step_and_the_coordinator_s_answer(tmp_path: Path) -> None:
    """The run starts the proxies because it plans a `hold`, the fault takes an EndTxn at the transaction
    coordinator, and the history holds the request's steps up to the coordinator's decoded answer, written
    before the history closed; the verdict is a verdict on a fault that happened."""
    command = [KCHAOS, "run", "--runs-dir", str(tmp_path), "--run-id", "held", "--workload", "txn",
               "--duration", "20", "--fault-interval", "3", "--fault-duration", "6",
               "--nemesis", "hold:api=EndTxn:target=txn-coordinator:sender=clients"]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
    print(done.stdout[-3000:], done.stderr[-3000:])
    assert done.returncode == 0, done.stdout + done.stderr
    assert_no_leftovers()
    history = pd.read_parquet(history_path(tmp_path / "held"))
    rows = history[(history["process"] == NEMESIS_PROCESS) & (history["key"] == "hold#1")]
    steps = rows[rows["f"] == REQUEST]
    assert {"held", "released", "delivered", "answered"} <= set(steps["value"]), steps
    answered = json.loads(steps[steps["value"] == "answered"]["detail"].iloc[0])
    assert answered["api"] == "EndTxn" and answered["link"].startswith("producer-")
    assert "error" in answered, answered  # decoded, whatever the coordinator said
    stop = json.loads(rows[rows["value"] == STOP]["detail"].iloc[0])
    assert stop["taken"] >= 1 and stop["effect_seen_after_s"] is not None
    results = json.loads((tmp_path / "held" / "results.json").read_text())
    assert results["verdict"] == "ok", results["anomalies"]
