"""One checking engine over one run directory, alone in its process so its peak memory is its own.

    .venv/bin/python -m bench.engine spark RUN_DIR
    .venv/bin/python -m bench.engine pandas RUN_DIR

Prints one JSON object on the last line of stdout: anomaly counts and where the time went. `bench.run`
starts one of these per engine and size, and samples the memory of its whole process tree (the Spark
JVM is a child of the Python driver).
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

from kchaos.model.history_files import history_path
from kchaos.model.run_files import RunDir


def timed_stages(timings: dict[str, float], context: Any) -> Callable[[str], AbstractContextManager[None]]:
    """A `stage` for `find_anomalies`: adds each step's seconds to `timings` under its name, and runs its
    Spark jobs under a job group of that name so they can be counted afterwards."""

    @contextmanager
    def stage(name: str) -> Iterator[None]:
        context.setJobGroup(name, name)
        started = time.perf_counter()
        try:
            yield
        finally:
            timings[name] = timings.get(name, 0.0) + time.perf_counter() - started

    return stage


def _count(finding: Any) -> int | None:
    count = getattr(finding, "count", finding)
    return None if count is None else int(count)


#: The shared passes of `kchaos.checkers.passes.history_passes.Passes`, in the order `find_anomalies` first
#: needs them (the replicas' block summary, which the by-offset pass reads, measured on its own before it).
PASS_NAMES = ("partitions", "value", "replica_blocks", "offset", "send_order", "poll_order")


def pass_breakdown(history: Any, replicas: Any, context: Any) -> dict[str, Any]:
    """Diagnostics after the timed run (the JVM is warm by then): each shared pass materialized on its own,
    then the anomalies computed from the cached passes. Says which grouping of the rows costs what."""
    from kchaos.checkers.anomalies.findings import find_anomalies_in
    from kchaos.checkers.passes.frames import HistoryViews
    from kchaos.checkers.passes.history_passes import Passes

    passes = Passes(HistoryViews.of(history, replicas))
    seconds: dict[str, float] = {}
    jobs: dict[str, int] = {}
    tracker = context.statusTracker()
    try:
        for name in PASS_NAMES:
            group = f"pass:{name}"
            context.setJobGroup(group, group)
            started = time.perf_counter()
            frame = getattr(passes, name)()
            if frame is not None:
                frame.count()
            seconds[name] = round(time.perf_counter() - started, 3)
            jobs[name] = len(tracker.getJobIdsForGroup(group))
        context.setJobGroup("anomalies-from-cached-passes", "anomalies")
        started = time.perf_counter()
        find_anomalies_in(passes, 10)
        seconds["anomalies_from_cached_passes"] = round(time.perf_counter() - started, 3)
        jobs["anomalies_from_cached_passes"] = len(tracker.getJobIdsForGroup("anomalies-from-cached-passes"))
    finally:
        passes.unpersist()
    return {"seconds": seconds, "spark_jobs": jobs}


def spark_engine(run_dir: Path, master: str | None, memory: str, breakdown: bool = True) -> dict[str, Any]:
    """`master` None: kchaos's default master."""
    started = time.perf_counter()
    from kchaos.checkers.anomalies.findings import find_anomalies
    from kchaos.checkers.passes import frames
    from kchaos.checkers.runtime.session import spark_session
    from kchaos.checkers.summary import summarize
    from kchaos.model.config import DEFAULT_SPARK_MASTER

    spark = spark_session(master or DEFAULT_SPARK_MASTER, driver_memory=memory)
    session_s = time.perf_counter() - started

    t0 = time.perf_counter()
    history = frames.load_history(spark, run_dir)
    replicas = frames.load_replicas(spark, run_dir)
    per_anomaly: dict[str, float] = {}
    context = spark.sparkContext
    findings = find_anomalies(history, replicas=replicas, stage=timed_stages(per_anomaly, context))
    find_s = time.perf_counter() - t0
    tracker = context.statusTracker()
    jobs = {name: len(tracker.getJobIdsForGroup(name)) for name in per_anomaly}
    context.setJobGroup("summary", "summary")

    t1 = time.perf_counter()
    summary = summarize(history)
    summary_s = time.perf_counter() - t1
    passes: dict[str, Any] = {}
    if breakdown:
        try:
            passes = pass_breakdown(history, replicas, context)
        except Exception as exc:  # diagnostics only: the timed run above stands on its own
            passes = {"error": f"{type(exc).__name__}: {exc}"}
    return {
        "engine": "spark",
        "counts": {name: _count(finding) for name, finding in findings.items()},
        "summary": summary,
        "seconds": {
            "startup": round(session_s, 3),
            "find_anomalies": round(find_s, 3),
            "summary": round(summary_s, 3),
            "check": round(find_s + summary_s, 3),
        },
        # Each anomaly's share of find_anomalies, the passes it is first to need included; then the one
        # lookup of the records every anomaly's examples point at (`example-records`).
        "per_anomaly_seconds": {name: round(s, 3) for name, s in per_anomaly.items()},
        "per_anomaly_spark_jobs": jobs,
        "per_pass": passes,
        "parquet_partitions": history.rdd.getNumPartitions(),
    }


def pandas_engine(run_dir: Path) -> dict[str, Any]:
    started = time.perf_counter()
    import pandas as pd

    # The pandas engine is the tests' reference, not shipped in the wheel: bench runs from a clone, as
    # `python -m bench.engine` from its root (`bench.run` starts it there), so `tests` is importable.
    from tests.reference.anomalies import reference_anomaly_ids

    startup_s = time.perf_counter() - started
    t0 = time.perf_counter()
    history = pd.read_parquet(history_path(run_dir))
    replicas_path = RunDir(run_dir).replicas_parquet
    replicas = pd.read_parquet(replicas_path) if replicas_path.exists() else None
    load_s = time.perf_counter() - t0
    t1 = time.perf_counter()
    ids = reference_anomaly_ids(history, replicas)
    reference_s = time.perf_counter() - t1
    return {
        "engine": "pandas",
        "counts": {name: len(found) for name, found in ids.items()},
        "seconds": {
            "startup": round(startup_s, 3),
            "load": round(load_s, 3),
            "reference": round(reference_s, 3),
            "check": round(load_s + reference_s, 3),
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description="Run one checking engine over one run directory.")
    parser.add_argument("engine", choices=["spark", "pandas"])
    parser.add_argument("run_dir", type=Path)
    # No default here: the pandas process must not import the configuration (and pydantic) for it.
    parser.add_argument("--spark-master", help="Spark master URL (default: kchaos's default master)")
    parser.add_argument("--spark-memory", default="6g", help="driver heap of the local Spark JVM")
    parser.add_argument("--no-breakdown", action="store_true", help="skip the per-pass diagnostic run")
    args = parser.parse_args()
    if args.engine == "spark":
        result = spark_engine(
            args.run_dir, args.spark_master, args.spark_memory, breakdown=not args.no_breakdown
        )
    else:
        result = pandas_engine(args.run_dir)
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
