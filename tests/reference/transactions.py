"""The transaction anomalies in plain pandas: the reference `kchaos.checkers.passes.transaction_passes` is
tested against.

Like `tests.reference.anomalies`, written for reading: each definition follows docs/anomalies.md's wording
("Transaction anomalies"), so a disagreement with the Spark checker points at one of the two.
"""

from __future__ import annotations

import pandas as pd

from kchaos.checkers.rules.anomaly_names import (
    ABORTED_READ,
    LOST_COMMITTED,
    PARTIAL_TRANSACTION,
    TRANSACTION_ANOMALY_NAMES,
    UNCOMMITTED_READ,
)
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
    TXN_ABORT,
    TXN_COMMIT,
    TXN_SEND,
)
from kchaos.model.history_schema import parse_detail
from tests.reference.frames import INTEGERS, STRINGS, TP, TPO, is_in, missing, normalized, true


class Transactions:
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
        h = normalized(history, (*STRINGS, "key"), INTEGERS)
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
    """Per transaction id (the index): `committed`, `aborted` (as `Transactions` defines them) and
    `first_commit`, the `time_ns` of its earliest `txn-commit` row of any type (missing: none)."""
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
            "first_commit": commits.groupby("key")["time_ns"].min().reindex(txns),
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


def aborted_reads(t: Transactions) -> set[str]:
    """Records of aborted transactions that a read_committed reader returned, at any time.

    read_committed returns only records below the last stable offset and filters those of aborted
    transactions (KIP-98), so such a read is never right; "aborted" excludes every transaction a commit
    may have ended (see `Transactions`), so no indeterminate commit makes one."""
    reads = t.committed_reads()
    aborted = t.outcomes.index[t.outcomes["aborted"]]
    return set(reads.loc[reads["txn"].isin(aborted), "value"])


def uncommitted_reads(t: Transactions) -> set[str]:
    """Records of transactions not aborted that a read_committed reader returned before their producer
    first asked to commit: a read stamped (`time_ns`) before the transaction's earliest `txn-commit` row
    of any type, or of a transaction with none.

    Not "before the commit was acknowledged": Kafka answers a commit once the coordinator has logged its
    decision and writes the partitions' commit markers meanwhile or after, so readers may see the records
    before the producer hears back, and a commit whose answer was lost (`info`) may have done the same.
    Nothing commits a transaction before its producer asks, though, and the commit's `invoke` is recorded
    before the request is made, while a read is recorded after the client returned it: a read stamped
    before that row happened before any commit could. Stamps, not indexes: a client process's rows are
    recorded when its line arrives but stamped when it printed it, on the host's one monotonic clock
    (`kchaos.model.stamped_rows`), so a read may be recorded before the commit it followed. Records of
    aborted transactions are `aborted-read`s, whenever they were read."""
    reads = t.committed_reads().merge(t.outcomes, left_on="txn", right_index=True, how="left")
    early = ~true(reads["aborted"]) & (
        reads["first_commit"].isna() | true(reads["time_ns"] < reads["first_commit"])
    )
    return set(reads.loc[early, "value"])


def lost_committed(t: Transactions) -> set[str]:
    """Records of committed transactions, acknowledged in a partition the final read covered, that no
    reader ever returned (whatever its isolation level: every reader may return a committed record).

    A record whose send was not acknowledged may not be in the log even when its transaction committed,
    so it is never lost here; a partition the final read did not cover says nothing by its absence. The
    final read starts after every producer stopped, so each commit acknowledged lies below its end, and
    only a final read that completed may be trusted for what it did not return (as for `lost-write`)."""
    committed = t.outcomes.index[t.outcomes["committed"]]
    written = t.written[t.written["txn"].isin(committed)].merge(t.covered, on=TP, how="inner")
    return set(written.loc[~written["value"].isin(t.reads["value"]), "value"])


def partial_transactions(t: Transactions) -> set[str]:
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


def transaction_ids(t: Transactions) -> dict[str, set[str]]:
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
    return transaction_ids(Transactions(history))
