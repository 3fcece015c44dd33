"""The consumer-group anomalies in plain pandas: the reference `kchaos.checkers.passes.group_passes` is tested
against.

Like `tests.reference.anomalies`, written for reading: each definition is a few lines that follow the
wording of docs/anomalies.md ("Consumer-group anomalies"), so a disagreement with the Spark checker points
at one of the two. It returns, per anomaly, the set of occurrence ids, and nothing at all for a history
without group members: the group anomalies do not apply to it (which is not the same as none found).

What a history says about a group:
- its members: the processes whose `assign` or `commit` rows name the group (`detail.group`); every record
  a member's `poll` row returns was handed to the group;
- its commits: `commit` rows. Only an `ok` one is certain to have been applied: a `fail` was refused, and an
  `info` may or may not have been, so nothing is concluded from either. Each commits, per partition of the
  row's `topic`, the offset named in `detail.offsets` (the next offset the group is to read);
- its assignments: a member's `assign` rows; a record handed to a member belongs to the member's latest
  assignment before it (its `segment`: how many `assign` rows the member wrote before), as for poll order;
- its output, where it processes exactly once (`--workload eos`): the topics its members wrote `txn-send`
  rows to. Each record the final read returned from one names the input record it was made from
  (`kchaos.model.events.input_value`). A history whose members wrote no transactions is not checked for the
  end-to-end anomalies (`eos-lost`, `eos-duplicate`): they are not named.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from kchaos.checkers.rules.anomaly_names import (
    AFTER_REBALANCE,
    EOS_DUPLICATE,
    EOS_LOST,
    GROUP_ANOMALY_NAMES,
    GROUP_DUPLICATE,
    GROUP_LOST,
    OFFSET_REGRESSION,
    WITHIN_ASSIGNMENT,
)
from kchaos.model.events import (
    ASKED_NS,
    ASSIGN,
    COMMIT,
    FINAL_READ,
    NEMESIS_PROCESS,
    OK,
    POLL,
    SEND,
    TXN_SEND,
    input_value,
)
from kchaos.model.history_schema import parse_detail
from tests.reference.frames import INTEGERS, STRINGS, TP, TPO, is_in, missing, normalized, true

GROUP = "group"
OFFSETS = "offsets"


def _detail(raw: Any) -> dict[str, Any]:
    return parse_detail(None if missing(raw) else raw)


class _Group:
    """The history's group rows: members, `ok` commits one row per partition, and what members were handed."""

    def __init__(self, history: pd.DataFrame) -> None:
        h = normalized(history, STRINGS, INTEGERS)
        h = h[~is_in(h["process"], NEMESIS_PROCESS)]
        named = h[is_in(h["f"], ASSIGN, COMMIT)]
        groups = [_detail(d).get(GROUP) for d in named["detail"]]
        #: (`group`, `process`): who is a member of which group.
        self.members = (
            pd.DataFrame({"group": pd.array(groups, dtype="string"), "process": named["process"].to_numpy()})
            .astype("string")
            .dropna()
            .drop_duplicates()
        )
        ok_commits = h[is_in(h["f"], COMMIT) & is_in(h["type"], OK)]
        rows = []
        for process, topic, index, time_ns, raw in zip(
            ok_commits["process"], ok_commits["topic"], ok_commits["index"], ok_commits["time_ns"],
            ok_commits["detail"], strict=True,
        ):  # fmt: skip
            detail = _detail(raw)
            asked = detail.get(ASKED_NS)
            for partition, offset in (detail.get(OFFSETS) or {}).items():
                rows.append((detail.get(GROUP), process, topic, int(partition), int(offset), int(index),
                             int(time_ns), int(time_ns if asked is None else asked)))  # fmt: skip
        #: One row per partition an `ok` commit committed: `group`, `process`, topic, partition, `offset`,
        #: the commit row's `index` and `time_ns` (answered), and when it was asked for (`asked_ns`).
        commits = pd.DataFrame(
            rows, columns=["group", "process", *TP, "offset", "index", "time_ns", "asked_ns"]
        )
        self.commits = normalized(commits, ("group", "process", "topic"), ("partition", "offset", "index"))
        self.commits = self.commits.dropna(subset=["group"])
        self.acks = h[is_in(h["f"], SEND) & is_in(h["type"], OK)]
        polls = h[is_in(h["f"], POLL) & is_in(h["type"], OK) & h["value"].notna()].copy()
        polls["segment"] = 0
        assigns = h[is_in(h["f"], ASSIGN) & is_in(h["type"], OK)]
        for process, assigned in assigns.groupby("process"):
            at = np.sort(assigned["index"].to_numpy(dtype="int64"))
            mine = is_in(polls["process"], str(process))
            polls.loc[mine, "segment"] = np.searchsorted(at, polls.loc[mine, "index"].to_numpy(dtype="int64"))
        #: Every record handed to a group: the poll rows of its members, with `group` and `segment`.
        self.handed = polls.merge(self.members, on="process", how="inner")
        #: (`group`, `topic`): where a group's members wrote records in transactions, its output.
        writes = h[is_in(h["f"], TXN_SEND)][["process", "topic"]].merge(self.members, on="process")
        self.outputs = writes[["group", "topic"]].dropna().drop_duplicates()
        #: Every record the final read returned.
        self.final_reads = h[is_in(h["f"], FINAL_READ) & is_in(h["type"], OK) & h["value"].notna()]


