"""Checking a run directory from the command line, as `kchaos check` and `kchaos import-verifiable` do:
vet it before Spark starts, so a wrong directory is reported at once; check it; print the outcome; exit
with the status its verdict calls for."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import NoReturn

from kchaos.model.run_files import CONFIG_NAME, HISTORY_DIR, HISTORY_FILES, RunDir
from kchaos.runner.failures import fail, working_in
from kchaos.runner.outcome_echo import echo_outcome


def judge_run_dir(run_dir: Path, spark_master: str) -> NoReturn:
    """Checks `run_dir` again, rewriting results.json and report.html, and exits with its verdict's status."""
    from kchaos.model.history import HistoryCorrupt
    from kchaos.runner.outcome import check_and_report

    working_in(run_dir)
    vet_run_dir(run_dir)
    try:
        outcome = check_and_report(run_dir, spark_master)
    except (FileNotFoundError, HistoryCorrupt) as exc:
        fail(str(exc))
    sys.exit(echo_outcome(outcome))


def vet_run_dir(run_dir: Path) -> None:
    """Fails with what is wrong and the fix unless `run_dir` holds a readable config.json and history."""
    from kchaos.model.history import HistoryCorrupt, history_path

    files = RunDir(run_dir)
    config = files.config
    if not (config.exists() or files.history.exists()):
        fail(f"{run_dir} is not a run directory: it has no {CONFIG_NAME} and no {HISTORY_DIR}/")
    if not config.is_file():
        fail(
            f"{run_dir} has no {CONFIG_NAME} (the run's settings, which the oracle judges by); a run that "
            "failed before starting its cluster has none, and nothing to check"
        )
    try:
        settings = json.loads(config.read_text(encoding="utf-8"))
    except (ValueError, OSError) as exc:
        fail(
            f"{config} is not valid JSON ({exc}); restore it (it holds the run's settings) or check "
            "another run directory"
        )
    if not isinstance(settings, dict):
        fail(
            f"{config} holds a JSON {type(settings).__name__}, not the object of the run's settings; "
            "restore it or check another run directory"
        )
    if not files.has_history():
        fail(
            f"{run_dir} has no {HISTORY_FILES}: nothing was recorded "
            "(the run died before it wrote), so there is nothing to check"
        )
    try:
        history_path(run_dir)  # converts a crashed run's staging file, refusing a damaged one
    except HistoryCorrupt as exc:
        fail(str(exc))
