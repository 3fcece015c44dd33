"""The Spark floor: what any check pays before it reads a row, measured in a process of its own.

    .venv/bin/python -m bench.floor

Starts the local session exactly as a check does (`checkers.spark.spark_session`, same settings) and runs
one trivial job, the least a check can cost; `bench.run` times this process's whole wall, interpreter
start and imports included, so it compares like for like with a `kchaos check` process. Prints one JSON
object: the seconds of the session start and of the job, as seen from inside.
"""

from __future__ import annotations

import json
import time


def main() -> None:
    started = time.perf_counter()
    from checkers.spark import spark_session
    from harness.config import DEFAULT_SPARK_MASTER

    spark = spark_session(DEFAULT_SPARK_MASTER)
    session_s = time.perf_counter() - started
    job_started = time.perf_counter()
    spark.range(10).count()
    job_s = time.perf_counter() - job_started
    print(json.dumps({"session": round(session_s, 3), "job": round(job_s, 3)}), flush=True)


if __name__ == "__main__":
    main()
