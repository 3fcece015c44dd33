"""The nemesis hits a Java client process on a real cluster, as `kchaos run --client java` runs it: a
producer frozen (`pause:target=producer-0`) or cut off (`isolate:target=producer-0`) stops writing for the
fault and writes on after it, a producer killed (`kill:target=producer-0`) is restarted by the workload,
and in each nothing the client acknowledged is lost, the client fault excuses nothing (its kind is treated
as nothing), and the verdict is ok. A Java group member frozen past its session
(`pause:target=member-1`) polls nothing while frozen, its partitions go to the others, and the group
loses nothing (nightly)."""

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
from tests.cluster.test_java_client import assert_sends_are_the_java_workers
from tests.cluster.test_java_groups import _protocols
from tests.test_terminal_output import JVM_MARKS, MAX_LINES

pytestmark = pytest.mark.cluster

KCHAOS = str(Path(sys.executable).parent / "kchaos")
#: How long each fault holds: long enough that a client's silence is no scheduling hiccup.
FAULT_S = 10


def run(
    tmp_path: Path, run_id: str, fault: str, *options: str, held_s: int = FAULT_S
) -> tuple[dict[str, Any], pd.DataFrame, pd.Series, pd.Series]:
    """`kchaos run --client java` with `fault` once, 5 s in, for `held_s` seconds (`options` add to or
    override the defaults: 25 s at 500 sends a second): its results, its history, and the fault's start
    and stop rows."""
    command = [
        KCHAOS, "run", "--client", "java", "--runs-dir", str(tmp_path), "--run-id", run_id,
        "--duration", "25", "--rate", "500", "--nemesis", fault, "--fault-interval", "5",
        "--fault-duration", str(held_s), *options,
    ]  # fmt: skip
    started = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True, timeout=900)
    print(done.stdout[-3000:], done.stderr[-3000:], f"(run took {time.monotonic() - started:.0f}s)")
    assert done.returncode == 0, done.stdout + done.stderr
    terminal = (done.stdout + done.stderr).splitlines()
    # Not a terminal: the summary and the milestones alone, and no line of the check's JVM.
    assert len(terminal) <= MAX_LINES, done.stdout + done.stderr
    assert not [line for line in terminal if any(mark in line for mark in JVM_MARKS)], done.stderr
    assert_no_leftovers()
    files = RunDir(tmp_path / run_id)
    results = json.loads(files.results.read_text(encoding="utf-8"))
    history = pd.read_parquet(history_path(files.path))
    nemesis = history[(history["process"] == "nemesis") & history["value"].isin([START, STOP])]
    assert len(nemesis) == 2, nemesis
    start, stop = nemesis.iloc[0], nemesis.iloc[1]
    assert (start["value"], stop["value"]) == (START, STOP)
    return results, history, start, stop


def assert_judged_honestly(results: dict[str, Any], kind: str, start: pd.Series) -> None:
    """The fault row names the client and no broker; the oracle saw a client fault, not a crash of a
    node, and nothing acknowledged is lost."""
    detail = json.loads(start["detail"])
    assert (detail["kind"], detail["clients"], detail["nodes"]) == (kind, ["producer-0"], []), detail
    assert results["verdict"] == "ok", results["anomalies"]
    assert results["context"]["fault_kinds"] == [kind]
    assert results["context"]["max_concurrent_crashed"] == 0
    for anomaly in ("lost-write", "unseen"):
        assert results["anomalies"][anomaly]["checked"] is True
        assert results["anomalies"][anomaly]["count"] == 0


