"""What a history says about consumer groups, and the Spark passes the group anomalies are cut from
(`kchaos.checkers.anomalies.group_anomalies`): what a group's members were handed against what the group
committed.

They apply only to a history whose readers are members of a consumer group (`--workload group`): a
process is a member of a group when its `assign` or `commit` rows name it (`detail.group`). A history
without members is not checked for them at all — not "none found" — and pays nothing for them: whether
the history has members comes from the summary's one aggregation (`kchaos.checkers.summary`), and the group
passes are built only when it does.

What a group's history says, and what the definitions trust of it:
- a commit (`commit` row) commits, for each partition of its `topic` in `detail.offsets`, the next offset
  the group is to read. Only an `ok` one is certain to have been applied: `fail` was refused, and `info`
  (a timeout) may or may not have been, so nothing is concluded from either;
- every record a member is handed is a `poll` row, written before the member's next commit is: a `sync`
  member commits after recording its batch, and an `auto` member's commit is reported by a callback served
  by its next poll, after it recorded the batch librdkafka stored the offsets of. The history is written in
  order and a harness killed outright loses only its newest rows, so a commit in the history comes with
  every record its member was handed before it. (A member whose thread died mid-batch, a harness error
  logged in `harness.log`, could commit on close what it had not recorded.)

Three passes, cached like the shared ones (`kchaos.checkers.passes.history_passes.Passes.cached`):
- by group and value (`group_values`): acknowledged sends below a committed offset, and every record
  handed to a member, grouped per group and value, first per place. Flags `group_lost` and
  `group_duplicate`;
- each group's `ok` commits of a partition in the order they were asked for and answered
  (`commit_order`). Flag `offset_regression`;
- by group and input value, for a group that processes exactly once (`eos_inputs`): what the final read
  returned of the group's input and of its output (the topics its members wrote in transactions, each
  record naming its input, `kchaos.model.events.output_value`). Flags `eos_lost` and `eos_duplicate`. Built
  only for a history with transactions: the end-to-end anomalies need them (`Anomaly.needs_transactions`).
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from kchaos.checkers.passes.frames import (
    ACK,
    POLL,
    TP,
    TPO,
    HistoryViews,
    count_where,
    is_nemesis,
    is_transactional_record,
)
from kchaos.checkers.passes.history_passes import Passes, flag
from kchaos.checkers.passes.order_passes import with_segment
from kchaos.checkers.rules.anomaly_names import (
    EOS_DUPLICATE,
    EOS_LOST,
    GROUP_DUPLICATE,
    GROUP_LOST,
    OFFSET_REGRESSION,
)
from kchaos.model.events import ASKED_NS, ASSIGN, COMMIT, FINAL_READ, OK, OUTPUT_SEPARATOR

#: The parts of a `commit` row's `detail` the definitions read.
COMMIT_DETAIL = f"struct<group:string,offsets:map<string,bigint>,{ASKED_NS}:bigint>"
GROUP_HASH = "group_value_hash"


def detail_group() -> Column:
    """The group a row's `detail` names (null: none)."""
    return F.get_json_object(F.col("detail"), "$.group")


def names_group() -> Column:
    """An `assign` or `commit` row of a group member: the cheap test the summary counts members by."""
    return F.col("f").isin(ASSIGN, COMMIT) & ~is_nemesis() & detail_group().isNotNull()


def members(history: DataFrame) -> DataFrame:
    """(`group`, `process`): every member of every group, from the rows that name their group."""
    return (
        history.filter(names_group())
        .select(detail_group().alias("group"), "process")
        .filter(F.col("process").isNotNull())
        .distinct()
    )


def ok_commits(history: DataFrame) -> DataFrame:
    """One row per partition an `ok` commit committed: `group`, `process`, topic, partition, `offset` (the
    next offset to read), the commit row's `index`, `time_ns` (when its answer came) and `asked_ns` (when
    it was asked for; the answer's time where the history does not say, `kchaos.model.events.ASKED_NS`)."""
    parsed = F.from_json(F.col("detail"), COMMIT_DETAIL)
    return (
        history.filter((F.col("f") == COMMIT) & (F.col("type") == OK) & ~is_nemesis())
        .select(
            parsed["group"].alias("group"),
            "process",
            "topic",
            "index",
            "time_ns",
            F.coalesce(parsed[ASKED_NS], F.col("time_ns")).alias("asked_ns"),
            F.explode(parsed["offsets"]).alias("committed_partition", "offset"),
        )
        .select(
            "group",
            "process",
            "topic",
            F.col("committed_partition").cast("int").alias("partition"),
            "offset",
            "index",
            "time_ns",
            "asked_ns",
        )
        .filter(F.col("group").isNotNull() & F.col("partition").isNotNull() & F.col("offset").isNotNull())
    )


