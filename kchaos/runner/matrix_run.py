"""Running a matrix: its points one after another, resumable, then one comparison across all of them.

Runs go one at a time because two clusters on one small machine would make both runs' faults and
timings meaningless. A point whose run directory already holds `results.json` for the same
configuration is finished and skipped, so a matrix stopped by Ctrl-C or a CI timeout resumes where it
stopped. A run the harness could not complete (a cluster that never became ready) does not stop the
other points: it is reported, and the matrix's exit status says so. Every point runs in this process,
so all their checks, and the comparison after them, share one Spark session
(`kchaos.checkers.runtime.session`): the JVM starts once per matrix, not once per run.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kchaos.model.matrix import Matrix, MatrixError, MatrixPoint
from kchaos.model.progress import Milestone, labelled
from kchaos.model.run_files import RunDir
from kchaos.runner.run import Progress, execute

log = logging.getLogger(__name__)

#: Resolved at run time where the configuration left them to kchaos (which image, which client release: the
#: cluster's own Java client, the harness's own librdkafka): not part of what the user configured.
_RESOLVED_KEYS = ("kafka_image", "java_client_version", "librdkafka_version")
#: Where and in how much memory a run was checked: the same run whoever's Spark judged it (`kchaos matrix
#: --spark-remote`).
_CHECK_PLACES = ("spark_master", "spark_remote", "spark_driver_memory")

Runner = Callable[[MatrixPoint, Progress], Any]


@dataclass
class MatrixOutcome:
    """What happened to each point: finished now, finished before (skipped) or failed."""

    directory: Path
    ran: list[MatrixPoint] = field(default_factory=list)
    skipped: list[MatrixPoint] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    finished: list[MatrixPoint] = field(default_factory=list)


def is_finished(point: MatrixPoint) -> bool:
    """True when the point's run directory holds results for exactly this configuration.

    A directory holding a different configuration (the file was edited after a run) must not be passed
    off as this point's result: that is an error naming the directory, not a silent skip or overwrite.
    """
    run_dir = point.config.run_dir
    files = RunDir(run_dir)
    if not files.results.exists():
        return False
    try:
        stored = json.loads(files.config.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        stored = {}
    wanted = point.config.to_json_dict()
    differing = sorted(
        key
        for key, value in wanted.items()
        if not (key in _RESOLVED_KEYS and value is None)
        and key not in _CHECK_PLACES
        and stored.get(key) != value
    )
    if differing:
        raise MatrixError(
            f"{run_dir} holds a run of another configuration ({', '.join(differing)} differ); "
            "remove that directory to rerun the point, or use another --runs-dir"
        )
    return True


def _set_aside(run_dir: Path) -> Path:
    """An unfinished run directory (the harness was stopped) is kept for its logs, under another name."""
    for n in range(1, 1000):
        target = run_dir.with_name(f"{run_dir.name}.unfinished-{n}")
        if not target.exists():
            run_dir.rename(target)
            return target
    raise MatrixError(f"too many unfinished copies of {run_dir}; remove them")


def _execute(point: MatrixPoint, progress: Progress) -> Any:
    return execute(point.config, progress=progress)


def _prefixed(progress: Progress, label: str) -> Progress:
    return lambda message: progress(labelled(label, message))


def run_matrix(
    matrix: Matrix, runs_dir: Path, progress: Progress = print, runner: Runner = _execute
) -> MatrixOutcome:
    """Runs every unfinished point in order; Ctrl-C stops the matrix (the current run cleans up first)."""
    points = matrix.points(runs_dir)
    outcome = MatrixOutcome(runs_dir / matrix.name)
    outcome.directory.mkdir(parents=True, exist_ok=True)
    for number, point in enumerate(points, 1):
        label = f"[{number}/{len(points)}] {point.run_id}"
        if is_finished(point):
            progress(Milestone(f"{label}: finished before, skipped"))
            outcome.skipped.append(point)
            outcome.finished.append(point)
            continue
        if point.config.run_dir.exists():
            moved = _set_aside(point.config.run_dir)
            progress(Milestone(f"{label}: an unfinished run was left here; kept as {moved.name}"))
        progress(Milestone(f"{label}: {point.key}"))
        try:
            runner(point, _prefixed(progress, label))
        except KeyboardInterrupt:
            raise
        except Exception as exc:
            # The point's own harness.log already holds the traceback (execute logs it); the matrix goes on.
            log.info("matrix point %s failed: %s", point.run_id, exc)
            outcome.failed[point.run_id] = f"{type(exc).__name__}: {exc}"
            progress(Milestone(f"{label}: the harness failed ({exc}); going on with the next point"))
            continue
        outcome.ran.append(point)
        outcome.finished.append(point)
    return outcome
