"""Two faults at once on real Kafka (`--fault-overlap`): a broker killed while another is frozen.

`kchaos run --nemesis kill:target=random,pause:target=random --fault-overlap 1 --schedule fixed --seed 0`
plans (pure arithmetic, checked first) the kill and the pause alone, then a second kill that starts 2.5 s
into the second pause. On the cluster the kill must start while the pause holds, on another node than the
frozen one, say in its start row which fault it started beside, and the run must heal and keep every
acknowledged write: two of three replicas down at once stop acks=all writes, they lose none. A record
written twice by a librdkafka producer that bumped its epoch (#4953) is the client's violation, judged so,
and no broken replication promise (`tests/chaos/promises.py`).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from kchaos.model.config import load_config
from kchaos.model.fault_plan import plan
from kchaos.model.history_files import history_path
from kchaos.model.run_files import RunDir
from kchaos.runner.failures import EXIT_VIOLATION
from kchaos.runner.outcome import RunOutcome
from tests.chaos.promises import assert_promise_kept
from tests.cluster.conftest import assert_no_leftovers
from tests.cluster.fault_steps import QUICK_TIMER_FLAGS

pytestmark = pytest.mark.cluster

KCHAOS = str(Path(sys.executable).parent / "kchaos")
OPTIONS = {
    "nemesis": "kill:target=random,pause:target=random", "fault_overlap": "1", "schedule": "fixed",
    "seed": "0", "duration": "30", "fault_duration": "6", "fault_interval": "2", "rate": "200",
}  # fmt: skip


@pytest.mark.nightly  # CI: the overlap's plan and its choice of another node in tests/test_fault_overlap.py,
# faults of a mix on a cluster in test_hunt_runs, a request fault in force beside the workload in
# test_request_fault_run
def test_a_kill_beside_a_pause_hits_another_node_and_loses_nothing(tmp_path: Path) -> None:
    planned = {p.key: p for p in plan(load_config(**OPTIONS))}
    assert list(planned) == ["kill#1", "pause#2", "kill#3"]
    assert planned["pause#2"].at < planned["kill#3"].at < planned["pause#2"].end  # the one overlap
    flags = [part for name, value in OPTIONS.items() for part in (f"--{name.replace('_', '-')}", value)]
    flags += QUICK_TIMER_FLAGS  # each fault holds until Kafka reacts: fencing after 4 s, not 9
    command = [KCHAOS, "run", "--runs-dir", str(tmp_path), "--run-id", "overlap", *flags]
    started = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True, timeout=900, check=False)
    print(done.stdout[-3000:], done.stderr[-3000:], f"(run took {time.monotonic() - started:.0f}s)")
    assert done.returncode in (0, EXIT_VIOLATION), done.stdout + done.stderr
    assert_no_leftovers()
    files = RunDir(tmp_path / "overlap")
    results = json.loads(files.results.read_text(encoding="utf-8"))
    assert_promise_kept(RunOutcome(files.path, results, files.report))
    assert (done.returncode == EXIT_VIOLATION) == (results["verdict"] == "violation"), done.stdout
    assert results["fault_application"]["applied"] == list(planned), results["fault_application"]
    history = pd.read_parquet(history_path(files.path))
    nemesis = history[history["process"] == "nemesis"].set_index(["key", "value"])
    start = {key: json.loads(nemesis.loc[(key, "start"), "detail"]) for key in planned}
    index = {
        (key, value): int(nemesis.loc[(key, value), "index"])
        for key in planned
        for value in ("start", "stop")
    }
    # The kill started while the pause held, on another node, and says so.
    assert index[("pause#2", "start")] < index[("kill#3", "start")] < index[("pause#2", "stop")]
    assert start["kill#3"]["beside"] == ["pause#2"]
    assert not set(start["kill#3"]["nodes"]) & set(start["pause#2"]["nodes"]), start
    assert all("beside" not in start[key] for key in ("kill#1", "pause#2"))
    assert results["context"]["max_concurrent_crashed"] == 1  # a frozen node is no crash to the oracle
    for anomaly in ("lost-write", "unseen"):
        assert results["anomalies"][anomaly]["checked"] is True
        assert results["anomalies"][anomaly]["count"] == 0
