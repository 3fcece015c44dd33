"""The pandas reference's transaction anomalies against histories whose ground truth is stated by hand.

No Spark here: the Spark checker does not define these anomalies yet, and the reference is the definition
it will be held to. Every scenario also holds what must *not* be found (indeterminate commits, readers of
the other or an unknown isolation level, partitions the final read did not cover), so a definition that
judged those would fail as surely as one that missed a planted anomaly.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from kchaos.checkers.rules.anomaly_names import (
    ABORTED_READ,
    LOST_COMMITTED,
    PARTIAL_TRANSACTION,
    TRANSACTION_ANOMALY_NAMES,
    UNCOMMITTED_READ,
)
from kchaos.model.events import INFO, OK, TXN_ABORT, TXN_COMMIT
from kchaos.model.history import HistoryWriter
from kchaos.model.history_files import history_path
from kchaos.model.run_files import RunDir
from tests.canned_histories import SCENARIOS
from tests.histories import RC, HistoryBuilder
from tests.reference.anomalies import reference_anomaly_ids
from tests.reference.transactions import reference_transaction_anomaly_ids
from tests.transaction_histories import TRANSACTION_SCENARIOS, txn_lost_scenario

NOTHING = {name: set[str]() for name in TRANSACTION_ANOMALY_NAMES}


@pytest.mark.parametrize("name", TRANSACTION_SCENARIOS)
def test_reference_finds_exactly_the_stated_transaction_anomalies(name: str) -> None:
    scenario = TRANSACTION_SCENARIOS[name]()
    assert reference_transaction_anomaly_ids(scenario.history.pandas()) == scenario.expected_transaction_ids()


@pytest.mark.parametrize("name", SCENARIOS)
def test_histories_without_transactions_have_no_transaction_anomalies(name: str) -> None:
    """Plain sends are no transaction's records, whatever became of them."""
    assert reference_transaction_anomaly_ids(SCENARIOS[name]().history.pandas()) == NOTHING


def test_transactional_records_are_not_acknowledged_sends() -> None:
    """An aborted transaction's records, acknowledged into the log and never read, are no `lost-write` or
    `unseen`: whether readers may see them is the transaction's to decide, not the send's."""
    scenario = TRANSACTION_SCENARIOS["txn-lost"]()
    ids = reference_anomaly_ids(scenario.history.pandas())
    assert ids["lost-write"] == set() and ids["unseen"] == set()


def test_a_read_recorded_between_asking_to_commit_and_the_answer_is_not_early() -> None:
    """Kafka may write the commit markers before the producer hears back, so a read_committed reader can
    return the records first; only a read before the commit was asked for is an `uncommitted-read`."""
    h = HistoryBuilder()
    h.assign(isolation=RC)
    h.transaction("t", [("early", 0, 0), ("between", 0, 1)])
    h.read("early", 0)
    h.txn_end(TXN_COMMIT, "t", outcome=None)
    h.read("between", 1)
    h.event("producer-0", OK, TXN_COMMIT, key="t")
    assert reference_transaction_anomaly_ids(h.pandas()) == {**NOTHING, UNCOMMITTED_READ: {"early"}}


@pytest.mark.parametrize("commit", [INFO, None], ids=["indeterminate", "unanswered"])
def test_a_commit_that_may_have_happened_makes_no_aborted_read(commit: str | None) -> None:
    """Whatever the abort afterwards said, and a read_committed reader then returned the records."""
    h = HistoryBuilder()
    h.assign(isolation=RC)
    h.transaction("t", [("maybe", 0, 0)])
    h.txn_end(TXN_COMMIT, "t", outcome=INFO if commit == INFO else None)
    h.txn_end(TXN_ABORT, "t")
    h.read("maybe", 0)
    h.final_read_start(isolation=RC)
    assert reference_transaction_anomaly_ids(h.pandas()) == NOTHING


def test_the_same_records_read_after_a_definite_abort_are_aborted_reads() -> None:
    """The counterpart of the test above: with the commit never asked for, the acknowledged abort decides."""
    h = HistoryBuilder()
    h.assign(isolation=RC)
    h.transaction("t", [("gone", 0, 0)])
    h.txn_end(TXN_ABORT, "t")
    h.read("gone", 0)
    assert reference_transaction_anomaly_ids(h.pandas()) == {**NOTHING, ABORTED_READ: {"gone"}}


def test_a_transaction_spanning_partitions_is_partial_when_one_partition_lost_its_records() -> None:
    h = HistoryBuilder()
    h.transaction("t", [("p0", 0, 0), ("p1", 1, 0), ("p2", 2, 0)])
    h.txn_end(TXN_COMMIT, "t")
    for partition in range(3):
        h.final_read_start(partition=partition, isolation=RC)
    h.final_read("p0", 0)
    h.final_read("p2", 0, partition=2)
    expected = {**NOTHING, PARTIAL_TRANSACTION: {"t"}, LOST_COMMITTED: {"p1"}}
    assert reference_transaction_anomaly_ids(h.pandas()) == expected


def test_without_a_final_read_nothing_is_lost() -> None:
    """Absence proves nothing where the final read never went: no partition covered, no loss."""
    h = HistoryBuilder()
    h.transaction("t", [("a", 0, 0), ("b", 1, 0)])
    h.txn_end(TXN_COMMIT, "t")
    assert reference_transaction_anomaly_ids(h.pandas()) == NOTHING


def test_the_reference_reads_transactions_from_a_run_directory(tmp_path: Path) -> None:
    """Through a real writer and Parquet (nullable integers, `detail` as JSON text) the ids are the same."""
    scenario = txn_lost_scenario()
    writer = HistoryWriter(RunDir(tmp_path), "parquet-test")
    scenario.history.replay(writer)
    writer.finish()
    history = pd.read_parquet(history_path(tmp_path))
    assert reference_transaction_anomaly_ids(history) == scenario.expected_transaction_ids()


def test_a_value_written_in_two_transactions_is_refused() -> None:
    """A value must name one record of one transaction; otherwise every verdict on it is a guess."""
    h = HistoryBuilder()
    h.transaction("t1", [("twice", 0, 0)])
    h.transaction("t2", [("twice", 0, 1)])
    with pytest.raises(ValueError, match="twice"):
        reference_transaction_anomaly_ids(h.pandas())


def test_a_transactional_record_without_its_transaction_is_refused() -> None:
    h = HistoryBuilder()
    h.event("producer-0", "invoke", "txn-send", topic="kchaos", partition=0, value="orphan")
    with pytest.raises(ValueError, match="names no transaction"):
        reference_transaction_anomaly_ids(h.pandas())


def test_a_clean_transactional_history_has_none_of_the_other_anomalies() -> None:
    """The definitions written for plain sends must learn transactional topics before a `txn` run is
    judged by them: this history is clean."""
    ids = reference_anomaly_ids(TRANSACTION_SCENARIOS["txn-clean"]().history.pandas())
    assert {name: found for name, found in ids.items() if found} == {}
