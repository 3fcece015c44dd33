"""librdkafka producers as processes (`--client librdkafka-process`) on a real cluster: a run ends `ok`, the
nemesis freezes one client process (`pause:target=producer-0`) and the history shows it silent for the
fault and writing on after it, and one killed (`kill:target=producer-0`, nightly) is restarted and loses
nothing it acknowledged."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from kchaos.model.events import FINAL_READ, INFO, INVOKE, OK, PRODUCER_RESTART, SEND, START, STOP
from kchaos.model.history_files import history_path
from kchaos.model.run_files import RunDir
from tests.cluster.conftest import assert_no_leftovers

pytestmark = pytest.mark.cluster

KCHAOS = str(Path(sys.executable).parent / "kchaos")
#: How long the fault holds: long enough that a client's silence is no scheduling hiccup.
FAULT_S = 10


def run(tmp_path: Path, run_id: str, fault: str) -> tuple[dict[str, Any], pd.DataFrame, pd.Series, pd.Series]:
    """`kchaos run --client librdkafka-process` with `fault` once, 5 s in, for FAULT_S seconds: its
    results, its history, and the fault's start and stop rows."""
    command = [
        KCHAOS, "run", "--client", "librdkafka-process", "--runs-dir", str(tmp_path), "--run-id", run_id,
        "--duration", "25", "--rate", "500", "--nemesis", fault, "--fault-interval", "5",
        "--fault-duration", str(FAULT_S),
    ]  # fmt: skip
    started = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True, timeout=900)
    print(done.stdout[-3000:], done.stderr[-3000:], f"(run took {time.monotonic() - started:.0f}s)")
    assert done.returncode == 0, done.stdout + done.stderr
    assert_no_leftovers()
    files = RunDir(tmp_path / run_id)
    results = json.loads(files.results.read_text(encoding="utf-8"))
    assert json.loads(files.config.read_text(encoding="utf-8"))["client_image"].startswith(
        "kchaos/rdkafka-client:"
    )
    history = pd.read_parquet(history_path(files.path))
    nemesis = history[(history["process"] == "nemesis") & history["value"].isin([START, STOP])]
    assert list(nemesis["value"]) == [START, STOP], nemesis
    start, stop = nemesis.iloc[0], nemesis.iloc[1]
    detail = json.loads(start["detail"])
    assert (detail["clients"], detail["nodes"]) == (["producer-0"], []), detail
    assert results["verdict"] == "ok", results["anomalies"]
    for anomaly in ("lost-write", "unseen"):
        assert results["anomalies"][anomaly]["checked"] is True
        assert results["anomalies"][anomaly]["count"] == 0
    return results, history, start, stop


# Nightly: CI pauses (and kills) a librdkafka process through the nemesis in
# tests/cluster/test_rdkafka_readers.py, and a producer process's silence through a pause in
# tests/cluster/test_client_faults.py (the Java client's).
@pytest.mark.nightly
def test_a_paused_librdkafka_process_stops_writing_for_the_fault_and_loses_nothing(tmp_path: Path) -> None:
    results, history, start, stop = run(tmp_path, "pause", "pause:target=producer-0")
    assert results["context"]["fault_kinds"] == ["client-pause"]
    oks = history[(history["f"] == SEND) & (history["type"] == OK)]
    frozen, other = oks[oks["process"] == "producer-0"], oks[oks["process"] == "producer-1"]
    # Nothing it answered is recorded inside the window but what was on its way when the fault struck,
    # or came once it was thawed before the stop row was written; the other process wrote on throughout.
    inside = frozen[
        (frozen["wall_time"] > start["wall_time"] + 0.5) & (frozen["wall_time"] < stop["wall_time"] - 3)
    ]
    assert inside.empty, inside
    assert ((other["wall_time"] > start["wall_time"]) & (other["wall_time"] < stop["wall_time"])).sum() > 100
    gap = frozen["wall_time"].sort_values().diff().max()
    held = stop["wall_time"] - start["wall_time"]
    print(f"producer-0's longest silence {gap:.1f}s; the fault held {held:.1f}s")
    assert gap >= FAULT_S - 3
    assert (frozen["wall_time"] > stop["wall_time"]).sum() > 100, "producer-0 wrote on after the fault"
    acknowledged = set(oks["value"])
    assert len(acknowledged) > 5000 and acknowledged <= set(history.loc[history["f"] == FINAL_READ, "value"])


@pytest.mark.nightly
def test_a_killed_librdkafka_process_is_restarted_and_loses_nothing_it_acknowledged(tmp_path: Path) -> None:
    results, history, start, stop = run(tmp_path, "kill", "kill:target=producer-0")
    assert results["context"]["fault_kinds"] == ["client-crash"]
    assert json.loads(stop["detail"])["restarted"] == ["producer-0"]
    sends = history[(history["f"] == SEND) & (history["process"] == "producer-0")]
    read = set(history.loc[history["f"] == FINAL_READ, "value"])
    before = sends[sends["index"] < start["index"]]
    killed = sends[sends["value"].isin(before.loc[before["type"] == INVOKE, "value"])]
    outcomes = killed[killed["type"] != INVOKE]
    assert sorted(outcomes["value"]) == sorted(killed.loc[killed["type"] == INVOKE, "value"])
    in_flight = outcomes[outcomes["type"] == INFO]
    assert set(in_flight["error"]) <= {"the client process ended (exit 137) without reporting the send"}
    acknowledged = set(outcomes.loc[outcomes["type"] == OK, "value"])
    assert len(acknowledged) > 500 and acknowledged <= read
    restarts = history[(history["process"] == "producer-0") & (history["f"] == PRODUCER_RESTART)]
    assert len(restarts) == 1, restarts
    after = sends[(sends["type"] == OK) & (sends["index"] > restarts["index"].iloc[0])]
    assert len(after) > 100 and set(after["value"]) <= read
    assert all(value.startswith("producer-0.1-") for value in after["value"])
    print(
        f"killed librdkafka process: {len(acknowledged)} acknowledged, {len(in_flight)} in flight at the kill"
    )
