"""Every reader sets its isolation level instead of inheriting the client's default (read_committed in
librdkafka, read_uncommitted in Java's consumer), as the run's configuration chose it per reader: what a
reader may return depends on it, and the transaction checks read it from the reader's `assign` rows."""

from __future__ import annotations

from pathlib import Path

from kchaos.model.config import load_config
from kchaos.model.history import HistoryWriter
from kchaos.model.run_files import RunDir
from kchaos.workloads.in_harness.consumer import ConsumerWorkload, isolation_of
from kchaos.workloads.in_harness.group_consumer import GroupWorkload


def test_readers_take_the_isolation_level_the_run_chose_for_each(tmp_path: Path) -> None:
    history = HistoryWriter(RunDir(tmp_path), "isolation")
    try:
        txn = load_config(workload="txn", consumers=3)
        assigned = ConsumerWorkload(txn, "127.0.0.1:1", history)
        levels = [isolation_of(reader.settings) for reader in assigned.readers]  # type: ignore[attr-defined]
        assert levels == ["read_committed", "read_uncommitted", "read_committed"]
        group = load_config(workload="group", consumers=2, isolation="read_uncommitted")
        members = GroupWorkload(group, "127.0.0.1:1", history)
        levels = [isolation_of(member.settings) for member in members.readers]  # type: ignore[attr-defined]
        assert levels == ["read_uncommitted", "read_uncommitted"]
        plain = ConsumerWorkload(load_config(consumers=1), "127.0.0.1:1", history)
        assert [isolation_of(r.settings) for r in plain.readers] == ["read_committed"]  # type: ignore[attr-defined]
    finally:
        history.finish()