def has_group_members(history: DataFrame) -> bool:
    """Whether any process of the history is a member of a consumer group (one small Spark job; a check
    knows it from its summary instead)."""
    return bool(history.filter(names_group()).limit(1).count())


# --- the passes -------------------------------------------------------------------------------------------


def _group_members(passes: Passes) -> DataFrame:
    return passes.cached("group_members", lambda views: members(views.history))


def _group_commits(passes: Passes) -> DataFrame:
    return passes.cached("group_commits", lambda views: ok_commits(views.history))


def highest_commits(commits: DataFrame) -> DataFrame:
    """(`group`, topic, partition, `committed`): the highest offset an `ok` commit of each group committed
    for each partition, the position below which every record was handed to it (and, for a group that
    processes exactly once, processed)."""
    return commits.groupBy("group", *TP).agg(F.max("offset").alias("committed"))


def by_group_value(views: HistoryViews, group_members: DataFrame, commits: DataFrame) -> DataFrame:
    """One row per group and value that the group lost or was handed twice.

    Rows: each acknowledged send below the highest offset an `ok` commit of a group committed for its
    partition (one row per such group), and each record handed to a member of a group (with `segment`, the
    member's assignment it was handed under). First per place (group, value, topic-partition-offset), then
    per group and value. Whether a place's deliveries fall in more than one assignment is read from the
    least and greatest member and segment there: two deliveries share an assignment exactly when both
    agree. Flags: `group_lost` (acknowledged below a commit, handed to no member of the group, anywhere)
    and `group_duplicate` (handed to the group's members more than once at one place).
    """
    committed = highest_commits(commits)
    acks = (
        views.rows(ACK)
        .join(F.broadcast(committed), on=list(TP), how="inner")
        .filter(F.col("offset") < F.col("committed"))
        .select(
            "group",
            "kind",
            "process",
            *TPO,
            "value",
            "index",
            "committed",
            F.lit(None).cast("int").alias("segment"),
        )
    )
    handed = (
        with_segment(views.rows(POLL), views)
        .join(F.broadcast(group_members), on="process", how="inner")
        .select(
            "group",
            "kind",
            "process",
            *TPO,
            "value",
            "index",
            F.lit(None).cast("bigint").alias("committed"),
            "segment",
        )
    )
    rows = (
        acks.unionByName(handed).withColumn(GROUP_HASH, F.xxhash64("group", "value")).repartition(GROUP_HASH)
    )
    ack = F.col("kind") == ACK
    poll = F.col("kind") == POLL
    places = rows.groupBy(GROUP_HASH, "group", "value", *TPO).agg(
        count_where(ack).alias("acks_here"),
        count_where(poll).alias("deliveries_here"),
        F.min(F.when(ack, F.col("index"))).alias("ok_index_here"),
        F.max("committed").alias("committed_here"),
        F.min(F.when(poll, F.col("index"))).alias("first_delivery_here"),
        F.max(F.when(poll, F.col("index"))).alias("last_delivery_here"),
        F.min_by(F.when(poll, F.col("process")), F.when(poll, F.col("index"))).alias("first_member_here"),
        F.max_by(F.when(poll, F.col("process")), F.when(poll, F.col("index"))).alias("last_member_here"),
        (
            (F.min(F.when(poll, F.col("process"))) != F.max(F.when(poll, F.col("process"))))
            | (F.min(F.when(poll, F.col("segment"))) != F.max(F.when(poll, F.col("segment"))))
        ).alias("several_assignments_here"),
    )
    twice = F.col("deliveries_here") > 1
    values = places.groupBy(GROUP_HASH, "group", "value").agg(
        F.sum("acks_here").alias("acks"),
        F.sum("deliveries_here").alias("deliveries"),
        F.min("ok_index_here").alias("ok_index"),
        F.max(F.when(F.col("acks_here") > 0, F.col("topic"))).alias("acked_topic"),
        F.max(F.when(F.col("acks_here") > 0, F.col("partition"))).alias("acked_partition"),
        F.max(F.when(F.col("acks_here") > 0, F.col("offset"))).alias("acked_offset"),
        F.max(F.when(F.col("acks_here") > 0, F.col("committed_here"))).alias("committed"),
        F.max(F.when(twice, F.col("deliveries_here"))).alias("most_deliveries"),
        F.min_by(F.when(twice, F.col("partition")), F.when(twice, F.col("first_delivery_here"))).alias(
            "duplicate_partition"
        ),
        F.min_by(F.when(twice, F.col("offset")), F.when(twice, F.col("first_delivery_here"))).alias(
            "duplicate_offset"
        ),
        F.min(F.when(twice, F.col("first_delivery_here"))).alias("first_delivery_index"),
        F.min_by(
            F.when(twice, F.col("first_member_here")), F.when(twice, F.col("first_delivery_here"))
        ).alias("first_member"),
        F.max(F.when(twice, F.col("last_delivery_here"))).alias("last_delivery_index"),
        F.max_by(F.when(twice, F.col("last_member_here")), F.when(twice, F.col("last_delivery_here"))).alias(
            "last_member"
        ),
        F.max(F.coalesce(twice & F.col("several_assignments_here"), F.lit(False)).cast("int")).alias(
            "after_rebalance"
        ),
    )
    flags = {
        flag(GROUP_LOST): (F.col("acks") > 0) & (F.col("deliveries") == 0),
        flag(GROUP_DUPLICATE): F.col("most_deliveries").isNotNull(),
    }
    keep = F.col(flag(GROUP_LOST)) | F.col(flag(GROUP_DUPLICATE))
    return values.select(
        "group",
        "value",
        "ok_index",
        "acked_topic",
        "acked_partition",
        "acked_offset",
        "committed",
        "most_deliveries",
        "duplicate_partition",
        "duplicate_offset",
        "first_delivery_index",
        "first_member",
        "last_delivery_index",
        "last_member",
        (F.col("after_rebalance") == 1).alias("after_rebalance"),
        *(F.coalesce(condition, F.lit(False)).alias(name) for name, condition in flags.items()),
    ).filter(keep)


