"""The readers of a default run (`--client librdkafka-process`, `--workload sends`) and of a Java client run
(`--client java`: kchaos/compose/client/KchaosReader.java) are processes the nemesis can hit, on a real
cluster: `consumer-0` frozen (`pause:target=consumer-0`) polls nothing for the fault and
reads on after it, and killed (`kill:target=consumer-0`) is started again by its workload, from the
positions it had recorded; across both, its reading of every partition is unbroken (no record skipped, none
handed twice), nothing acknowledged is lost, and the verdict is honest."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from kchaos.model.events import ASSIGN, CONSUMER_RESTART, OK, POLL, START, STOP
from kchaos.model.history_files import history_path
from kchaos.model.run_files import RunDir
from tests.cluster.conftest import assert_no_leftovers
from tests.test_terminal_output import JVM_MARKS, MAX_LINES

pytestmark = pytest.mark.cluster

KCHAOS = str(Path(sys.executable).parent / "kchaos")
#: How long each fault holds: long enough that a reader's silence is no scheduling hiccup.
FAULT_S = 8
#: Half a second: what was on its way when a fault struck may still be recorded after its start row.
SLACK_NS = 500_000_000


@pytest.mark.parametrize(
    "client",
    # CI: the librdkafka reader; Java clients paused and killed run in tests/cluster/test_client_faults.py
    ["librdkafka-process", pytest.param("java", marks=pytest.mark.nightly)],
)
def test_a_reader_process_paused_and_killed_by_the_nemesis_reads_on_from_where_it_was(
    tmp_path: Path, client: str
) -> None:
    command = [
        KCHAOS, "run", "--client", client, "--runs-dir", str(tmp_path), "--run-id", "readers",
        "--duration", "36", "--rate", "300", "--consumers", "2",
        "--nemesis", "pause:target=consumer-0,kill:target=consumer-0", "--fault-interval", "4",
        "--fault-duration", str(FAULT_S),
    ]  # fmt: skip
    began = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True, timeout=900)
    print(done.stdout[-3000:], done.stderr[-3000:], f"(run took {time.monotonic() - began:.0f}s)")
    assert done.returncode == 0, done.stdout + done.stderr
    terminal = (done.stdout + done.stderr).splitlines()  # not a terminal: milestones and the summary alone
    assert len(terminal) <= MAX_LINES, done.stdout + done.stderr
    assert not [line for line in terminal if any(mark in line for mark in JVM_MARKS)], done.stderr
    assert_no_leftovers()
    files = RunDir(tmp_path / "readers")
    assert json.loads(files.config.read_text(encoding="utf-8"))["client"] == client
    results = json.loads(files.results.read_text(encoding="utf-8"))
    assert results["verdict"] in ("ok", "permitted"), results["anomalies"]
    assert sorted(results["context"]["fault_kinds"]) == ["client-crash", "client-pause"]
    for anomaly in ("lost-write", "unseen", "poll-skip", "nonmonotonic-poll"):
        assert results["anomalies"][anomaly]["checked"] is True, anomaly
        assert results["anomalies"][anomaly]["count"] == 0, anomaly

    history = pd.read_parquet(history_path(files.path))
    faults = history[(history["process"] == "nemesis") & history["value"].isin([START, STOP])]
    windows = {f: rows.set_index("value") for f, rows in faults.groupby("f")}
    assert sorted(windows) == ["kill", "pause"] and all(len(w) == 2 for w in windows.values()), faults
    for rows in windows.values():
        detail = json.loads(rows.loc[START, "detail"])
        assert (detail["clients"], detail["nodes"]) == (["consumer-0"], []), detail
    reader = history[history["process"] == "consumer-0"]
    polls = reader[(reader["f"] == POLL) & (reader["type"] == OK)]
    other = history[(history["process"] == "consumer-1") & (history["f"] == POLL) & (history["type"] == OK)]

    # Frozen: nothing polled inside the pause (but what was on its way, and the thaw before its stop row);
    # the other reader read on meanwhile, and consumer-0 read on after it.
    paused, thawed = windows["pause"].loc[START, "time_ns"], windows["pause"].loc[STOP, "time_ns"]
    inside = polls[(polls["time_ns"] > paused + SLACK_NS) & (polls["time_ns"] < thawed - 2e9)]
    assert inside.empty, inside
    assert ((other["time_ns"] > paused) & (other["time_ns"] < thawed)).sum() > 100
    assert (polls["time_ns"] > thawed).sum() > 100, "consumer-0 read nothing after the thaw"
    silent = polls["time_ns"].sort_values().diff().max() / 1e9
    print(f"consumer-0 silent {silent:.1f}s of a {(thawed - paused) / 1e9:.1f}s pause")
    assert silent >= FAULT_S - 3

    # Killed: restarted by its workload as a new process, nothing polled between the kill and the restart,
    # and its new assignment starts where the old process's recorded polls ended.
    kill = windows["kill"]
    assert json.loads(kill.loc[STOP, "detail"])["restarted"] == ["consumer-0"]
    restarts = reader[reader["f"] == CONSUMER_RESTART]
    assert len(restarts) == 1 and "exit 137" in restarts["error"].iloc[0], restarts
    restart = restarts.iloc[0]
    assert kill.loc[START, "time_ns"] < restart["time_ns"] < kill.loc[STOP, "time_ns"]
    dead = polls[
        (polls["time_ns"] > kill.loc[START, "time_ns"] + SLACK_NS) & (polls["index"] < restart["index"])
    ]
    assert dead.empty, dead
    before = polls[polls["index"] < restart["index"]]
    recorded = {str(int(p)): int(o) + 1 for p, o in before.groupby("partition")["offset"].max().items()}
    assert json.loads(restart["detail"])["from"] == recorded
    assigns = reader[(reader["f"] == ASSIGN) & (reader["index"] > restart["index"])]
    resumed = json.loads(assigns["detail"].iloc[0])["from"]
    assert {p: o for p, o in resumed.items() if o is not None} == recorded
    after = polls[polls["index"] > restart["index"]]
    assert len(after) > 100, "the restarted reader read nothing"

    # Across the pause and the restart, every partition read from its first record on, none skipped or
    # handed twice: the reader resumed exactly where it was each time.
    for partition, offsets in polls.groupby("partition")["offset"]:
        assert list(offsets) == list(range(len(offsets))), f"partition {partition}: {list(offsets)[:20]}"
    gap = (after["time_ns"].min() - kill.loc[START, "time_ns"]) / 1e9
    print(f"consumer-0 killed: restarted from {recorded}; first record {gap:.1f}s after the kill")
