"""The layout of a run directory: every file a run leaves behind, named in one place.

A run directory outlives the run: it is checked again, reported, compared, benchmarked, or made from other
tools' logs. The harness that writes it and everything that reads it must spell it alike, so they all ask
`RunDir` for a path instead of joining names of their own:

    config.json     the run's settings, resolved (image, Kafka version), written before the cluster starts
    schedule.json   the fault plan
    history/        history.ndjson (staged, flushed per row) and history.parquet (what the checkers read)
    replicas/       each broker's copy of the log after healing: broker-<id>.txt.gz as dumped,
                    replicas.parquet parsed, manifest.json what was dumped and what failed
    logs/           harness.log and one log per broker
    results.json    what the checker found
    report.html     the report drawn from the results and the history
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

CONFIG_NAME = "config.json"
SCHEDULE_NAME = "schedule.json"
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

#: How messages name the history a run directory lacks: either file is a history.
HISTORY_FILES = f"{HISTORY_DIR}/{PARQUET_NAME} or {HISTORY_DIR}/{STAGING_NAME}"


@dataclass(frozen=True)
class RunDir:
    """One run directory's files, by what they hold; `path` is the directory itself."""

    path: Path

    @property
    def config(self) -> Path:
        return self.path / CONFIG_NAME

    @property
    def schedule(self) -> Path:
        return self.path / SCHEDULE_NAME

    @property
    def results(self) -> Path:
        return self.path / RESULTS_NAME

    @property
    def report(self) -> Path:
        return self.path / REPORT_NAME

    @property
    def history(self) -> Path:
        return self.path / HISTORY_DIR

    @property
    def history_staging(self) -> Path:
        return self.history / STAGING_NAME

    @property
    def history_parquet(self) -> Path:
        return self.history / PARQUET_NAME

    @property
    def replicas(self) -> Path:
        return self.path / REPLICAS_DIR

    @property
    def replicas_parquet(self) -> Path:
        return self.replicas / REPLICAS_PARQUET_NAME

    @property
    def replicas_manifest(self) -> Path:
        return self.replicas / MANIFEST_NAME

    def replica_dump(self, broker: int) -> Path:
        return self.replicas / f"broker-{broker}.txt.gz"

    @property
    def logs(self) -> Path:
        return self.path / LOGS_DIR

    @property
    def harness_log(self) -> Path:
        return self.logs / HARNESS_LOG_NAME

    def has_history(self) -> bool:
        """Whether a history was recorded: staged by a run (perhaps a crashed one) or written as Parquet."""
        return self.history_parquet.exists() or self.history_staging.exists()