#: What a commit's example names of the commit it went below.
_EARLIER = ("offset", "index", "process")


def by_commit_order(commits: DataFrame) -> DataFrame:
    """Each group's `ok` commits of a partition, each with the highest offset a commit answered before it
    was asked for committed (`earlier_offset`, and that commit's `earlier_index` and `earlier_process`).
    Flag: `offset_regression`, a commit below it.

    Only such a commit is surely applied before it: the coordinator applies a commit somewhere between its
    request and its answer, so two commits whose spans overlap may have been applied in either order (a
    member frozen with its commit's answer on the way hears it after its successor's commits, although the
    coordinator applied it first). Each commit is two events on one time line per group and partition: its
    answer (`time_ns`, carrying its offset) and its request (`asked_ns`), a request sorted before an answer
    of the same instant; the running maximum of the answers' offsets at a request is the floor that commit
    must not go below. Commits are few (one per batch or per second per member), so this is one small
    window."""
    answers = commits.select(
        "group", *TP, F.col("time_ns").alias("at"), F.lit(1).alias("answer"),
        F.col("offset").alias("answered_offset"), F.col("index").alias("answered_index"),
        F.col("process").alias("answered_process"),
        *(F.lit(None).cast(kind).alias(name) for name, kind in (("offset", "bigint"), ("index", "bigint"),
                                                                ("process", "string"))),
    )  # fmt: skip
    requests = commits.select(
        "group", *TP, F.col("asked_ns").alias("at"), F.lit(0).alias("answer"),
        *(F.lit(None).cast(kind).alias(name) for name, kind in (("answered_offset", "bigint"),
                                                                ("answered_index", "bigint"),
                                                                ("answered_process", "string"))),
        "offset", "index", "process",
    )  # fmt: skip
    before = (
        Window.partitionBy("group", *TP).orderBy("at", "answer").rowsBetween(Window.unboundedPreceding, 0)
    )
    ordered = (
        answers.unionByName(requests)
        .select(
            "*",
            F.max("answered_offset").over(before).alias("earlier_offset"),
            F.max_by("answered_index", "answered_offset").over(before).alias("earlier_index"),
            F.max_by("answered_process", "answered_offset").over(before).alias("earlier_process"),
        )
        .filter(F.col("answer") == 0)
        .select(
            "group", *TP, "offset", "index", "process", "earlier_offset", "earlier_index", "earlier_process"
        )
    )
    regression = F.coalesce(F.col("offset") < F.col("earlier_offset"), F.lit(False))
    return ordered.withColumn(flag(OFFSET_REGRESSION), regression).filter(F.col(flag(OFFSET_REGRESSION)))


