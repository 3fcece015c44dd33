"""The anomaly definitions again, in plain pandas: the reference the Spark checker is tested against.

Written for reading, not for speed: each anomaly is a few lines that follow the contract's wording
(README "Anomalies"), with no shared passes and no tricks, so a disagreement
with `kchaos.checkers.anomalies` points at one of the two. It returns, per anomaly, the set of occurrence ids
— the identity both implementations must agree on exactly.

Inputs are pandas frames with the history columns (and optionally the replica dump columns). Null-aware
dtypes throughout: a missing offset compares as "unknown", never as 0.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from kchaos.checkers.names import (
    ABORTED_READ,
    ANOMALY_NAMES,
    DUPLICATE,
    INCONSISTENT_OFFSET,
    LOST_COMMITTED,
    LOST_WRITE,
    NONMONOTONIC_POLL,
    NONMONOTONIC_SEND,
    OFFSET_DIFFERS,
    PARTIAL_TRANSACTION,
    POLL_SKIP,
    REPLICA_DIVERGENCE,
    TRANSACTION_ANOMALY_NAMES,
    TRUNCATED_READ,
    UNCOMMITTED_READ,
    UNSEEN,
    VALUES_DIFFER,
)
from kchaos.checkers.reference_frames import TP, TPO, is_in, missing, normalized, true
from kchaos.model.events import (
    ASSIGN,
    FAIL,
    FINAL_READ,
    INFO,
    INVOKE,
    ISOLATION,
    NEMESIS_PROCESS,
    OK,
    POLL,
    READ_COMMITTED,
    READ_UNCOMMITTED,
    SEND,
    TXN_ABORT,
    TXN_COMMIT,
    TXN_SEND,
)
from kchaos.model.history import parse_detail

_STRINGS = ("process", "type", "f", "topic", "value")
_INTEGERS = ("partition", "offset", "index")


def _offset_id(topic: object, partition: object, offset: object) -> str:
    """`topic/partition/offset`, a missing part left out (as Spark's `concat_ws` does)."""
    return "/".join(str(part) for part in (topic, partition, offset) if not missing(part))


def _offset_ids(frame: pd.DataFrame, prefix: str = "") -> set[str]:
    return {prefix + _offset_id(*row) for row in frame[TPO].itertuples(index=False)}


class _History:
    """The history split into the rows each definition reads."""

    def __init__(self, history: pd.DataFrame) -> None:
        h = normalized(history, _STRINGS, _INTEGERS)
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


def poll_skips(h: _History, t: _Transactions | None = None) -> set[str]:
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


def truncated_reads(h: _History, t: _Transactions | None = None) -> set[str]:
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
    t = _Transactions(history) if h.transactional else None
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
        ids.update(_transaction_ids(t))
    return {name: {str(i) for i in ids[name]} for name in ANOMALY_NAMES if name in ids}


# --- transactions ----------------------------------------------------------------------------------------


class _Transactions:
    """The history's transactional rows: which transaction each record belongs to, how each transaction
    ended, and every read with its reader's isolation level.

    A transaction's records are the values of its `txn-send` rows, whatever their outcome: a record whose
    send failed or is indeterminate was still never meant to be seen outside its transaction. How it ended,
    from its `txn-commit` and `txn-abort` rows:

    - committed: a commit was acknowledged (`ok`);
    - aborted: no commit may have taken effect (none is `ok` or `info`, and every commit invoked ended in
      `fail`), and an abort was acknowledged or a commit definitely failed. A commit with an indeterminate
      outcome leaves the transaction undecided whatever the abort said, so that nothing an undecided
      commit may have made visible is ever called an aborted read;
    - otherwise undecided (open, or a commit or abort with no or an indeterminate outcome).
    """

    def __init__(self, history: pd.DataFrame) -> None:
        h = normalized(history, (*_STRINGS, "key"), _INTEGERS)
        h = h[~is_in(h["process"], NEMESIS_PROCESS)]
        sends = h[is_in(h["f"], TXN_SEND)]
        if sends["key"].isna().any():
            index = sends.loc[sends["key"].isna(), "index"].iloc[0]
            raise ValueError(f"history contract broken: {TXN_SEND} row {index} names no transaction (key)")
        #: One row per record: `value` and the transaction (`txn`) it was written in.
        self.records = sends[["key", "value"]].dropna().drop_duplicates().rename(columns={"key": "txn"})
        twice = self.records["value"].duplicated(keep=False)
        if twice.any():
            value = self.records.loc[twice, "value"].iloc[0]
            raise ValueError(
                f"history contract broken: value {value} was written in several transactions; "
                "a value must be unique per send"
            )
        #: Records whose send was acknowledged: in the log, where their partition and offset say.
        self.written = sends[is_in(sends["type"], OK)][["key", "value", *TPO]].rename(columns={"key": "txn"})
        #: Each record's partition, as its rows name it (whatever their outcome).
        self.places = sends.dropna(subset=["value", *TP]).drop_duplicates("value")[["value", *TP]]
        self.outcomes = _outcomes(h)
        self.reads = _reads_with_isolation(h)
        final_read = h[is_in(h["f"], FINAL_READ) & is_in(h["type"], INVOKE, OK)]
        self.covered = final_read[TP].dropna().drop_duplicates()
        final_levels = final_read[is_in(final_read["type"], INVOKE)]
        uncommitted = [
            parse_detail(None if missing(d) else d).get(ISOLATION) == READ_UNCOMMITTED
            for d in final_levels["detail"]
        ]
        #: Partitions the final read read at read_uncommitted (its invoke row for the partition says so).
        self.final_read_uncommitted = {
            (topic, partition)
            for (topic, partition), ru in zip(
                final_levels[TP].itertuples(index=False), uncommitted, strict=True
            )
            if ru and not missing(topic) and not missing(partition)
        }

    def hidden_from_final_read(self) -> set[str]:
        """Records a final read may rightly lack: those of transactions that did not commit, in partitions
        the final read did not read at read_uncommitted."""
        committed = self.outcomes.index[self.outcomes["committed"]]
        undone = self.records[~self.records["txn"].isin(committed)].merge(self.places, on="value", how="left")
        shown = [
            (topic, partition) in self.final_read_uncommitted
            for topic, partition in undone[TP].itertuples(index=False)
        ]
        return set(undone.loc[[not s for s in shown], "value"])

    def committed_reads(self) -> pd.DataFrame:
        """Reads by readers whose isolation level is read_committed, each with its record's transaction."""
        reads = self.reads[is_in(self.reads["isolation"], READ_COMMITTED)]
        return reads.merge(self.records, on="value", how="inner")


def _outcomes(h: pd.DataFrame) -> pd.DataFrame:
    """Per transaction id (the index): `committed`, `aborted` (as `_Transactions` defines them) and
    `first_commit`, the index of its first `txn-commit` row of any type (missing: none)."""
    ends = h[is_in(h["f"], TXN_COMMIT, TXN_ABORT)]
    txns = pd.Index(pd.concat([h.loc[is_in(h["f"], TXN_SEND), "key"], ends["key"]]).dropna().unique())

    def count(f: str, *types: str) -> pd.Series:
        rows = ends[is_in(ends["f"], f) & is_in(ends["type"], *types)]
        return rows.groupby("key").size().reindex(txns, fill_value=0)

    # A commit invoked and not definitely failed may have taken effect, whether its outcome is `ok`,
    # `info` or missing (a history cut short); an `ok` or `info` without its `invoke` counts too.
    not_all_failed = count(TXN_COMMIT, INVOKE) > count(TXN_COMMIT, FAIL)
    may_have_committed = (count(TXN_COMMIT, OK, INFO) > 0) | not_all_failed
    ended_uncommitted = (count(TXN_ABORT, OK) > 0) | (count(TXN_COMMIT, FAIL) > 0)
    commits = ends[is_in(ends["f"], TXN_COMMIT)]
    return pd.DataFrame(
        {
            "committed": count(TXN_COMMIT, OK) > 0,
            "aborted": ~may_have_committed & ended_uncommitted,
            "first_commit": commits.groupby("key")["index"].min().reindex(txns),
        },
        index=txns,
    )


def _reads_with_isolation(h: pd.DataFrame) -> pd.DataFrame:
    """Every read, with `isolation`: the level named by the latest row of its process that starts reading
    (a consumer's `assign`, the final reader's `final-read` invoke) before it; missing if that row names
    none or there is no such row."""
    assigns = is_in(h["f"], ASSIGN) & is_in(h["type"], OK)
    starts = h[assigns | (is_in(h["f"], FINAL_READ) & is_in(h["type"], INVOKE))]
    starts = pd.DataFrame(
        {
            "process": starts["process"],
            "index": starts["index"].astype("int64"),
            "isolation": pd.array(
                [parse_detail(None if missing(d) else d).get(ISOLATION) for d in starts["detail"]],
                dtype="string",
            ),
        }
    ).sort_values("index")
    reads = h[is_in(h["f"], POLL, FINAL_READ) & is_in(h["type"], OK) & h["value"].notna()]
    reads = reads.assign(index=reads["index"].astype("int64")).sort_values("index")
    return pd.merge_asof(reads, starts, on="index", by="process", direction="backward")


def aborted_reads(t: _Transactions) -> set[str]:
    """Records of aborted transactions that a read_committed reader returned, at any time.

    read_committed returns only records below the last stable offset and filters those of aborted
    transactions (KIP-98), so such a read is never right; "aborted" excludes every transaction a commit
    may have ended (see `_Transactions`), so no indeterminate commit makes one."""
    reads = t.committed_reads()
    aborted = t.outcomes.index[t.outcomes["aborted"]]
    return set(reads.loc[reads["txn"].isin(aborted), "value"])


def uncommitted_reads(t: _Transactions) -> set[str]:
    """Records of transactions not aborted that a read_committed reader returned before their producer
    first asked to commit: a read recorded at a lower index than the transaction's first `txn-commit` row
    of any type, or of a transaction with none.

    Not "before the commit was acknowledged": Kafka answers a commit once the coordinator has logged its
    decision and writes the partitions' commit markers meanwhile or after, so readers may see the records
    before the producer hears back, and a commit whose answer was lost (`info`) may have done the same.
    Nothing commits a transaction before its producer asks, though, and the commit's `invoke` is recorded
    before the request is made, while a read is recorded after the client returned it: a read ordered
    before that row happened before any commit could. Records of aborted transactions are
    `aborted-read`s, whenever they were read."""
    reads = t.committed_reads().merge(t.outcomes, left_on="txn", right_index=True, how="left")
    early = ~true(reads["aborted"]) & (
        reads["first_commit"].isna() | true(reads["index"] < reads["first_commit"])
    )
    return set(reads.loc[early, "value"])


def lost_committed(t: _Transactions) -> set[str]:
    """Records of committed transactions, acknowledged in a partition the final read covered, that no
    reader ever returned (whatever its isolation level: every reader may return a committed record).

    A record whose send was not acknowledged may not be in the log even when its transaction committed,
    so it is never lost here; a partition the final read did not cover says nothing by its absence. The
    final read starts after every producer stopped, so each commit acknowledged lies below its end, and
    only a final read that completed may be trusted for what it did not return (as for `lost-write`)."""
    committed = t.outcomes.index[t.outcomes["committed"]]
    written = t.written[t.written["txn"].isin(committed)].merge(t.covered, on=TP, how="inner")
    return set(written.loc[~written["value"].isin(t.reads["value"]), "value"])


def partial_transactions(t: _Transactions) -> set[str]:
    """Committed transactions the final read returned some records of but not all: at least one of their
    records is in the final read, and at least one acknowledged in a partition it covered is not.

    A commit makes all of a transaction's records visible or none (KIP-98, across partitions); one half
    present and one half gone is what atomicity forbids. A committed transaction with no record in the
    final read at all is not partial: its records are `lost-committed`, those no reader returned during
    the run. Like `lost-committed` and `truncated-read`, it needs the final read to have completed: a
    partition it covered but did not read to the end holds absences that prove nothing."""
    committed = t.outcomes.index[t.outcomes["committed"]]
    finally_read = t.reads.loc[is_in(t.reads["f"], FINAL_READ), "value"]
    records = t.records[t.records["txn"].isin(committed)]
    present = records.loc[records["value"].isin(finally_read), "txn"]
    due = t.written[t.written["txn"].isin(committed)].merge(t.covered, on=TP, how="inner")
    absent = due.loc[~due["value"].isin(finally_read), "txn"]
    return set(present) & set(absent)


def _transaction_ids(t: _Transactions) -> dict[str, set[str]]:
    ids = {
        ABORTED_READ: aborted_reads(t),
        UNCOMMITTED_READ: uncommitted_reads(t),
        LOST_COMMITTED: lost_committed(t),
        PARTIAL_TRANSACTION: partial_transactions(t),
    }
    return {name: {str(i) for i in ids[name]} for name in TRANSACTION_ANOMALY_NAMES}


def reference_transaction_anomaly_ids(history: pd.DataFrame) -> dict[str, set[str]]:
    """Per transaction anomaly, the ids of its occurrences: the record's value, or for
    `partial-transaction` the transaction's id. Every name, empty for a history without transactions
    (`reference_anomaly_ids` leaves them out there, as the Spark checker does)."""
    return _transaction_ids(_Transactions(history))
