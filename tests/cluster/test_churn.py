"""A consumer group under churn on a real cluster: `kchaos run --workload group --nemesis churn-members` as
a user runs it, four librdkafka processes on KIP-848's consumer protocol, members killed, started again and
bounced every two seconds or so for 15 s. Every step is a crash of a real process and a new one under the
same name; the group checks are judged, nothing the group committed is lost or skipped, and what a crashed
member had not committed is handed out again (at least once: `permitted`). About 50 s. The classic protocol
and the Java client are the group-churn matrix's cells (docs/workloads.md, "Groups under churn")."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from kchaos.checkers.rules.anomaly_names import GROUP_DUPLICATE, GROUP_LOST, OFFSET_REGRESSION
from kchaos.model.events import MEMBER_CRASH, MEMBER_RESTART, START, STOP
from kchaos.model.history_files import history_path
from tests.cluster.conftest import dumped_codecs, kchaos_run
from tests.cluster.test_java_groups import _judged, _protocols
from tests.cluster.test_rdkafka_groups import _processes

pytestmark = pytest.mark.cluster

MEMBERS = ["member-0", "member-1", "member-2", "member-3"]


def test_a_librdkafka_group_churned_on_the_consumer_protocol_loses_nothing_it_committed(
    tmp_path: Path,
) -> None:
    files = kchaos_run(
        tmp_path, "churn", "--client", "librdkafka-process", "--workload", "group", "--consumers", "4",
        "--group-protocol", "consumer", "--kafka-version", "4.3.1", "--duration", "30",
        "--nemesis", "churn-members:every=2", "--fault-interval", "3", "--fault-duration", "15",
        # A platform team's compressed batches: the members read them as any other.
        "--producer-config", "compression.type=snappy", "--producer-config", "linger.ms=100",
    )  # fmt: skip
    results = json.loads(files.results.read_text(encoding="utf-8"))
    _judged(results, (GROUP_LOST, OFFSET_REGRESSION), GROUP_DUPLICATE)
    history = pd.read_parquet(history_path(files.path))
    nemesis = history[(history["process"] == "nemesis") & history["value"].isin([START, STOP])]
    stop = json.loads(nemesis[nemesis["value"] == STOP]["detail"].iloc[0])
    steps, counts = stop["steps"], stop["counts"]
    print(f"churn: {counts}, started on stop: {stop['started_on_stop']}")
    assert len(steps) >= 4 and stop.get("error") is None, stop
    # Each step is the members' own rows: a kill or a bounce crashed a process, a start or a bounce (and
    # every member still down on stop) started a new one.
    members = history[history["process"].isin(MEMBERS)]
    crashes = (members["f"] == MEMBER_CRASH).sum()
    restarts = (members["f"] == MEMBER_RESTART).sum()
    assert crashes == counts["kill"] + counts["restart"], (crashes, counts)
    # (A member that died on its own and was restarted would add a row of its own.)
    assert restarts >= counts["start"] + counts["restart"] + len(stop["started_on_stop"]), (restarts, counts)
    assert _protocols(members) == {"consumer"}
    _processes(files.path, MEMBERS)
    assert "snappy" in dumped_codecs(files.path)["kchaos"]
