"""What the per-partition redesign of the checker's passes would cost, measured in its building blocks.

    flock /tmp/kchaos-cluster.lock .venv/bin/python -m bench.one_exchange [--sends 10000000]

Issue 4's notes proposed one exchange of the history by topic-partition, then every per-partition
definition in one pass over it, with only the cross-partition value checks (duplicate) outside. Whether
that can be faster depends on what the passes spend their time on, so this measures, on one generated
history (`bench.generate`, replica dumps included) in one session:

- `scan`: reading the rows the passes use (every column, hashed so none is pruned);
- `exchange`: the same after one repartitioning by topic-partition, i.e. the exchange the design shares;
- `arrow transfer`: handing those rows to Python workers as Arrow batches, the least any per-partition
  function in Python (`mapInArrow`, `applyInPandas`) pays before it computes anything;
- `passes today`: each pass of `kchaos.checkers.passes.history_passes` on its own, with its own exchange;
- `one exchange`: the exchanged rows materialized once (memory, then disk), and the passes built on them:
  the send-order and by-offset passes without their own repartitioning (their groupings contain the
  topic-partition, so the shared exchange satisfies them), the poll-order pass likewise, the by-value pass
  keeping its exchange by value (a value is checked across partitions).

Writes section `one-exchange` of bench/RESULTS.md and bench/results.json.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from unittest import mock

from bench.sections import write_json_section, write_markdown_section

BENCH_DIR = Path(__file__).resolve().parent
PASS_NAMES = ("value", "send_order", "poll_order", "offset")


def _timed(fn: Callable[[], object]) -> float:
    started = time.perf_counter()
    fn()
    return round(time.perf_counter() - started, 1)


def measure(run_dir: Path) -> dict[str, Any]:
    """Seconds of each building block on the history of `run_dir` (see the module docstring)."""
    # Arrow batches go to Python workers, which must find this interpreter's packages.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    import pyarrow as pa
    from pyspark import StorageLevel
    from pyspark.sql import DataFrame
    from pyspark.sql import functions as F

    from kchaos.checkers.passes.frames import (
        KINDS,
        TP,
        HistoryViews,
        history_rows,
        load_history,
        load_replicas,
    )
    from kchaos.checkers.passes.history_passes import Passes
    from kchaos.checkers.runtime.session import spark_session

    @dataclass(frozen=True)
    class PartitionedViews(HistoryViews):
        """The views with every row kind taken from one exchanged, materialized frame."""

        exchanged: DataFrame | None = None

        def rows(self, *kinds: str) -> DataFrame:
            assert self.exchanged is not None
            return self.exchanged.filter(F.col("kind").isin(*kinds))

    spark = spark_session("local[2]", "6g", history_rows=history_rows(run_dir))
    history = load_history(spark, run_dir)
    replicas = load_replicas(spark, run_dir)
    views = HistoryViews.of(history, replicas)
    rows = views.rows(*KINDS)
    every_column = F.sum(F.xxhash64(*rows.columns) % 1000)

    def arrow_rows(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        yield pa.RecordBatch.from_pydict({"rows": [sum(batch.num_rows for batch in batches)]})

    history.count()  # the JVM's first job, not counted against any step
    seconds: dict[str, float] = {
        "scan": _timed(lambda: rows.agg(every_column).collect()),
        "exchange": _timed(lambda: rows.repartition(*TP).agg(every_column).collect()),
        "arrow transfer": _timed(rows.mapInArrow(arrow_rows, "rows long").agg(F.sum("rows")).collect),
    }
    today = Passes(views)
    for name in PASS_NAMES:
        seconds[f"today: {name}"] = _timed(getattr(today, name)().count)
    today.unpersist()
    for level_name, level in (("memory", StorageLevel.MEMORY_AND_DISK), ("disk", StorageLevel.DISK_ONLY)):
        exchanged = rows.repartition(*TP).persist(level)
        seconds[f"one exchange ({level_name}): materialize"] = _timed(exchanged.count)
        shared = Passes(PartitionedViews(history, replicas, views.transactional, exchanged))
        for name in PASS_NAMES:
            build: Callable[[], DataFrame] = getattr(shared, name)
            if name in ("send_order", "offset"):
                shared.replica_blocks()  # built as today: its own repartitioning is not the shared one
                # Built with repartitioning a no-op: the shared exchange already groups by topic-partition.
                with mock.patch.object(type(exchanged), "repartition", lambda frame, *_, **__: frame):
                    frame = build()
            else:
                frame = build()
            seconds[f"one exchange ({level_name}): {name}"] = _timed(frame.count)
        shared.unpersist()
        exchanged.unpersist()
    return seconds


def markdown(sends: int, seconds: dict[str, float]) -> str:
    today = sum(value for key, value in seconds.items() if key.startswith("today: "))
    lines = [
        "## One exchange by topic-partition (the per-partition redesign's building blocks)",
        "",
        f"Generated by `python -m bench.one_exchange --sends {sends}` (replica dumps included), one session, "
        "local[2], 6g heap. Seconds per step, each a job of its own.",
        "",
        "| step | s |",
        "|---|---:|",
        *(f"| {key} | {value} |" for key, value in seconds.items()),
        f"| **today: the four passes** | **{round(today, 1)}** |",
    ]
    for level in ("memory", "disk"):
        shared = sum(value for key, value in seconds.items() if key.startswith(f"one exchange ({level})"))
        label = f"one exchange ({level}): materialize and the four passes"
        lines.append(f"| **{label}** | **{round(shared, 1)}** |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description="Measure the building blocks of a one-exchange checker.")
    parser.add_argument("--sends", type=int, default=10_000_000, help="sends of the generated history")
    args = parser.parse_args()
    from bench.run import dataset

    run_dir, _ = dataset(args.sends, replicas=True, regenerate=False)
    seconds = measure(run_dir)
    text = markdown(args.sends, seconds)
    print(text, flush=True)
    write_markdown_section(BENCH_DIR / "RESULTS.md", "one-exchange", text)
    write_json_section(BENCH_DIR / "results.json", "one-exchange", {"sends": args.sends, "seconds": seconds})


if __name__ == "__main__":
    main()
