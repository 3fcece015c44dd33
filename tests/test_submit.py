"""The checker under spark-submit: the master comes from spark-submit, the results are `kchaos check`'s."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.test_report import lossy_history, make_run

ROOT = Path(__file__).resolve().parent.parent
SPARK_SUBMIT = Path(sys.executable).parent / "spark-submit"


def submit(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1"}
    command = [str(SPARK_SUBMIT), "--master", "local[1]", "--driver-memory", "512m", *args]
    return subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


def test_spark_submit_checks_a_run_on_the_master_it_was_given(tmp_path: Path) -> None:
    run_dir = make_run(tmp_path, lossy_history())
    done = submit(str(ROOT / "kchaos" / "runner" / "submit.py"), str(run_dir))

    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads((run_dir / "results.json").read_text(encoding="utf-8"))
    assert results["anomalies"]["lost-write"]["count"] == 1
    assert results["anomalies"]["unseen"]["count"] == 1
    assert results["verdict"] == "permitted"
    assert (run_dir / "report.html").stat().st_size > 0
    assert "verdict: permitted" in done.stdout
    lost = results["anomalies"]["lost-write"]
    assert f"lost-write: 1 -> permitted (rule {lost['rule_id']})" in done.stdout
    assert lost["rule"] not in done.stdout, "the rule's text is in the report, not on the terminal"


def test_spark_submit_refuses_what_is_not_a_run_directory(tmp_path: Path) -> None:
    done = submit(str(ROOT / "kchaos" / "runner" / "submit.py"), str(tmp_path))
    assert done.returncode == 2
    # spark-submit merges the Python process's stderr into its own stdout.
    assert f"not a run directory (no history/ inside): {tmp_path}" in done.stdout + done.stderr
