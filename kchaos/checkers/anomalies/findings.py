"""Finding the anomalies in a history: per anomaly, how often it occurred and its first occurrences.

Every finding is derived from the anomaly's occurrences (`kchaos.checkers.anomalies.registry`) the same way:
the number of distinct ids, and the first `max_examples` occurrences in their order. Each anomaly is cut from
the passes it needs (`kchaos.checkers.passes.history_passes.Passes`, the only state the anomalies share,
computed once). Every Spark job costs a fixed tenth of a second or more however small the history, so every
anomaly's count and per-partition counts are asked in one job. Only the examples then reach the driver, and
the history records they point at are fetched for all anomalies in one lookup
(`kchaos.checkers.anomalies.examples`), since each lookup scans the whole history.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from functools import reduce
from itertools import chain, zip_longest
from typing import Any

from pyspark.sql import DataFrame, Row
from pyspark.sql import functions as F

from kchaos.checkers.anomalies.cycle_anomalies import CYCLE_ANOMALIES
from kchaos.checkers.anomalies.definition import UNKNOWN_PARTITION, Anomaly, Occurrences, partition_key
from kchaos.checkers.anomalies.examples import Example, Records, Wanted, look_up
from kchaos.checkers.anomalies.group_anomalies import GROUP_ANOMALIES
from kchaos.checkers.anomalies.internal_anomalies import INTERNAL_ANOMALIES
from kchaos.checkers.anomalies.registry import ANOMALIES
from kchaos.checkers.passes.frames import HistoryViews
from kchaos.checkers.passes.group_passes import has_group_members
from kchaos.checkers.passes.history_passes import Passes
from kchaos.checkers.passes.read_write.transaction_reads import has_transaction_reads


@dataclass(frozen=True)
class AnomalyFinding:
    """How often one anomaly occurred in a history, with the first few occurrences spelled out.

    `count` is None (and `checked` False) when the history lacks what the anomaly is judged from — replica
    dumps for `replica-divergence` — so "not checked" can never be read as "none found". `by_partition`
    (`lost-write` and `unseen` only, else None) breaks the count down by the partition the write was
    acknowledged in: examples are capped, and whether losses gather where the faults struck is the first
    thing a reader asks.
    """

    name: str
    count: int | None
    examples: list[Example] = field(default_factory=list)
    checked: bool = True
    by_partition: dict[str, int] | None = None
    #: Its count by kind of occurrence, for anomalies that have them (`Anomaly.by_kind`) and occurred.
    by_kind: dict[str, int] | None = None


#: The steps of a check besides each anomaly's own (its first occurrences): counting every anomaly, which
#: computes the passes, and looking up the records all examples point at.
COUNTS = "counts"
EXAMPLE_RECORDS = "example-records"

#: Wraps each step of a check, named by the anomaly it computes (or `EXAMPLE_RECORDS`): lets a caller (the
#: benchmark) time each step and name its Spark jobs without the check knowing.
Stage = Callable[[str], AbstractContextManager[Any]]


def _unstaged(name: str) -> AbstractContextManager[Any]:
    return nullcontext()


@dataclass(frozen=True)
class Draft:
    """One anomaly's own work: its count and first occurrences, their examples not yet completed."""

    anomaly: Anomaly
    count: int
    firsts: list[tuple[Occurrences, list[Example]]]
    by_partition: dict[str, int] | None
    by_kind: dict[str, int] | None = None

    def wants(self, wanted: Wanted) -> None:
        for part, examples in self.firsts:
            if part.explainer is not None:
                for example in examples:
                    part.explainer.wants(example, wanted)

    def finding(self, records: Records, max_examples: int) -> AnomalyFinding:
        """The examples completed from `records`; those of several kinds of occurrence alternate."""
        explained = [
            [part.explainer.add(e, records) for e in examples] if part.explainer else examples
            for part, examples in self.firsts
        ]
        merged = [e for e in chain.from_iterable(zip_longest(*explained)) if e is not None]
        return AnomalyFinding(
            self.anomaly.name,
            self.count,
            merged[:max_examples],
            by_partition=self.by_partition,
            by_kind=self.by_kind,
        )


