"""Checking a run directory end to end: history in, `results.json` out.

This is the seam between the harness and the checkers: it only needs the run directory, so a run can be
re-checked later (after a checker fix, or for a history left behind by a crashed harness) without Kafka.
"""

from __future__ import annotations

import datetime as dt
import json
import math
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame

from kchaos.checkers.anomalies.findings import Stage, find_anomalies
from kchaos.checkers.delivery_timeout import delivery_timeout
from kchaos.checkers.faults import (
    FaultInterval,
    fault_application,
    fault_intervals,
    fault_kinds,
    max_concurrent_crashed,
    nemesis_events,
)
from kchaos.checkers.lost_count import headline_lost
from kchaos.checkers.passes.frames import (
    history_rows,
    load_history,
    load_replicas,
    require_same_history,
)
from kchaos.checkers.passes.transaction_passes import transaction_summary
from kchaos.checkers.power_loss import isr_fates, leader_watch_rows
from kchaos.checkers.rules.checkability import run_verdict, unchecked_reasons
from kchaos.checkers.rules.oracle import POWER_LOSS_KINDS, UNCLEAN_ELECTION_KINDS, GuaranteeContext
from kchaos.checkers.rules.verdicts import judge_all, overall_verdict, undecided_anomalies
from kchaos.checkers.runtime.session import spark_session
from kchaos.checkers.summary import has_groups, has_transaction_reads, rates, summarize
from kchaos.checkers.topic_tally import tally_line, topic_tally
from kchaos.model.config import DEFAULT_DRIVER_MEMORY, DEFAULT_SPARK_MASTER
from kchaos.model.oracle_inputs import OracleInputs
from kchaos.model.phase_record import run_phases
from kchaos.model.run_files import RunDir, write_replacing
from kchaos.model.spark_settings import SPARK_REMOTE_SCHEME
from kchaos.model.written_topics import run_topics


def read_planned_keys(run_dir: Path) -> list[str]:
    """The fault keys of the run's plan (`schedule.json`); none for a run without one (converted tool
    output, a crafted scenario), whose requested faults are then those it began."""
    path = RunDir(run_dir).schedule
    if not path.exists():
        return []
    try:
        planned = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ValueError(
            f"{path} is not valid JSON ({exc}); restore it, or delete it to judge by the history alone"
        ) from None
    return [str(item["key"]) for item in planned if isinstance(item, Mapping) and "key" in item]


def read_config(run_dir: Path) -> dict[str, Any]:
    with RunDir(run_dir).config.open(encoding="utf-8") as fh:
        config: dict[str, Any] = json.load(fh)
    return config


def guarantee_context(
    config: Mapping[str, Any],
    faults: list[FaultInterval],
    sends_timed_out: int = 0,
    leader_rows: list[dict[str, Any]] | None = None,
    transaction_protocols: tuple[int, ...] = (),
) -> GuaranteeContext:
    """What the oracle judges by: the run's configuration (read as `OracleInputs`, which names a missing or
    invalid field and its fix) and the faults it saw; with a power loss, each partition's fate, from the
    leader watcher's `leader_rows`."""
    inputs = OracleInputs.from_config(config)
    kinds = fault_kinds(faults)
    partitions = [str(partition) for partition in range(inputs.partitions or 0)]
    return GuaranteeContext(
        acks=inputs.acks,
        min_insync_replicas=inputs.min_insync_replicas,
        replication_factor=inputs.replication_factor,
        unclean_leader_election=inputs.unclean_leader_election or bool(kinds & UNCLEAN_ELECTION_KINDS),
        idempotence=inputs.idempotence,
        fault_kinds=kinds,
        max_concurrent_crashed=max_concurrent_crashed(faults),
        sends_timed_out=sends_timed_out,
        synced_every_append=inputs.synced_every_append,
        isr_fates=isr_fates(faults, leader_rows or [], partitions),
        kafka_version=inputs.kafka_version,
        transaction_protocols=frozenset(transaction_protocols),
        max_in_flight=inputs.max_in_flight,
    )


def _context_json(ctx: GuaranteeContext) -> dict[str, Any]:
    return {
        "acks": ctx.acks,
        "min_insync_replicas": ctx.min_insync_replicas,
        "replication_factor": ctx.replication_factor,
        "unclean_leader_election": ctx.unclean_leader_election,
        "idempotence": ctx.idempotence,
        "fault_kinds": sorted(ctx.fault_kinds),
        "max_concurrent_crashed": ctx.max_concurrent_crashed,
        "sends_timed_out": ctx.sends_timed_out,
        "synced_every_append": ctx.synced_every_append,
        "isr_at_power_loss": dict(ctx.isr_fates),
        "kafka_version": ctx.kafka_version,
        "transaction_protocols": sorted(ctx.transaction_protocols),
        "max_in_flight": ctx.max_in_flight,
    }


