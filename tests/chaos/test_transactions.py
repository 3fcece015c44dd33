"""Transactions on a real cluster: with the transaction coordinator and a partition leader killed in turn,
read_committed readers return no record of an aborted transaction and every committed transaction is
read whole (KIP-98).

The promise would hold vacuously if no transaction aborted or no aborted record reached the log, so the
test also requires what makes it meaningful: many commits and aborts, and a read_uncommitted reader of
the same run that did return records of aborted transactions, which the read_committed ones had to skip.
The producers write two topics (`--topics 2`), each read at both levels, in gzip-compressed batches, and
their transactions read as they write (`--txn-polls 2`, librdkafka processes), each transaction's consumer
subscribed in a group of its own (`--txn-polls-via subscribe`: its partitions come through the group
coordinator, whose broker the kills may take; the nightly matrix `read-write-transactions` runs `assign`
on both clients): what each read is checked for
the anomalies inside a transaction and the cycles between transactions and their variants, whatever it
finds judged by its rule, and a cycle of reads (a violation at read_committed) fails the test.
"""

from __future__ import annotations

import json

import pandas as pd
import pytest

from kchaos.checkers.rules.anomaly_names import (
    ABORTED_READ,
    CYCLE_CLASSES,
    INT_SEND_SKIP,
    LOST_COMMITTED,
    PARTIAL_TRANSACTION,
    READ_CYCLE_CLASSES,
    UNCOMMITTED_READ,
)
from kchaos.model.events import (
    ASSIGN,
    ISOLATION,
    OK,
    POLL,
    READ_COMMITTED,
    READ_UNCOMMITTED,
    SUBSCRIBED,
    TXN_ABORT,
    TXN_COMMIT,
    TXN_POLL,
    TXN_SEND,
)
from kchaos.model.history_files import history_path
from kchaos.model.written_topics import written_topics
from kchaos.runner.pytest_plugin import ChaosRun
from tests.chaos.promises import assert_promise_kept
from tests.chaos.test_replication_guarantees import DURABLE
from tests.cluster.conftest import nemesis_events
from tests.cluster.fault_steps import QUICK_TIMERS

pytestmark = pytest.mark.cluster


@pytest.mark.chaos(
    **DURABLE, workload="txn", consumers=4, producers=3, topics=2,
    nemesis="kill:target=txn-coordinator,kill:target=leader",
    fault_interval=6.0, fault_duration=8.0, duration=38.0, rate=200.0,
    # A killed broker is fenced after 4 s without heartbeats, not 9: each kill holds its planned 8 s
    # instead of waiting out the session (the run wrote 48 s of its planned 38).
    broker_config=QUICK_TIMERS,
    # Compressed transactional batches (gzip: the codec every client of every release has).
    producer_config={"compression.type": "gzip"},
    # Read-write transactions: each polls its topic up to twice among its sends (issue 49).
    txn_polls=2, txn_polls_via="subscribe",
)  # fmt: skip
def test_killed_coordinators_and_leaders_break_no_transaction_for_read_committed_readers(
    chaos_run: ChaosRun,
) -> None:
    """KIP-98, and the consumer's isolation.level: a read_committed consumer returns only records of
    committed transactions, and a committed transaction's records, across partitions, all or none."""
    outcome = chaos_run()
    events = nemesis_events(outcome)
    stops = events[(events["f"] == "kill") & (events["value"] == "stop")]
    assert [d["spec"] for d in stops["detail"]] == ["kill:target=txn-coordinator", "kill"], stops
    assert all(d["effect_seen_after_s"] is not None for d in stops["detail"]), stops

    history = pd.read_parquet(history_path(outcome.run_dir))
    ends = history[history["f"].isin([TXN_COMMIT, TXN_ABORT]) & (history["type"] == OK)]
    committed = set(ends.loc[ends["f"] == TXN_COMMIT, "key"])
    aborted = set(ends.loc[ends["f"] == TXN_ABORT, "key"]) - committed
    assert len(committed) > 200 and len(aborted) > 40, f"{len(committed)} committed, {len(aborted)} aborted"

    assigns = history[(history["f"] == ASSIGN) & (history["type"] == OK)]
    readers = {f"consumer-{n}" for n in range(4)}
    uncommitted_readers = {
        str(row.process)
        for row in assigns.itertuples()
        if json.loads(str(row.detail))[ISOLATION] == READ_UNCOMMITTED
    }
    # Two topics (`--topics 2`), each read at both levels: consumer-0 and -1 the test topic, -2 and -3 the
    # other, the odd ones read_uncommitted.
    topic = json.loads((outcome.run_dir / "config.json").read_text(encoding="utf-8"))["topic"]
    first, other = written_topics(topic, 2)
    assert uncommitted_readers == {"consumer-1", "consumer-3"}
    read_topics = {str(row.process): str(row.topic) for row in assigns.itertuples() if row.process in readers}
    assert read_topics == {"consumer-0": first, "consumer-1": first, "consumer-2": other, "consumer-3": other}
    records = history[(history["f"] == TXN_SEND) & (history["type"] == OK)]
    polls = history[(history["f"] == POLL) & (history["type"] == OK)]
    for reader in sorted(uncommitted_readers):
        read = read_topics[reader]
        aborted_values = set(records.loc[records["key"].isin(aborted) & (records["topic"] == read), "value"])
        seen_uncommitted = set(polls.loc[polls["process"] == reader, "value"]) & aborted_values
        assert len(seen_uncommitted) > 10, f"{reader} returned almost no aborted record of {read}"
    # The transactions read too, each poll a txn-poll row keyed by the transaction, at read_committed; a
    # cycle of reads alone (wr-cycle) is what read_committed rules out, and assert_promise_kept holds it.
    txn_polls = history[(history["f"] == TXN_POLL) & (history["type"] == OK)]
    assert len(txn_polls) > 100 and txn_polls["key"].notna().all(), len(txn_polls)
    handed = [json.loads(str(row.detail)) for row in assigns.itertuples() if row.process not in readers]
    assert {detail[ISOLATION] for detail in handed} == {READ_COMMITTED}
    # Handed by each transactional producer's own group, which it subscribed in, and no group member's.
    assert all(str(detail.get(SUBSCRIBED, "")).endswith("-reads") for detail in handed), handed
    assert not any("group" in detail for detail in handed), handed
    for name in READ_CYCLE_CLASSES:
        assert outcome.count(name) == 0, outcome.describe()
    tally = outcome.results["topics"]["tally"]
    assert set(tally) == {first, other} and all(t["acknowledged"] > 0 for t in tally.values()), tally

    for name in (ABORTED_READ, UNCOMMITTED_READ, LOST_COMMITTED, PARTIAL_TRANSACTION):
        assert outcome.count(name) == 0, outcome.describe()
    # Kafka promises no order between transactions nor that a transaction's records lie together: what
    # the read-write transactions show of that is permitted by its rule, never a broken promise.
    permitted = tuple(name for name in CYCLE_CLASSES if name not in READ_CYCLE_CLASSES)
    assert_promise_kept(outcome, permitted=(INT_SEND_SKIP, *permitted))