@dataclass(frozen=True)
class Counts:
    """Every anomaly's number of distinct ids, and the per-partition counts of those that have them."""

    total: dict[str, int]
    by_partition: dict[str, dict[str, int]]


#: How many threads build the anomalies' plans at once. Building a plan is a few thousand calls into the
#: JVM for a whole check, each a round trip of a tenth of a millisecond or more that mostly waits; three
#: threads took a default run's plan building from about 1.2 s to 0.9 s on two cores.
PLAN_BUILDERS = 3


def count_all(anomalies: list[Anomaly], passes: Passes, by_topic: bool = False) -> Counts:
    """Every anomaly's count and per-partition counts, in one Spark job.

    Each job costs a fixed tenth of a second or more however small the history, which an ordinary run's
    check would otherwise pay two or three times per anomaly; the passes they share are computed once
    either way. Each stage has a fixed cost too, so the ids of every anomaly are one union, counted by
    anomaly and by anomaly and partition in two aggregations (an aggregation per anomaly made about 30 of
    the 50 stages of a default run's job). Per-partition keys come in partition order (`unknown` first,
    where Spark's ascending order puts a null). `by_topic`: the run wrote several topics, so a key is
    `<topic>/<partition>` (`kchaos.checkers.anomalies.definition.partition_key`), topic by topic.
    """
    with ThreadPoolExecutor(PLAN_BUILDERS, thread_name_prefix="plans") as pool:
        built = list(pool.map(lambda anomaly: anomaly.ids(passes), anomalies))  # in report order
    ids = reduce(DataFrame.union, [frame for frames in built for frame in frames])
    totals = ids.groupBy("anomaly").agg(F.count_distinct("id").alias("count"))
    topic = F.col("topic") if by_topic else F.lit(None).cast("string")
    per_partition = (
        ids.filter(F.col("by_partition"))
        .groupBy("anomaly", topic.alias("topic"), "partition")
        .agg(F.count_distinct("id").alias("count"))
    )
    rows = (
        totals.select(
            "anomaly",
            F.lit(None).cast("string").alias("topic"),
            F.lit(None).cast("int").alias("partition"),
            "count",
            F.lit(True).alias("total"),
        )
        .union(per_partition.select("anomaly", "topic", "partition", "count", F.lit(False).alias("total")))
        .collect()
    )
    total = dict.fromkeys((anomaly.name for anomaly in anomalies), 0)
    by_partition: dict[str, dict[str, int]] = {a.name: {} for a in anomalies if a.by_partition}

    def order(row: Row) -> tuple[str, bool, int]:
        return (row["topic"] or "", row["partition"] is not None, row["partition"] or 0)

    for row in sorted(rows, key=order):
        if row["total"]:
            total[row["anomaly"]] = int(row["count"])
        else:
            key = partition_key(row["partition"], (row["topic"] or UNKNOWN_PARTITION) if by_topic else None)
            by_partition[row["anomaly"]][key] = int(row["count"])
    return Counts(total, by_partition)


def draft(anomaly: Anomaly, count: int, by_partition: dict[str, int] | None, passes: Passes,
          max_examples: int) -> Draft:  # fmt: skip
    """The anomaly's first occurrences (none when it has none), beside its count; and its count by kind,
    where it has kinds and occurred (one small job over its cached pass)."""
    firsts: list[tuple[Occurrences, list[Example]]] = []
    if count and max_examples > 0:
        for part in anomaly.occurrences(passes):
            rows = part.frame.orderBy(*part.order).limit(max_examples).collect()
            firsts.append((part, [row.asDict(recursive=True) for row in rows]))
    by_kind: dict[str, int] | None = None
    if anomaly.by_kind is not None:
        kinds = anomaly.by_kind(passes).collect() if count else []
        by_kind = {str(row["kind"]): int(row["count"]) for row in sorted(kinds, key=lambda row: row["kind"])}
    return Draft(anomaly, count, firsts, by_partition, by_kind)


