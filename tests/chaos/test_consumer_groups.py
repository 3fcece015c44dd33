"""Consumer groups on a real cluster: members share the partitions, commit, and survive a leader kill.

What the history of a group run must show before any group check can be trusted: every member is given
partitions and together they cover the topic, each commit is recorded with its offsets, a partition's
committed offset never goes back while no one resets it, and every acknowledged record below the group's
last committed offset reached some member (with `sync` commits a member commits only what it recorded).
"""

from __future__ import annotations

import json
from collections import defaultdict

import pandas as pd
import pytest

from harness.events import ASSIGN, COMMIT, OK, POLL, SEND
from harness.history import history_path
from runner.pytest_plugin import ChaosRun
from tests.chaos.promises import assert_promise_kept
from tests.chaos.test_replication_guarantees import DURABLE, assert_leader_moved
from tests.cluster.conftest import nemesis_events

pytestmark = pytest.mark.cluster

PARTITIONS = 6


@pytest.mark.chaos(
    **DURABLE, workload="group", consumers=3, commit="sync", partitions=PARTITIONS, nemesis="kill-leader",
    fault_interval=6.0, fault_duration=8.0, duration=30.0, rate=300.0,
)  # fmt: skip
def test_group_members_share_the_partitions_and_commit_only_what_they_received(chaos_run: ChaosRun) -> None:
    """Consumer docs, Consumer groups and offset management: the group's members divide the partitions
    among them, and a committed offset is where the group resumes. With `sync` commits (after recording
    each batch) the committed offset is at most what the members received, a leader kill included."""
    outcome = chaos_run()
    assert_leader_moved(nemesis_events(outcome), "kill")
    history = pd.read_parquet(history_path(outcome.run_dir))
    members = history[history["process"].str.startswith("member-", na=False)]

    assigned: dict[str, set[int]] = defaultdict(set)
    for row in members[(members["f"] == ASSIGN) & (members["type"] == OK)].itertuples():
        assigned[str(row.process)] |= set(json.loads(str(row.detail))["partitions"])
    assert len(assigned) == 3, f"members with an assignment: {sorted(assigned)}"
    assert set().union(*assigned.values()) == set(range(PARTITIONS))
    assert all(assigned.values()), f"a member was never given a partition: {dict(assigned)}"

    commits = members[(members["f"] == COMMIT) & (members["type"] == OK)]
    assert len(commits) > 10, f"only {len(commits)} ok commits recorded"
    committed: dict[int, int] = {}
    for row in commits.itertuples():
        for partition, offset in json.loads(str(row.detail))["offsets"].items():
            previous = committed.get(int(partition), -1)
            assert offset >= previous, f"partition {partition}: committed {offset} after {previous}"
            committed[int(partition)] = offset
    assert set(committed) == set(range(PARTITIONS))

    acked = history[(history["f"] == SEND) & (history["type"] == OK)]
    polled = set(members[(members["f"] == POLL) & (members["type"] == OK)]["value"])
    below_commit = acked[acked["offset"] < acked["partition"].map(committed)]
    assert len(below_commit) > 1000
    missed = below_commit[~below_commit["value"].isin(polled)]
    assert missed.empty, f"{len(missed)} acknowledged records below the committed offset reached no member"

    assert outcome.count("lost-write") == 0
    assert outcome.count("nonmonotonic-poll") == 0
    assert_promise_kept(outcome)