def input_of(value: Column) -> Column:
    """The input value an eos output record's value names: all before its last separator, or "" without
    one, as `kchaos.model.events.input_value` reads it."""
    return F.regexp_extract(value, f"(?s)^(.*){OUTPUT_SEPARATOR}", 1)


def by_eos_input(views: HistoryViews, group_members: DataFrame, commits: DataFrame) -> DataFrame:
    """One row per group and input value that the group's output lacks or holds twice.

    A group's output is every topic its members wrote records to in transactions. Rows: each record the
    final read returned from an output (`output`, one per place, naming its input) and each it returned
    from a partition the group committed offsets of, with whether it lies below the highest `ok` commit
    there (`below`). Per group and input value: `outputs`, the places of the output that name it. Flags:
    `eos_lost` (below a commit, named by no output record) and `eos_duplicate` (named at two places or
    more)."""
    outputs = (
        views.history.filter(is_transactional_record())
        .select("process", "topic")
        .distinct()
        .join(F.broadcast(group_members), on="process", how="inner")
        .select("group", "topic")
        .distinct()
    )
    final = views.rows(FINAL_READ)
    written = (
        final.join(F.broadcast(outputs), on="topic", how="inner")
        .select("group", input_of(F.col("value")).alias("input"), *TPO, "index", F.lit(True).alias("output"))
        .dropDuplicates(["group", *TPO])
    )
    committed = highest_commits(commits).join(
        F.broadcast(outputs.select("group").distinct()), on="group", how="inner"
    )
    read = final.join(F.broadcast(committed), on=list(TP), how="inner").select(
        "group", F.col("value").alias("input"), *TPO, "index", F.lit(False).alias("output"), "committed"
    )
    rows = written.withColumn("committed", F.lit(None).cast("bigint")).unionByName(read)
    out = F.col("output")
    inputs = rows.groupBy("group", "input").agg(
        count_where(out).alias("outputs"),
        count_where(~out & (F.col("offset") < F.col("committed"))).alias("below"),
        F.max(F.when(~out, F.col("topic"))).alias("input_topic"),
        F.max(F.when(~out, F.col("partition"))).alias("input_partition"),
        F.max(F.when(~out, F.col("offset"))).alias("input_offset"),
        F.max(F.when(~out, F.col("committed"))).alias("committed"),
        F.max(F.when(~out, F.col("index"))).alias("input_index"),
        F.sort_array(F.collect_list(F.when(out, F.struct("topic", "partition", "offset")))).alias("places"),
    )
    flags = {
        flag(EOS_LOST): (F.col("below") > 0) & (F.col("outputs") == 0),
        flag(EOS_DUPLICATE): F.col("outputs") > 1,
    }
    keep = F.col(flag(EOS_LOST)) | F.col(flag(EOS_DUPLICATE))
    return inputs.select("*", *(condition.alias(name) for name, condition in flags.items())).filter(keep)


def eos_inputs(passes: Passes) -> DataFrame:
    group_members, commits = _group_members(passes), _group_commits(passes)
    return passes.cached("eos_input", lambda views: by_eos_input(views, group_members, commits))


def group_values(passes: Passes) -> DataFrame:
    group_members, commits = _group_members(passes), _group_commits(passes)
    return passes.cached("group_value", lambda views: by_group_value(views, group_members, commits))


def commit_order(passes: Passes) -> DataFrame:
    commits = _group_commits(passes)
    return passes.cached("group_commit_order", lambda views: by_commit_order(commits))