@pytest.mark.parametrize(
    ("fault", "kind"),
    [
        # Nightly: CI freezes a Java client process in
        # test_a_paused_java_group_member_loses_its_partitions_to_the_others_and_nothing_is_lost (silent
        # while frozen, on after the thaw, the pause judged as excusing nothing, nothing lost).
        pytest.param("pause", "client-pause", marks=pytest.mark.nightly),
        # Nightly: the same silence and promise as the pause, made by rules on the brokers' side instead.
        pytest.param("isolate", "client-partition", marks=pytest.mark.nightly),
    ],
)
def test_a_paused_or_cut_off_java_client_stops_writing_for_the_fault_and_loses_nothing(
    tmp_path: Path, fault: str, kind: str
) -> None:
    """Frozen, or cut off from every broker by rules on the brokers' side: either way the client hears
    nothing for the fault's duration, then writes on."""
    results, history, start, stop = run(tmp_path, fault, f"{fault}:target=producer-0")
    assert_judged_honestly(results, kind, start)
    sends = history[history["f"] == SEND]
    oks = sends[sends["type"] == OK]
    frozen, other = oks[oks["process"] == "producer-0"], oks[oks["process"] == "producer-1"]
    # Nothing it answered is recorded inside the window but what was already on its way when the fault
    # struck (half a second), or came once it was lifted before the stop row was written (the heal takes
    # up to a few seconds: a rule deleted on each broker in turn); the other producer wrote on throughout.
    inside = frozen[
        (frozen["wall_time"] > start["wall_time"] + 0.5) & (frozen["wall_time"] < stop["wall_time"] - 3)
    ]
    assert inside.empty, inside
    assert ((other["wall_time"] > start["wall_time"]) & (other["wall_time"] < stop["wall_time"])).sum() > 100
    gap = frozen["wall_time"].sort_values().diff().max()
    held = stop["wall_time"] - start["wall_time"]
    print(f"{fault}: producer-0's longest silence {gap:.1f}s; the fault held {held:.1f}s")
    assert gap >= FAULT_S - 3
    after = (frozen["wall_time"] > stop["wall_time"]).sum()
    assert after > 100, f"producer-0 wrote {after} after the fault"


def test_a_java_client_killed_by_the_nemesis_is_restarted_and_loses_nothing_it_acknowledged(
    tmp_path: Path,
) -> None:
    """The client is kafka-clients 3.9.2 against 4.3.1 brokers (`--java-client-version`, older than the
    cluster, as a platform team's services often are): its processes are the ones that write and are
    restarted."""
    results, history, start, stop = run(
        tmp_path,
        "kill",
        "kill:target=producer-0",
        "--java-client-version",
        "3.9.2",
        "--kafka-version",
        "4.3.1",
    )
    files = RunDir(tmp_path / "kill")
    config = json.loads(files.config.read_text(encoding="utf-8"))
    assert (config["kafka_version"], config["java_client_version"]) == ("4.3.1", "3.9.2")
    assert_sends_are_the_java_workers(files)
    assert_judged_honestly(results, "client-crash", start)
    assert json.loads(stop["detail"])["restarted"] == ["producer-0"]
    sends = history[(history["f"] == SEND) & (history["process"] == "producer-0")]
    read = set(history.loc[history["f"] == FINAL_READ, "value"])
    before = sends[sends["index"] < start["index"]]
    # Every send the killed process invoked was answered once: by it, or as indeterminate once it died.
    killed = sends[sends["value"].isin(before.loc[before["type"] == INVOKE, "value"])]
    outcomes = killed[killed["type"] != INVOKE]
    assert sorted(outcomes["value"]) == sorted(killed.loc[killed["type"] == INVOKE, "value"])
    in_flight = outcomes[outcomes["type"] == INFO]
    assert set(in_flight["error"]) <= {"the client process ended (exit 137) without reporting the send"}
    acknowledged = set(outcomes.loc[outcomes["type"] == OK, "value"])
    assert len(acknowledged) > 500 and acknowledged <= read
    # Restarted while the run went on: a new process under the same name, its values its own.
    restarts = history[(history["process"] == "producer-0") & (history["f"] == PRODUCER_RESTART)]
    assert len(restarts) == 1, restarts
    after = sends[(sends["type"] == OK) & (sends["index"] > restarts["index"].iloc[0])]
    assert len(after) > 100 and set(after["value"]) <= read
    assert all(value.startswith("producer-0.1-") for value in after["value"])
    assert (after["wall_time"] > stop["wall_time"]).sum() > 0
    gap = after["wall_time"].min() - start["wall_time"]
    print(
        f"killed client: {len(acknowledged)} acknowledged, {len(in_flight)} in flight at the kill; first "
        f"acknowledgement of its restart {gap:.1f}s after the kill; {len(after)} acknowledged after"
    )


