"""The Spark floor: what any check pays before it reads a row, measured in a process of its own.

    .venv/bin/python -m bench.floor [--history-rows N]

Starts the local session exactly as a check of a history of N rows does
(`kchaos.checkers.runtime.session.spark_session`, same settings, the JVM's compiler chosen by N) and runs one
trivial job, the least such a check can cost. `bench.run` times this process's whole wall, interpreter start
and imports included, so it compares like for like with a `kchaos check` process. Prints one JSON object: the
seconds of the session start and of the job, as seen from inside.
"""

from __future__ import annotations

import argparse
import json
import time


def main() -> None:
    parser = argparse.ArgumentParser(description="Start the check's Spark session and run one trivial job.")
    parser.add_argument("--history-rows", type=int, help="rows of the history the session is started for")
    args = parser.parse_args()
    started = time.perf_counter()
    from kchaos.checkers.runtime.session import spark_session
    from kchaos.model.config import DEFAULT_SPARK_MASTER

    spark = spark_session(DEFAULT_SPARK_MASTER, history_rows=args.history_rows)
    session_s = time.perf_counter() - started
    job_started = time.perf_counter()
    spark.range(10).count()
    job_s = time.perf_counter() - job_started
    print(json.dumps({"session": round(session_s, 3), "job": round(job_s, 3)}), flush=True)


if __name__ == "__main__":
    main()
