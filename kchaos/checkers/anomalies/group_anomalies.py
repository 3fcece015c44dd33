"""The consumer-group anomalies (docs/anomalies.md, "Consumer-group anomalies") on Spark, each cut from the
group passes (`kchaos.checkers.passes.group_passes`, which says what a group's history is trusted for), with
how their examples are completed. They apply only to a history whose readers are members of a consumer group;
the pandas reference they are tested against is `tests.reference.groups`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from kchaos.checkers.anomalies.definition import Anomaly, Occurrences
from kchaos.checkers.anomalies.examples import Example, Explainer, Records, Wanted
from kchaos.checkers.passes.frames import (
    POLL,
)

#: The parts of a `commit` row's `detail` the definitions read.
from kchaos.checkers.passes.group_passes import commit_order, eos_inputs, group_values
from kchaos.checkers.passes.history_passes import Passes, flag
from kchaos.checkers.rules.anomaly_names import (
    AFTER_REBALANCE,
    EOS_DUPLICATE,
    EOS_LOST,
    GROUP_DUPLICATE,
    GROUP_LOST,
    OFFSET_REGRESSION,
    WITHIN_ASSIGNMENT,
)
from kchaos.model.events import FINAL_READ


def _wants_place(example: Example, wanted: Wanted) -> None:
    if example.get("partition") is not None and example.get("offset") is not None:
        wanted.offsets.add((example["partition"], example["offset"]))


def _with_reads_there(example: Example, records: Records) -> Example:
    """Who read what at the acknowledged offset: the members' polls and the final read."""
    there = records.at(example.get("topic"), example.get("partition"), example.get("offset"))
    return {
        **example,
        "handed_there": [
            {"process": r["process"], "value": r["value"], "index": r["index"]}
            for r in sorted(there, key=lambda r: r["index"])
            if r["kind"] == POLL
        ],
        "final_read_there": sorted({r["value"] for r in there if r["kind"] == FINAL_READ}),
    }


#: A `group-lost` example with what was read at the offset instead.
READ_THERE = Explainer(_wants_place, _with_reads_there)


def group_lost(passes: Passes) -> list[Occurrences]:
    """`group-lost`: an acknowledged send at an offset below one an `ok` commit of a group committed for
    its partition, whose value no member of that group was ever handed (at any offset).

    The commit says the group was past the record; members commit only offsets of records they were
    handed and start from the group's committed offset, so some member should have been handed it. The
    example shows what members and the final read returned at that offset instead."""
    frame = (
        group_values(passes)
        .filter(F.col(flag(GROUP_LOST)))
        .select(
            F.col("value").alias("id"),
            "group",
            "value",
            F.col("acked_topic").alias("topic"),
            F.col("acked_partition").alias("partition"),
            F.col("acked_offset").alias("offset"),
            "committed",
            "ok_index",
        )
    )
    return [Occurrences(frame, ("ok_index", "value"), READ_THERE)]


def group_duplicates(passes: Passes) -> list[Occurrences]:
    """`group-duplicate`: a value the members of one group were handed more than once at the same
    topic-partition-offset — one record delivered to the group again. A value at two offsets of the log
    is a `duplicate`, not this. `kind`: `after-rebalance` when the deliveries at a place fall in more than
    one assignment (another member, or the same one reassigned), else `within-assignment`."""
    frame = (
        group_values(passes)
        .filter(F.col(flag(GROUP_DUPLICATE)))
        .select(
            F.col("value").alias("id"),
            "group",
            "value",
            F.when(F.col("after_rebalance"), F.lit(AFTER_REBALANCE))
            .otherwise(F.lit(WITHIN_ASSIGNMENT))
            .alias("kind"),
            F.col("duplicate_partition").alias("partition"),
            F.col("duplicate_offset").alias("offset"),
            F.col("most_deliveries").alias("deliveries"),
            "first_member",
            "first_delivery_index",
            "last_member",
            "last_delivery_index",
        )
    )
    return [Occurrences(frame, ("first_delivery_index", "value"))]