@pytest.mark.nightly  # CI: a crashed member's partitions go to others in chaos/test_consumer_groups, and a
# paused client process reads on in test_rdkafka_readers
def test_a_paused_java_group_member_loses_its_partitions_to_the_others_and_nothing_is_lost(
    tmp_path: Path,
) -> None:
    """`pause:target=member-1` freezes one member of a Java group longer than its session: it polls
    nothing while frozen, the group hands its partitions to the others, it polls again once thawed, and
    the group's checks find nothing lost; the pause excuses nothing."""
    held_s = 14  # beyond the members' 10 s session, so the group must move the frozen member's partitions
    results, history, start, stop = run(
        tmp_path, "pausemember", "pause:target=member-1", "--workload", "group", "--consumers", "3",
        "--kafka-version", "4.3.1", "--duration", "30", "--rate", "200", held_s=held_s,
    )  # fmt: skip
    detail = json.loads(start["detail"])
    assert (detail["kind"], detail["clients"], detail["nodes"]) == ("client-pause", ["member-1"], [])
    # The group is the release's Java consumers, each a process of its own, on the classic protocol.
    assert _protocols(history) == {"classic"}
    assert (tmp_path / "pausemember" / "logs" / "member-0.log").exists()
    assert results["context"]["fault_kinds"] == ["client-pause"]
    assert results["verdict"] in ("ok", "permitted"), results["anomalies"]
    for anomaly in ("group-lost", "offset-regression"):
        assert results["anomalies"][anomaly]["checked"] and results["anomalies"][anomaly]["count"] == 0
    ok = history[(history["type"] == OK) & history["process"].str.startswith("member-")]
    polls = ok[ok["f"] == "poll"]
    frozen = polls[polls["process"] == "member-1"]
    # Silent while frozen (but for what was already on its way, and the thaw before the stop row).
    window = frozen[
        (frozen["time_ns"] > start["time_ns"] + 500_000_000) & (frozen["time_ns"] < stop["time_ns"] - 2e9)
    ]
    assert window.empty, window
    assert (frozen["time_ns"] > stop["time_ns"]).sum() > 0, "member-1 never polled after the thaw"
    # The others took its partitions: an assignment to another member while it was frozen, and polls.
    moved = ok[(ok["f"] == "assign") & (ok["process"] != "member-1") & (ok["time_ns"] > start["time_ns"])
               & (ok["time_ns"] < stop["time_ns"])]  # fmt: skip
    assert len(moved) > 0, "no other member was assigned anything while member-1 was frozen"
    gap = frozen["time_ns"].sort_values().diff().max() / 1e9
    print(
        f"member-1 silent {gap:.1f}s of a {held_s}s pause; {len(moved)} assignments to the others meanwhile"
    )
    assert gap >= held_s - 3


@pytest.mark.nightly
def test_a_java_group_member_killed_by_the_nemesis_is_restarted_and_the_group_loses_nothing(
    tmp_path: Path,
) -> None:
    """`kill:target=member-1` SIGKILLs a member without telling the group (unlike `kill-member`, the
    nemesis waits for nothing): its workload starts a new process under its name, which joins the group
    again and polls, and the group's checks find nothing lost."""
    results, history, start, stop = run(
        tmp_path, "killmember", "kill:target=member-1", "--workload", "group", "--consumers", "3",
        "--kafka-version", "4.3.1", "--rate", "200",
    )  # fmt: skip
    detail = json.loads(start["detail"])
    assert (detail["kind"], detail["clients"], detail["nodes"]) == ("client-crash", ["member-1"], [])
    assert json.loads(stop["detail"])["restarted"] == ["member-1"]
    assert results["verdict"] in ("ok", "permitted"), results["anomalies"]
    for anomaly in ("group-lost", "offset-regression"):
        assert results["anomalies"][anomaly]["checked"] and results["anomalies"][anomaly]["count"] == 0
    member = history[history["process"] == "member-1"]
    restarts = member[member["f"] == "member-restart"]
    assert len(restarts) == 1 and "exit 137" in str(restarts["error"].iloc[0]), restarts
    again = member[
        (member["type"] == OK) & (member["f"] == "poll") & (member["index"] > restarts["index"].iloc[0])
    ]
    assert len(again) > 0, "the restarted member never polled"
