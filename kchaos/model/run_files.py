"""The layout of a run directory: every file a run leaves behind, named in one place.

A run directory outlives the run: it is checked again, reported, compared, benchmarked, or made from other
tools' logs. The harness that writes it and everything that reads it must spell it alike, so they all ask
`RunDir` for a path instead of joining names of their own:

    config.json     the run's settings, resolved (image, Kafka version), written before the cluster starts
    schedule.json   the fault plan
    assignment.json each topic's replica lists as Kafka placed them (what a replay creates its topics with)
    history/        history.ndjson (staged as recorded) and history.parquet (what the checkers read)
    replicas/       each broker's copy of the log after healing: broker-<id>.txt.gz as dumped,
                    replicas.parquet parsed, manifest.json what was dumped and what failed
    logs/           harness.log and one log per broker, kafka-<id>.log, saved as the cluster is torn down
    results.json    what the checker found
    report.html     the report drawn from the results and the history
"""

from __future__ import annotations

import os
import stat
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

CONFIG_NAME = "config.json"
SCHEDULE_NAME = "schedule.json"
ASSIGNMENT_NAME = "assignment.json"
RESULTS_NAME = "results.json"
REPORT_NAME = "report.html"
HISTORY_DIR = "history"
STAGING_NAME = "history.ndjson"
PARQUET_NAME = "history.parquet"
REPLICAS_DIR = "replicas"
REPLICAS_PARQUET_NAME = "replicas.parquet"
MANIFEST_NAME = "manifest.json"
LOGS_DIR = "logs"
HARNESS_LOG_NAME = "harness.log"
#: A broker's log is `logs/kafka-<id>.log`: its container's hostname (`kchaos.harness.kafka_node`),
#: then `.log`.
BROKER_LOG_PREFIX = "kafka-"
LOG_SUFFIX = ".log"

#: How messages name the history a run directory lacks: either file is a history.
HISTORY_FILES = f"{HISTORY_DIR}/{PARQUET_NAME} or {HISTORY_DIR}/{STAGING_NAME}"


def irregular(path: Path) -> str | None:
    """What `path` is when it exists and is not a regular file (`a FIFO`, `a directory`, ...), else None.

    Asked with `os.stat` alone: opening a FIFO to read it blocks until something writes to it, which is
    how `kchaos check` of a history that was a FIFO used to hang for ever."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None
    if stat.S_ISREG(mode):
        return None
    kinds = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"),
             (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"))  # fmt: skip
    return next((kind for test, kind in kinds if test(mode)), "not a regular file")


class _Inside:
    """A path inside the run directory, read off a `RunDir`: `RunDir(path).config` is `path/config.json`."""

    def __init__(self, *parts: str) -> None:
        self.parts = parts

    def __get__(self, run: RunDir, owner: type[RunDir]) -> Path:
        return run.path.joinpath(*self.parts)


@dataclass(frozen=True)
class RunDir:
    """One run directory's files, by what they hold; `path` is the directory itself."""

    path: Path

    config = _Inside(CONFIG_NAME)
    schedule = _Inside(SCHEDULE_NAME)
    assignment = _Inside(ASSIGNMENT_NAME)
    results = _Inside(RESULTS_NAME)
    report = _Inside(REPORT_NAME)
    history = _Inside(HISTORY_DIR)
    history_staging = _Inside(HISTORY_DIR, STAGING_NAME)
    history_parquet = _Inside(HISTORY_DIR, PARQUET_NAME)
    replicas = _Inside(REPLICAS_DIR)
    replicas_parquet = _Inside(REPLICAS_DIR, REPLICAS_PARQUET_NAME)
    replicas_manifest = _Inside(REPLICAS_DIR, MANIFEST_NAME)
    logs = _Inside(LOGS_DIR)
    harness_log = _Inside(LOGS_DIR, HARNESS_LOG_NAME)

    def replica_dump(self, broker: int) -> Path:
        """A broker's raw `DumpLogSegments` output, gzipped, kept for people to read."""
        return self.path / REPLICAS_DIR / f"broker-{broker}.txt.gz"

    def broker_logs(self) -> dict[int, Path]:
        """Every broker's own log the run saved (`logs/kafka-<id>.log`), by broker id; none when the run
        died before tearing its cluster down."""
        if not self.logs.is_dir():
            return {}
        found = {}
        for path in self.logs.iterdir():
            number = path.name.removeprefix(BROKER_LOG_PREFIX).removesuffix(LOG_SUFFIX)
            if (
                path.name.startswith(BROKER_LOG_PREFIX)
                and path.name.endswith(LOG_SUFFIX)
                and number.isdigit()
            ):
                found[int(number)] = path
        return dict(sorted(found.items()))

    def has_history(self) -> bool:
        """Whether a history was recorded: staged by a run (perhaps a crashed one) or written as Parquet."""
        return self.history_parquet.exists() or self.history_staging.exists()


@contextmanager
def replacing(target: Path) -> Iterator[Path]:
    """A temporary path beside `target` to write in full; renamed over `target` when the block ends, and
    removed, leaving `target` as it was, when the block raises.

    Every file kchaos writes into a run directory after the run goes through here: `kchaos report` on a full
    disk used to overwrite a good report.html with a truncated one, and a failed check left
    `results.json.tmp` behind. The rename is atomic within a directory, so a reader sees the old file or
    the new one, never half of one. The name is unique, so two writers of one file do not share it."""
    tmp = target.with_name(f".{target.name}.{uuid.uuid4().hex[:12]}.tmp")
    os.close(os.open(tmp, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666))  # the umask applies, as to open()
    try:
        yield tmp
        tmp.replace(target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_replacing(target: Path, content: str | bytes) -> None:
    """Writes `content` (text as UTF-8) to `target` through `replacing`: all of it, or `target` untouched."""
    with replacing(target) as tmp:
        if isinstance(content, str):
            tmp.write_text(content, encoding="utf-8")
        else:
            tmp.write_bytes(content)