def json_safe(value: Any) -> Any:
    """Spark rows hand back tuples, dates and the odd NaN; results.json must load anywhere."""
    if isinstance(value, Mapping):
        return {str(key): json_safe(item) for key, item in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [json_safe(item) for item in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dt.datetime | dt.date):
        return value.isoformat()
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return str(value)


#: Told what a check works on as it goes (`kchaos check` shows it in place on a terminal).
Progress = Callable[[str], None]


def no_progress(_: str) -> None:
    """A check nobody watches."""


def reporting(progress: Progress) -> Stage:
    """A `stage` for `find_anomalies` that tells `progress` each step as it starts."""

    def stage(name: str) -> AbstractContextManager[Any]:
        progress(f"checking: {name}")
        return nullcontext()

    return stage


def _topics_json(topics: Sequence[str], history: DataFrame) -> dict[str, Any]:
    """`{"topics": {"tally", "line"}}` for a run that wrote several `topics` (`--topics`), else nothing."""
    if len(topics) < 2:
        return {}
    tally = topic_tally(history, topics)
    return {"topics": {"tally": tally, "line": tally_line(tally)}}


def check_run(
    run_dir: Path,
    spark_master: str | None = DEFAULT_SPARK_MASTER,
    max_examples: int = 10,
    progress: Progress = no_progress,
    driver_memory: str = DEFAULT_DRIVER_MEMORY,
) -> dict[str, Any]:
    """Checks one run and writes `run_dir/results.json`; returns what it wrote. `driver_memory` is the heap
    of a JVM the check starts (`kchaos.checkers.runtime.session.spark_session`).

    Every anomaly appears in the results, in report order; the consumer-group anomalies only when the
    history has group members (they do not apply to it otherwise), after the others. One the run has no
    data for (`replica-divergence` without `replicas/replicas.parquet`) says `checked: false`, `count:
    null` and verdict `unchecked`, and does not count towards the run's verdict. `lost-write` and `unseen`
    also carry `by_partition`, their count per acknowledged partition (the examples are only the first
    few); `group-duplicate` carries `by_kind`, its count redelivered after a rebalance and not.
    `transactions` says how the run's transactions ended (`kchaos.checkers.rules.transaction_summary`), or is
    null for a run that wrote none, whose transaction anomalies are then not checked. `lost` is the headline:
    acknowledged records gone from Kafka after healing (`kchaos.checkers.lost_count`).
    """
    config = read_config(run_dir)
    progress("starting Spark")
    spark = spark_session(spark_master, driver_memory, history_rows=history_rows(run_dir))
    progress("loading the history")
    history = load_history(spark, run_dir)
    if spark_master is not None and spark_master.startswith(SPARK_REMOTE_SCHEME):
        require_same_history(history, run_dir, spark_master)
    replicas = load_replicas(spark, run_dir)
    # The summary's job runs beside the fault rows' and the transactions' (each a few tenths of a second
    # of a small history's check, mostly waiting on the JVM, on two cores).
    with ThreadPoolExecutor(1, thread_name_prefix="summary") as pool:
        summarized = pool.submit(summarize, history)
        events = nemesis_events(history)
        transactions = transaction_summary(history)
        summary = summarized.result()
    phases = run_phases(events)
    faults = fault_intervals(events)
    applied = fault_application(read_planned_keys(run_dir), events, config.get("scenario"))
    leader_rows = leader_watch_rows(history) if any(f.kind in POWER_LOSS_KINDS for f in faults) else []
    protocols = transactions.protocols if transactions is not None else ()
    ctx = guarantee_context(config, faults, int(summary["sends_timed_out"]), leader_rows, protocols)
    written = run_topics(config)
    findings = find_anomalies(
        history, max_examples=max_examples, replicas=replicas, transactional=transactions is not None,
        groups=has_groups(summary), stage=reporting(progress), by_topic=len(written) > 1,
        rw_transactions=has_transaction_reads(summary),
    )  # fmt: skip
    found = {name: finding.count for name, finding in findings.items()}
    reasons = unchecked_reasons(
        findings, phases, replicas is not None, transactions, found, int(summary["sends_acknowledged"])
    )
    counts = {name: None if name in reasons else finding.count for name, finding in findings.items()}
    judgements = judge_all(counts, ctx, reasons, {name: f.by_partition for name, f in findings.items()})
    verdict, verdict_reason = run_verdict(
        overall_verdict(judgements.values()),
        phases,
        applied.describe(),
        applied.none_applied,
        undecided_anomalies(judgements.values()),
        int(summary["sends_acknowledged"]) + int(summary.get("txn_records_acknowledged", 0)),
    )
    results: dict[str, Any] = json_safe(
        {
            "run_id": config.get("run_id") or run_dir.name,
            "verdict": verdict,
            **({"verdict_reason": verdict_reason} if verdict_reason else {}),
            "checked_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "phases": phases.to_json(),
            "fault_application": applied.to_json(),
            "rates": rates(summary, config.get("rate")),
            "delivery_timeout": delivery_timeout(config, faults),
            **_topics_json(written, history),
            "summary": summary,
            "transactions": transactions.to_json() if transactions is not None else None,
            "context": _context_json(ctx),
            "faults": [fault.to_json() for fault in faults],
            "anomalies": {
                name: {
                    **judgements[name].to_json(),
                    **(
                        {"by_partition": finding.by_partition}
                        if finding.by_partition is not None and name not in reasons
                        else {}
                    ),
                    **({"by_kind": finding.by_kind} if finding.by_kind is not None else {}),
                    "examples": [] if name in reasons else finding.examples,
                }
                for name, finding in findings.items()
            },
        }
    )
    results["lost"] = headline_lost(results["anomalies"])
    write_replacing(RunDir(run_dir).results, json.dumps(results, indent=2, allow_nan=False) + "\n")
    return results