def group_duplicate_kinds(passes: Passes) -> DataFrame:
    """(`kind`, `count`) of `group-duplicate`: each value once, `after-rebalance` if it was redelivered
    after a rebalance in any group."""
    frame = group_duplicates(passes)[0].frame
    return (
        frame.groupBy("id")
        .agg(F.max(F.col("kind") == AFTER_REBALANCE).alias("after"))
        .groupBy(F.when(F.col("after"), AFTER_REBALANCE).otherwise(WITHIN_ASSIGNMENT).alias("kind"))
        .count()
    )


def offset_regressions(passes: Passes) -> list[Occurrences]:
    """`offset-regression`: an `ok` commit of a partition below the highest offset an earlier `ok` commit
    of the same group committed for it (by index). kchaos never resets a group's offsets, and a group new
    to a partition has nothing earlier. The example shows both commits: who, at which index, what offset."""
    frame = commit_order(passes).select(
        F.concat(F.col("topic"), F.lit("/"), F.col("partition"), F.lit("@"), F.col("index")).alias("id"),
        "group",
        "topic",
        "partition",
        "offset",
        "process",
        "index",
        "earlier_offset",
        "earlier_process",
        "earlier_index",
        (F.col("earlier_offset") - F.col("offset")).alias("back_by"),
    )
    return [Occurrences(frame, ("index", "partition"))]


def _eos_occurrences(passes: Passes, anomaly: str, *more: Column | str) -> list[Occurrences]:
    """An end-to-end anomaly's occurrences: one per group and input value, placed where the final read
    returned the input (null when it did not), with `more` columns."""
    frame = (
        eos_inputs(passes)
        .filter(F.col(flag(anomaly)))
        .select(
            F.col("input").alias("id"),
            "group",
            F.col("input").alias("value"),
            F.col("input_topic").alias("topic"),
            F.col("input_partition").alias("partition"),
            F.col("input_offset").alias("offset"),
            F.coalesce(F.col("input_index"), F.lit(-1)).alias("final_read_index"),
            *more,
        )
    )
    return [Occurrences(frame, ("final_read_index", "value"))]


def eos_lost(passes: Passes) -> list[Occurrences]:
    """`eos-lost`: an input record the final read returned at an offset below the highest one an `ok`
    commit of a group that processes exactly once committed for its partition, which no record the final
    read returned from the group's output names.

    The group's offsets are committed in the transaction that writes the output of the records below
    them, so a commit past a record says its output was committed, in that transaction or an earlier
    one; a read_committed final read returns every committed record."""
    return _eos_occurrences(passes, EOS_LOST, "committed")


def eos_duplicates(passes: Passes) -> list[Occurrences]:
    """`eos-duplicate`: an input record that records at two places or more of a group's output name, in a
    read_committed final read: it was processed, and its output committed, more than once. `partition`
    and `offset` are the input's (null when the final read did not return it); `output_places` where its
    output records are."""
    return _eos_occurrences(passes, EOS_DUPLICATE, "outputs", F.col("places").alias("output_places"))


def _anomaly(name: str, occurrences: Callable[[Passes], list[Occurrences]], **more: Any) -> Anomaly:
    """Counted per partition: a truncation can cause `group-lost` and `offset-regression`, so after a
    power loss each partition is judged by what the loss did to its own replicas."""
    return Anomaly(name, occurrences, by_partition=True, **more)


#: The consumer-group anomalies, in report order (`kchaos.checkers.rules.anomaly_names.GROUP_ANOMALY_NAMES`).
GROUP_ANOMALIES: dict[str, Anomaly] = {
    anomaly.name: anomaly
    for anomaly in (
        _anomaly(GROUP_LOST, group_lost),
        _anomaly(GROUP_DUPLICATE, group_duplicates, by_kind=group_duplicate_kinds),
        _anomaly(OFFSET_REGRESSION, offset_regressions),
        _anomaly(EOS_LOST, eos_lost, needs_transactions=True),
        _anomaly(EOS_DUPLICATE, eos_duplicates, needs_transactions=True),
    )
}