def _highest_commits(g: _Group) -> pd.DataFrame:
    """(`group`, topic, partition, `committed`): the highest offset an `ok` commit of each group committed
    for each partition."""
    return g.commits.groupby(["group", *TP])["offset"].max().rename("committed").reset_index()


def group_lost(g: _Group) -> set[str]:
    """Acknowledged sends at an offset below the highest offset an `ok` commit of a group committed for
    their partition, whose value no member of that group was ever handed (at any offset)."""
    committed = _highest_commits(g)
    below = g.acks.merge(committed, on=TP, how="inner")
    below = below[true(below["offset"] < below["committed"])]
    received = g.handed[["group", "value"]].drop_duplicates()
    unreceived = below.merge(received, on=["group", "value"], how="left", indicator=True)
    return set(unreceived.loc[unreceived["_merge"] == "left_only", "value"])


def _handed_twice(g: _Group) -> pd.DataFrame:
    """Per group, value and place handed more than once: how often, and in how many assignments."""
    keys = ["group", "value", *TPO]
    deliveries = g.handed.groupby(keys, dropna=False).size().rename("deliveries")
    distinct = g.handed[[*keys, "process", "segment"]].drop_duplicates()
    assignments = distinct.groupby(keys, dropna=False).size().rename("assignments")
    places = pd.concat([deliveries, assignments], axis=1).reset_index()
    return places[places["deliveries"] > 1]


def group_duplicates(g: _Group) -> set[str]:
    """Values the members of one group were handed more than once at the same topic-partition-offset."""
    return set(_handed_twice(g)["value"])


def group_duplicate_kinds(history: pd.DataFrame) -> dict[str, set[str]]:
    """`group-duplicate`'s values by kind: `after-rebalance` if some place's deliveries fall in more than one
    assignment (of one member or several), else `within-assignment`. Empty without group members."""
    g = _Group(history)
    twice = _handed_twice(g)
    after = set(twice.loc[twice["assignments"] > 1, "value"])
    return {AFTER_REBALANCE: after, WITHIN_ASSIGNMENT: set(twice["value"]) - after}


def offset_regressions(g: _Group) -> set[str]:
    """`ok` commits of a partition lower than the highest one of the same group committed that was answered
    before the lower one was asked for (`time_ns` < `asked_ns`): `<topic>/<partition>@<index>` of the lower
    commit. Commits whose request and answer overlap may have been applied in either order. Pairwise, as
    the definition reads."""
    found = set()
    for _, same in g.commits.groupby(["group", *TP]):
        for later in same.itertuples():
            floor = same.loc[same["time_ns"] < later.asked_ns, "offset"].max()
            if pd.notna(floor) and later.offset < floor:
                found.add(f"{later.topic}/{later.partition}@{later.index}")
    return found


def _eos_output(g: _Group) -> pd.DataFrame:
    """Each place of a group's output the final read returned a record at, once, with the `input` value
    the record names."""
    out = g.final_reads.merge(g.outputs, on="topic", how="inner").drop_duplicates(["group", *TP, "offset"])
    return out.assign(input=out["value"].map(input_value))


def eos_lost(g: _Group) -> set[str]:
    """Input values the final read returned at an offset below the highest an `ok` commit of a group that
    writes in transactions committed for their partition, which no record of that group's output names."""
    committed = _highest_commits(g)
    committed = committed[committed["group"].isin(g.outputs["group"])]
    inputs = g.final_reads.merge(committed, on=TP, how="inner")
    below = inputs[true(inputs["offset"] < inputs["committed"])]
    named = _eos_output(g)[["group", "input"]].drop_duplicates()
    unnamed = below.merge(named, left_on=["group", "value"], right_on=["group", "input"], how="left",
                          indicator=True)  # fmt: skip
    return set(unnamed.loc[unnamed["_merge"] == "left_only", "value"])


def eos_duplicates(g: _Group) -> set[str]:
    """Input values that records at more than one place of a group's output name."""
    places = _eos_output(g).groupby(["group", "input"]).size()
    return set(places[places > 1].index.get_level_values("input"))


def reference_group_anomaly_ids(history: pd.DataFrame) -> dict[str, set[str]]:
    """Per group anomaly, the ids of its occurrences; empty (no anomaly named) when no process of the
    history is a member of a consumer group, and without the end-to-end ones when no member wrote in
    transactions."""
    g = _Group(history)
    if g.members.empty:
        return {}
    ids = {
        GROUP_LOST: group_lost(g),
        GROUP_DUPLICATE: group_duplicates(g),
        OFFSET_REGRESSION: offset_regressions(g),
    }
    if not g.outputs.empty:
        ids.update({EOS_LOST: eos_lost(g), EOS_DUPLICATE: eos_duplicates(g)})
    return {name: {str(i) for i in ids[name]} for name in GROUP_ANOMALY_NAMES if name in ids}
