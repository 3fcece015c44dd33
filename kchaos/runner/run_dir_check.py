"""Checking a run directory from the command line, as `kchaos check` and `kchaos import-verifiable` do:
vet it before Spark starts, so a wrong directory is reported at once; check it; print the outcome; exit
with the status its verdict calls for."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import NoReturn

from kchaos.model.config import DEFAULT_DRIVER_MEMORY
from kchaos.model.run_files import CONFIG_NAME, HISTORY_DIR, HISTORY_FILES, RunDir, irregular
from kchaos.runner.class_archiving import finish_archiving, start_archiving
from kchaos.runner.failures import fail, require_java, working_in
from kchaos.runner.outcome_echo import echo_outcome
from kchaos.runner.progress_echo import ProgressEcho


def judge_run_dir(
    run_dir: Path, spark_master: str, max_examples: int, driver_memory: str = DEFAULT_DRIVER_MEMORY
) -> NoReturn:
    """Checks `run_dir` again, rewriting results.json and report.html (`max_examples` of each anomaly), and
    exits with its verdict's status. `driver_memory` is the heap of the JVM the check starts."""
    from kchaos.checkers.passes.frames import OtherRunRead
    from kchaos.model.history_files import HistoryCorrupt
    from kchaos.runner.outcome import check_and_report

    working_in(run_dir)
    vet_run_dir(run_dir)
    require_java(spark_master)
    # the first local check of a machine makes the archive
    making = start_archiving(spark_master, driver_memory)
    try:
        with ProgressEcho() as shown:  # on a terminal, what Spark works on; elsewhere nothing
            outcome = check_and_report(
                run_dir, spark_master, max_examples, shown, driver_memory=driver_memory
            )
    except (FileNotFoundError, HistoryCorrupt, OtherRunRead) as exc:
        fail(str(exc))
    code = echo_outcome(outcome)
    if making is not None:
        with ProgressEcho() as shown:
            shown("making Spark's class-data archive for later checks (once, about 15 s)")
            finish_archiving(making)
    sys.exit(code)


def _writable(path: Path) -> bool:
    return os.access(path, os.W_OK | os.X_OK)


def vet_run_dir(run_dir: Path) -> None:
    """Fails with what is wrong and the fix unless `run_dir` holds a config.json the oracle can judge by
    and a history of at least one row, every one a history row, and results can be written there.

    All of it before Spark starts: a judge that found out in the engine spent its start-up first, then
    named the wrong cause (a bare ValueError, or none at all for an empty history), and a FIFO where the
    history should be hung it for ever. Only `os.stat` looks at what is not a regular file."""
    from kchaos.model.history_files import HistoryCorrupt
    from kchaos.model.history_vet import vet_history
    from kchaos.model.oracle_inputs import OracleInputError, OracleInputs

    files = RunDir(run_dir)
    config = files.config
    if not (config.exists() or files.history.exists()):
        fail(f"{run_dir} is not a run directory: it has no {CONFIG_NAME} and no {HISTORY_DIR}/")
    kind = irregular(config)
    if kind is not None:
        fail(f"{config} is {kind}, not a file; put the run's settings there, or check another run directory")
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
    try:
        OracleInputs.from_config(settings)
    except OracleInputError as exc:
        fail(f"{config}: {exc}")
    if files.history.exists() and not files.history.is_dir():
        fail(
            f"{files.history} is {irregular(files.history) or 'not a directory'}; a run keeps its history "
            f"in the directory {HISTORY_DIR}/: restore it, or check another run directory"
        )
    for where in (run_dir, files.history):
        if where.exists() and not _writable(where):
            fail(
                f"{where} is not writable, and checking writes there (results.json, report.html, the "
                "converted history); make it writable (chmod u+w), or check a copy of the run directory"
            )
    if not files.has_history():
        fail(
            f"{run_dir} has no {HISTORY_FILES}: nothing was recorded "
            "(the run died before it wrote), so there is nothing to check"
        )
    try:
        vet_history(run_dir)  # converts a crashed run's staging file, refusing a damaged one
    except HistoryCorrupt as exc:
        fail(str(exc))
