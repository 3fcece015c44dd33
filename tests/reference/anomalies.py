"""The anomaly definitions again, in plain pandas: the reference the Spark checker is tested against.

Written for reading, not for speed: each anomaly is a few lines that follow the contract's wording
(docs/anomalies.md), with no shared passes and no tricks, so a disagreement
with `kchaos.checkers.anomalies.registry` points at one of the two. It returns, per anomaly, the set of
occurrence ids — the identity both implementations must agree on exactly.

Inputs are pandas frames with the history columns (and optionally the replica dump columns). Null-aware
dtypes throughout: a missing offset compares as "unknown", never as 0.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from kchaos.checkers.rules.anomaly_names import (
    ANOMALY_NAMES,
    DUPLICATE,
    INCONSISTENT_OFFSET,
    LOST_WRITE,
    NONMONOTONIC_POLL,
    NONMONOTONIC_SEND,
    OFFSET_DIFFERS,
    POLL_SKIP,
    REPLICA_DIVERGENCE,
    TRUNCATED_READ,
    UNSEEN,
    VALUES_DIFFER,
)
from kchaos.model.events import (
    ASSIGN,
    FINAL_READ,
    INVOKE,
    NEMESIS_PROCESS,
    OK,
    POLL,
    READ_UNCOMMITTED,
    SEND,
    TXN_SEND,
)
from tests.reference.frames import INTEGERS, STRINGS, TP, TPO, is_in, missing, normalized, true
from tests.reference.transactions import Transactions, transaction_ids


def _offset_id(topic: object, partition: object, offset: object) -> str:
    """`topic/partition/offset`, a missing part left out (as Spark's `concat_ws` does)."""
    return "/".join(str(part) for part in (topic, partition, offset) if not missing(part))


def _offset_ids(frame: pd.DataFrame, prefix: str = "") -> set[str]:
    return {prefix + _offset_id(*row) for row in frame[TPO].itertuples(index=False)}


class _History:
    """The history split into the rows each definition reads."""

    def __init__(self, history: pd.DataFrame) -> None:
        h = normalized(history, STRINGS, INTEGERS)
        h = h[~is_in(h["process"], NEMESIS_PROCESS)]
        self.acks = h[is_in(h["f"], SEND) & is_in(h["type"], OK)]
        self.invokes = h[is_in(h["f"], SEND) & is_in(h["type"], INVOKE)]
        self.reads = h[is_in(h["f"], POLL, FINAL_READ) & is_in(h["type"], OK) & h["value"].notna()]
        self.assigns = h[is_in(h["f"], ASSIGN) & is_in(h["type"], OK)]
        final_read = h[is_in(h["f"], FINAL_READ) & is_in(h["type"], INVOKE, OK)]
        self.covered = final_read[TP].dropna().drop_duplicates()
        #: Records were written in transactions: the topic holds control markers, and readers at
        #: read_committed skip records of transactions that did not commit (see `poll_skips`).
        self.transactional = bool(is_in(h["f"], TXN_SEND).any())
        twice = self.acks["value"].duplicated(keep=False) & self.acks["value"].notna()
        if twice.any():
            value = self.acks.loc[twice, "value"].iloc[0]
            raise ValueError(
                f"history contract broken: value {value} has several ok sends; "
                "a value must be unique per send"
            )


def _unread_acks(h: _History) -> pd.DataFrame:
    """Acknowledged sends never read, next to the highest offset read in their partition."""
    horizon = h.reads.dropna(subset=TP).groupby(TP)["offset"].max().rename("horizon").reset_index()
    unread = h.acks[~h.acks["value"].isin(h.reads["value"])]
    return unread.merge(horizon, on=TP, how="left")


def lost_writes(h: _History) -> set[str]:
    """Acknowledged, never read, at or below the highest offset read in its partition."""
    unread = _unread_acks(h)
    return set(unread.loc[true(unread["offset"] <= unread["horizon"]), "value"])


def unseen(h: _History) -> set[str]:
    """Acknowledged, never read, and the partition has no reads or the send lies above all of them."""
    unread = _unread_acks(h)
    above = unread["horizon"].isna() | true(unread["offset"] > unread["horizon"])
    return set(unread.loc[above, "value"])


def duplicates(h: _History) -> set[str]:
    """Values read at more than one distinct topic-partition-offset."""
    places = h.reads[["value", *TPO]].drop_duplicates()
    per_value = places["value"].value_counts()
    return set(per_value[per_value > 1].index)


def inconsistent_offsets(h: _History) -> set[str]:
    """Offsets read with several values; values read only away from their acknowledged offset."""
    per_offset = h.reads.groupby(TPO, dropna=False)["value"].nunique()
    differ = per_offset[per_offset > 1].reset_index()
    placed = h.acks.dropna(subset=TPO)
    read = placed[placed["value"].isin(h.reads["value"])]
    places = h.reads[["value", *TPO]].drop_duplicates()
    at_acked = read.merge(places, on=["value", *TPO], how="left", indicator=True)
    moved = at_acked.loc[at_acked["_merge"] == "left_only", "value"]
    return _offset_ids(differ, VALUES_DIFFER + ":") | {f"{OFFSET_DIFFERS}:{value}" for value in moved}


def nonmonotonic_sends(h: _History) -> set[str]:
    """Per producer and partition, in invoke order: an acknowledged offset at or below the previous one.

    The invoke row of a send has the same process, topic, partition and value as its ok row; without one,
    the ok row's own index is its place in the order. Acks without an offset say nothing about order.
    """
    keys = ["process", *TP, "value"]
    invoked = h.invokes.groupby(keys, dropna=False)["index"].min().rename("invoke_index").reset_index()
    acks = h.acks[h.acks["offset"].notna()].merge(invoked, on=keys, how="left")
    acks["invoke_index"] = acks["invoke_index"].fillna(acks["index"])
    acks = acks.sort_values(["invoke_index", "index"])
    previous = acks.groupby(["process", *TP], dropna=False)["offset"].shift()
    return set(acks.loc[true(acks["offset"] <= previous), "value"])


def _poll_order(h: _History) -> pd.DataFrame:
    """Reads with the previous read of the same process and partition since its last (re)assignment."""
    reads = h.reads.copy()
    reads["segment"] = 0
    for process, assigned in h.assigns.groupby("process"):
        at = np.sort(assigned["index"].to_numpy(dtype="int64"))
        mine = is_in(reads["process"], str(process))
        reads.loc[mine, "segment"] = np.searchsorted(at, reads.loc[mine, "index"].to_numpy(dtype="int64"))
    reads = reads.sort_values("index")
    reads["previous"] = reads.groupby(["process", *TP, "segment"], dropna=False)["offset"].shift()
    return reads


def _read_ids(reads: pd.DataFrame) -> set[str]:
    """`process:index`, a missing part left out."""
    return {
        ":".join(str(part) for part in (process, index) if not pd.isna(part))
        for process, index in zip(reads["process"], reads["index"], strict=True)
    }


def poll_skips(h: _History, t: Transactions | None = None) -> set[str]:
    """Per reader and partition between two assignments, a read more than one offset past the previous.

    In a transactional history (`t`), only a gap over a record the reader had to return: an acknowledged
    `send`, or an acknowledged record of a committed transaction (of any transaction, for a reader at
    read_uncommitted). Commit and abort markers take offsets that no reader is handed, and a reader at
    read_committed (or of a level not recorded, which may be it) rightly skips the records of transactions
    that did not commit; neither is known by offset, so any offset no such record is known at may be one."""
    reads = _poll_order(h)
    gaps = reads[true(reads["offset"] > reads["previous"] + 1)]
    if t is None:
        return _read_ids(gaps)
    level = t.reads.set_index("index")["isolation"]
    gaps = gaps.assign(
        uncommitted=gaps["index"].astype("int64").map(level).eq(READ_UNCOMMITTED).fillna(False)
    )
    plain = h.acks.dropna(subset=TPO)[TPO].assign(committed=True)
    written = t.written.dropna(subset=TPO).merge(t.outcomes["committed"], left_on="txn", right_index=True)
    due = pd.concat([plain, written[[*TPO, "committed"]]]).rename(columns={"offset": "due"})
    pairs = gaps.merge(due, on=TP)
    inside = true((pairs["previous"] < pairs["due"]) & (pairs["due"] < pairs["offset"]))
    return _read_ids(pairs[inside & (pairs["committed"].astype(bool) | pairs["uncommitted"].astype(bool))])


def nonmonotonic_polls(h: _History) -> set[str]:
    """Per reader and partition between two assignments, a read at or before the previous one."""
    reads = _poll_order(h)
    return _read_ids(reads[true(reads["offset"] <= reads["previous"])])


def truncated_reads(h: _History, t: Transactions | None = None) -> set[str]:
    """Values polled in a partition the final read covered, that no final-read row holds.

    Not a record of a transaction that did not commit (aborted or undecided), unless the final read of
    its partition was at read_uncommitted: a final read at read_committed rightly leaves it out (and one of
    a level not recorded may have been at read_committed), however a reader at read_uncommitted saw it."""
    polled = h.reads[is_in(h.reads["f"], POLL)].merge(h.covered, on=TP, how="inner")
    finally_read = h.reads.loc[is_in(h.reads["f"], FINAL_READ), "value"]
    lacking = set(polled.loc[~polled["value"].isin(finally_read), "value"])
    if t is None:
        return lacking
    return lacking - t.hidden_from_final_read()


def replica_divergences(replicas: pd.DataFrame) -> set[str]:
    """Offsets inside the ranges of two or more replicas whose records there differ or are missing."""
    r = normalized(replicas, ("topic", "value"), ("broker", "partition", "offset"))
    ranges = r.groupby(["broker", *TP])["offset"].agg(log_start="min", log_end="max").reset_index()
    ranges["log_end"] += 1
    holders = r[[*TPO, "broker"]].drop_duplicates().groupby(TPO, dropna=False).size().rename("holders")
    # A transaction marker's missing value is a value too: drop_duplicates keeps one missing per offset.
    values = r[[*TPO, "value"]].drop_duplicates().groupby(TPO, dropna=False).size().rename("values")
    offsets = pd.concat([holders, values], axis=1).reset_index()
    covering = offsets[TPO].merge(ranges, on=TP)
    inside = true((covering["log_start"] <= covering["offset"]) & (covering["offset"] < covering["log_end"]))
    covered_by = covering[inside].groupby(TPO).size().rename("covering").reset_index()
    offsets = offsets.merge(covered_by, on=TPO, how="left").fillna({"covering": 0})
    divergent = (offsets["covering"] >= 2) & (
        (offsets["values"] > 1) | (offsets["holders"] < offsets["covering"])
    )
    return _offset_ids(offsets[divergent])


def reference_anomaly_ids(history: pd.DataFrame, replicas: pd.DataFrame | None = None) -> dict[str, set[str]]:
    """Per anomaly, the ids of its occurrences; `replica-divergence` only when replica dumps are given, the
    transaction anomalies only when the history holds transactional records (`txn-send` rows)."""
    h = _History(history)
    t = Transactions(history) if h.transactional else None
    ids = {
        LOST_WRITE: lost_writes(h),
        UNSEEN: unseen(h),
        DUPLICATE: duplicates(h),
        INCONSISTENT_OFFSET: inconsistent_offsets(h),
        NONMONOTONIC_SEND: nonmonotonic_sends(h),
        POLL_SKIP: poll_skips(h, t),
        NONMONOTONIC_POLL: nonmonotonic_polls(h),
        TRUNCATED_READ: truncated_reads(h, t),
    }
    if replicas is not None:
        ids[REPLICA_DIVERGENCE] = replica_divergences(replicas)
    if t is not None:
        ids.update(transaction_ids(t))
    return {name: {str(i) for i in ids[name]} for name in ANOMALY_NAMES if name in ids}
