"""The four passes over a history: each moves the rows once and marks every anomaly it can see.

Anomalies fall into four groupings of the same rows: everything about one value (`lost-write`, `unseen`,
`duplicate`, the `offset-differs` half of `inconsistent-offset`, `truncated-read`); everything at one
topic-partition-offset (`values-differ`, `replica-divergence`); one producer's sends to a partition in
the order it invoked them (`nonmonotonic-send`); one reader's records of a partition in order
(`poll-skip`, `nonmonotonic-poll`). Shuffling tens of millions of rows is what checking costs, so each
grouping is one explicit repartitioning, and every anomaly of the grouping becomes a boolean column of it,
named after the anomaly (`flag`). Replica records, three times the history's, are the exception: only
those of blocks the replica screen (`kchaos.checkers.passes.replica_screen`) cannot settle without moving them
join the by-offset grouping.

Two habits keep the passes fast on two cores:
- groups of the by-value and by-offset passes are aggregated in two levels, first per place (value or
  offset plus what varies inside), then per group, with numeric aggregates only: hash aggregation after an
  explicit repartitioning needs no partial aggregation and no sort, and counting the first level's rows
  counts distinct places or values exactly;
- windows only where order matters (the two order passes), over groups that are large.

Each pass keeps only the rows with a flag set, and is cached: small in any run worth reading, so each
anomaly is then a cheap filter of it. A history breaking the contract that values are unique per send
fails the check (`raise_error`) instead of being guessed at.

The passes themselves live one grouping to a module (`kchaos.checkers.passes.value_pass`,
`kchaos.checkers.passes.order_passes`, `kchaos.checkers.passes.offset_pass`); this module holds `Passes`,
which runs and caches them for one check.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from pyspark.sql import DataFrame

from kchaos.checkers.passes.frames import HistoryViews
from kchaos.checkers.passes.frames import flag as flag
from kchaos.checkers.passes.offset_pass import by_offset
from kchaos.checkers.passes.order_passes import by_poll_order, by_send_order, over_due_records
from kchaos.checkers.passes.read_write.transaction_reads import transaction_reads
from kchaos.checkers.passes.replica_screen import replica_blocks
from kchaos.checkers.passes.transaction_passes import by_record, due_records, outcomes, reader_levels
from kchaos.checkers.passes.value_pass import by_value


@dataclass
class Passes:
    """The passes of one check, by pass name, each run and cached on first use, released by `unpersist`.

    The passes are all the anomalies share: each anomaly is then its own filter of the passes it needs, so
    the first anomaly to need a pass pays for it and the rest find it cached. The anomalies' plans are built
    from several threads at once (`kchaos.checkers.anomalies.findings.count_all`), so each pass is built under
    a lock of its own: one thread builds it, the others wait for it, and different passes are built side by
    side.
    """

    views: HistoryViews
    _cached: dict[str, DataFrame] = field(default_factory=dict)
    _locks: dict[str, threading.RLock] = field(default_factory=dict)
    _guard: threading.Lock = field(default_factory=threading.Lock)

    @property
    def replicas_checked(self) -> bool:
        return self.views.replicas is not None

    @property
    def transactional(self) -> bool:
        return self.views.transactional

    def _get(self, name: str, build: Callable[[HistoryViews], DataFrame]) -> DataFrame:
        with self._guard:
            lock = self._locks.setdefault(name, threading.RLock())
        with lock:  # a pass's build may ask for another (never for itself through another): no cycle
            if name not in self._cached:
                self._cached[name] = build(self.views).cache()
            return self._cached[name]

    def cached(self, name: str, build: Callable[[HistoryViews], DataFrame]) -> DataFrame:
        """A pass defined outside this module (the consumer-group passes,
        `kchaos.checkers.passes.group_passes`), cached and released with the others under `name`."""
        return self._get(name, build)

    def partitions(self) -> DataFrame:
        """Per topic-partition summary (`HistoryViews.partitions`): tiny, used by a pass and by examples."""
        return self._get("partitions", lambda views: views.partitions)

    def value(self) -> DataFrame:
        self.partitions()  # cached first, so the pass below reads it from memory
        return self._get("value", by_value)

    def send_order(self) -> DataFrame:
        return self._get("send_order", by_send_order)

    def poll_order(self) -> DataFrame:
        if not self.transactional:
            return self._get("poll_order", by_poll_order)
        due = due_records(self.views, self.outcomes())
        levels = self.levels()
        return self._get("poll_order", lambda views: over_due_records(by_poll_order(views), due, levels))

    def outcomes(self) -> DataFrame:
        """How each transaction ended (`kchaos.checkers.passes.transaction_passes.outcomes`): one row per
        transaction."""
        return self._get("outcomes", lambda views: outcomes(views.history))

    def transaction_reads(self) -> DataFrame:
        """What each transaction read (`kchaos.checkers.passes.read_write.transaction_reads`): the checks
        inside a transaction and the dependency edges each read it, and an eos history's batches take two
        scans and a window to find, so it is built once."""
        return self._get("transaction_reads", lambda views: transaction_reads(views.history))

    def levels(self) -> DataFrame:
        """Each reader's start rows and the isolation levels they name: a few rows per reader."""
        return self._get("levels", lambda views: reader_levels(views.history))

    def transactions(self) -> DataFrame:
        """The by-record pass of the transaction anomalies
        (`kchaos.checkers.passes.transaction_passes.by_record`); only for a transactional history."""
        self.partitions()
        return self._get(
            "transactions",
            lambda views: by_record(views, self.outcomes(), self.levels(), self.partitions()),
        )

    def replica_blocks(self) -> DataFrame | None:
        """The replicas' per-block summary (`kchaos.checkers.passes.replica_screen`), None without replica
        dumps: small, and read twice (for the ranges and for the blocks to compare), so cached once."""
        replicas = self.views.replicas
        if replicas is None:
            return None
        return self._get("replica_blocks", lambda views: replica_blocks(replicas))

    def offset(self) -> DataFrame:
        return self._get("offset", lambda views: by_offset(views, self.replica_blocks()))

    def unpersist(self) -> None:
        for frame in self._cached.values():
            frame.unpersist()
        self._cached.clear()
