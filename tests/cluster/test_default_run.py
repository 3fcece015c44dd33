"""`kchaos run --duration 30`, the first thing a new user types, on a real cluster: the default faults are
fitted into it (the kill of the leader, 5 s in), the start line says so, the producers write for the 30 s
it said, and the run ends with a verdict.

Cost: one default run of 30 s, about 60 s in all (the cluster's start, the heal, the final read and the
check): nightly. The plan's arithmetic is held without a cluster in tests/test_plan_fit.py and the end of
the writing in tests/test_run_end.py. In CI, tests/cluster/test_hunt_runs.py runs the installed command
with three faults in a 20 s run on a real cluster (a kill among them, each held until Kafka reacts) to its
verdict, and tests/cluster/test_bootstrap.py the default client's run from the command line to `ok`.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from kchaos.model.run_files import RunDir
from tests.cluster.conftest import assert_no_leftovers

pytestmark = pytest.mark.cluster

KCHAOS = str(Path(sys.executable).parent / "kchaos")
#: How far the writing may run past `--duration`: the first send to the last, timed by the clients.
SLACK_S = 2.0


@pytest.mark.nightly  # CI: tests/cluster/test_hunt_runs.py and test_bootstrap.py (see above)
def test_a_30_second_default_run_writes_for_30_seconds_and_ends_with_a_verdict(tmp_path: Path) -> None:
    command = [KCHAOS, "run", "--runs-dir", str(tmp_path), "--run-id", "d30", "--duration", "30"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    print(done.stdout[-3000:], done.stderr[-3000:])
    assert done.returncode == 0, done.stdout + done.stderr
    assert_no_leftovers()
    said = done.stdout + done.stderr
    assert (
        "writing for 30s (acks=all, 2 librdkafka-process producers, 200/s) with 1 fault: kill#1 at +5s for "
        "15s (fitted to --duration 30: 5s apart instead of 10s; isolate:target=leader left out)"
    ) in said
    assert "wrote for" not in said, "the run wrote longer than it said"
    run = RunDir(tmp_path / "d30")
    results = json.loads(run.results.read_text(encoding="utf-8"))
    assert results["verdict"] == "ok", results["anomalies"]
    assert 30 - SLACK_S <= results["summary"]["writing_seconds"] <= 30 + SLACK_S, results["summary"]
    assert "faults: 1 of 1 applied" in said
    config = json.loads(run.config.read_text(encoding="utf-8"))
    chosen = (config["duration"], config["nemesis"], config["fault_interval"])
    assert chosen == (30, ["kill:target=leader"], 5), config
