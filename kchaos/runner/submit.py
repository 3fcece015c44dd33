"""The checker as a `spark-submit` application: check run directories on an existing Spark cluster.

    PYSPARK_PYTHON=.venv/bin/python .venv/bin/spark-submit --master spark://HOST:7077 \\
        kchaos/runner/submit.py runs/<id> [runs/<id> ...]

The master, the driver's memory and every other Spark setting come from spark-submit; the checks are
DataFrame code without Python UDFs, so executors need no kchaos code and the job runs on a cluster
exactly as in local mode. Each run directory gets its `results.json` and `report.html`, as with
`kchaos check`. The exit code is as for `kchaos check`: 1 if any run's verdict is `violation` and for
nothing else, 2 for bad arguments or a run that could not be judged (`unchecked`), else 0.
"""

from __future__ import annotations

import sys
from pathlib import Path

# spark-submit puts this file's directory first on the path, where module names like `run` and `cli`
# would stand for this folder's modules; the project root (where `kchaos` is in a clone) is what the
# imports below mean.
sys.path[0] = str(Path(__file__).resolve().parents[2])

from kchaos.model.run_files import RunDir  # noqa: E402
from kchaos.runner.failures import EXIT_HARNESS_ERROR, EXIT_VIOLATION  # noqa: E402
from kchaos.runner.outcome import check_and_report  # noqa: E402
from kchaos.runner.outcome_echo import echo_outcome  # noqa: E402


def main(argv: list[str]) -> int:
    if not argv or any(arg.startswith("-") for arg in argv):
        print(
            "usage: spark-submit [spark options] kchaos/runner/submit.py RUN_DIR [RUN_DIR ...]",
            file=sys.stderr,
        )
        return EXIT_HARNESS_ERROR
    missing = [arg for arg in argv if not RunDir(Path(arg)).history.is_dir()]
    if missing:
        print(f"not a run directory (no history/ inside): {', '.join(missing)}", file=sys.stderr)
        return EXIT_HARNESS_ERROR
    codes = [echo_outcome(check_and_report(Path(arg), spark_master=None)) for arg in argv]
    if EXIT_VIOLATION in codes:
        return EXIT_VIOLATION
    return EXIT_HARNESS_ERROR if EXIT_HARNESS_ERROR in codes else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