def applicable(groups: bool, rw_transactions: bool = False) -> dict[str, Anomaly]:
    """The anomalies a history is checked for, in report order: every history for `ANOMALIES`, one whose
    readers are consumer-group members (`groups`) for the group anomalies too, and one whose transactions
    polled (`rw_transactions`) for the read-write transaction anomalies after them."""
    return {
        **ANOMALIES,
        **(GROUP_ANOMALIES if groups else {}),
        **(INTERNAL_ANOMALIES | CYCLE_ANOMALIES if rw_transactions else {}),
    }


def find_anomalies_in(
    passes: Passes,
    max_examples: int,
    stage: Stage = _unstaged,
    groups: bool = False,
    by_topic: bool = False,
    rw_transactions: bool = False,
) -> dict[str, AnomalyFinding]:
    """Every anomaly's finding, in report order: all counts, per-partition ones included, in one step
    (`COUNTS`, which computes the passes), each found anomaly's first occurrences, then one lookup for
    the examples. The group anomalies are found, and named, only when `groups` says the history has group
    members: they do not apply to one without, and its check builds none of their passes.

    An anomaly the history cannot be checked for (`Anomaly.is_checked`: no replica dumps, no transactions)
    is reported as not checked. `by_topic`: the run wrote several topics (`count_all`); `rw_transactions`:
    its transactions polled, so the read-write transaction anomalies apply.
    """
    anomalies = applicable(groups, rw_transactions)
    checked = [anomaly for anomaly in anomalies.values() if anomaly.is_checked(passes)]
    with stage(COUNTS):
        counts = count_all(checked, passes, by_topic)
    drafts: dict[str, Draft] = {}
    for anomaly in checked:
        count, by_partition = counts.total[anomaly.name], counts.by_partition.get(anomaly.name)
        with stage(anomaly.name):
            drafts[anomaly.name] = draft(anomaly, count, by_partition, passes, max_examples)
    wanted = Wanted()
    for each in drafts.values():
        each.wants(wanted)
    with stage(EXAMPLE_RECORDS):
        records = look_up(passes, wanted) if any(d.firsts for d in drafts.values()) else Records()
    return {
        name: drafts[name].finding(records, max_examples)
        if name in drafts
        else AnomalyFinding(name, None, checked=False)
        for name in anomalies
    }


def find_anomalies(
    history: DataFrame,
    max_examples: int = 10,
    replicas: DataFrame | None = None,
    stage: Stage = _unstaged,
    transactional: bool | None = None,
    groups: bool | None = None,
    by_topic: bool = False,
    rw_transactions: bool | None = None,
) -> dict[str, AnomalyFinding]:
    """Finds every anomaly in one history (and its replica dumps, when the run has them). `transactional`:
    whether records were written in transactions, when the caller knows (None: asked of the history).
    `groups`: whether the history has consumer-group members, when the caller knows (a check does, from
    its summary); None asks the history, one small Spark job. `by_topic`: the run wrote several topics
    (`--topics`), so the per-partition counts name each partition's topic. `rw_transactions`: whether its
    transactions read (`txn-poll` rows, or an eos processor's batches), when the caller knows (a check
    does, from its summary); None asks the history."""
    if groups is None:
        groups = has_group_members(history)
    if rw_transactions is None:
        rw_transactions = has_transaction_reads(history)
    passes = Passes(HistoryViews.of(history, replicas, transactional))
    try:
        return find_anomalies_in(passes, max_examples, stage, groups, by_topic, rw_transactions)
    finally:
        passes.unpersist()
