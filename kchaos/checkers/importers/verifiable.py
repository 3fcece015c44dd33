"""Kafka's own VerifiableProducer / VerifiableConsumer output, turned into a kchaos run directory.

Kafka's system tests drive clients with `org.apache.kafka.tools.VerifiableProducer` and
`VerifiableConsumer` (in the kafka-tools jar), which print one JSON object per event on stdout; every
object carries `timestamp` (milliseconds since the epoch) and `name`. Someone who already tests a cluster
with those tools should not have to rerun anything to get kchaos's verdict, so this module maps their
events onto exactly the rows kchaos's own workloads record (kchaos/model/events.py), and the anomaly
definitions and the guarantee oracle then judge them unchanged:

- `producer_send_success` (key, value, topic, partition, offset): a `send` `invoke`, then `send` `ok`;
- `producer_send_error` (key, value, topic, exception, message): a `send` `invoke`, then `send` `info`
  (or `fail`, see below);
- `partitions_assigned` (partitions: [{topic, partition}]): an `assign` `ok` row;
- `record_data` (key, value, topic, partition, offset; printed only with `--verbose`): a `poll` `ok` row;
- `records_consumed`, `partitions_revoked`, `offsets_committed`, `tool_data` and the lifecycle events
  (`startup_complete`, `shutdown_requested`, `shutdown_complete`): no row; their counts cross-check the
  conversion.

A failed send is indeterminate (`info`) unless its exception says the record never reached a broker
(kchaos/model/java_send_errors.py); the same rule as for kchaos's own producers
(kchaos/workloads/outcome.py). The tools print only when a send completes, so a send's `invoke` row sits
right before its outcome: the producer completes sends to one partition in the order it made them, so the
per-partition invoke order the `nonmonotonic-send` definition needs is kept.

Rows from all files are ordered by the events' timestamps (ties keep file and line order), and each
file is one process, named after the file.
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from kchaos.checkers.importers.verifiable_log import (
    LogCounts,
    Placed,
    Role,
    VerifiableInputError,
    consumer_events,
    producer_events,
)
from kchaos.model.events import FINAL_READER_PROCESS, NEMESIS_PROCESS
from kchaos.model.history_schema import SCHEMA, event_row
from kchaos.model.oracle_inputs import OracleInputError, OracleInputs, idempotence_refusal
from kchaos.model.run_files import RunDir, replacing, write_replacing

__all__ = ["Conversion", "VerifiableInputError", "convert", "process_names", "verifiable_inputs"]

#: Process names with a meaning of their own in a history; a log file named like one is renamed.
RESERVED_PROCESSES = frozenset({NEMESIS_PROCESS, FINAL_READER_PROCESS})


#: What the oracle is told about a setting the user does not give: VerifiableProducer's own (`--acks -1`,
#: and idempotence off because the tool sets `retries=0`, which disables it unless a config file overrides
#: both) and kchaos's topic defaults. The logs do not say these, so the user does.
VERIFIABLE_DEFAULTS: dict[str, object] = {
    "acks": "all",
    "min_insync_replicas": 2,
    "replication_factor": 3,
    "unclean_leader_election": False,
    "idempotence": False,
}


def verifiable_inputs(**given: object) -> OracleInputs:
    """The oracle's inputs for the tools' logs: `VERIFIABLE_DEFAULTS`, overridden by each setting given
    (None: not given). Read as any `config.json` is, so the import accepts exactly what the check judges."""
    inputs = OracleInputs.from_config(
        {**VERIFIABLE_DEFAULTS, **{key: value for key, value in given.items() if value is not None}}
    )
    refused = idempotence_refusal(inputs.acks, inputs.idempotence)
    if refused is not None:
        raise OracleInputError(refused)
    return inputs


@dataclass(frozen=True)
class Conversion:
    """The run directory written, what each log held, and how many history rows it became."""

    run_dir: Path
    logs: list[LogCounts] = field(default_factory=list)
    rows: int = 0

    def total(self, name: str) -> int:
        return sum(int(getattr(log, name) or 0) for log in self.logs)


def process_names(paths: Sequence[Path]) -> list[str]:
    """One process per log file, named after the file (its stem), made unique and never a reserved name."""
    names: list[str] = []
    for path in paths:
        base = path.stem or "log"
        if base in RESERVED_PROCESSES:
            base = f"{base}-log"
        name, n = base, 1
        while name in names:
            n += 1
            name = f"{base}-{n}"
        names.append(name)
    return names


def _table(events: list[Placed], run_id: str) -> pa.Table:
    """The history in the order the tools printed it, each row stamped with its event's own time."""
    events.sort(key=lambda placed: placed[0])
    rows = [
        event_row(run_id, index, ts * 1_000_000, ts / 1000.0, event)
        for index, ((ts, *_), event) in enumerate(events)
    ]
    return pa.Table.from_pylist(rows, schema=SCHEMA)


def convert(
    producer_logs: Sequence[Path],
    consumer_logs: Sequence[Path],
    run_dir: Path,
    settings: OracleInputs,
    run_id: str | None = None,
) -> Conversion:
    """Writes `run_dir/config.json` and `run_dir/history/history.parquet` from the tools' logs.

    The Parquet file has the writer's schema (kchaos/model/history_schema.py), so `check_run` reads it like
    any run.
    The rows are written directly rather than through `HistoryWriter`, which stamps its own clock: the
    events' own timestamps are what the report's throughput plot must show.
    """
    if not producer_logs or not consumer_logs:
        raise ValueError(
            "both --producer-log (VerifiableProducer stdout) and --consumer-log (VerifiableConsumer "
            "--verbose stdout) are needed: without reads nothing can be lost or seen"
        )
    files = RunDir(run_dir)
    if files.history.exists():
        raise FileExistsError(f"{run_dir} already holds a history; choose a new --out directory")
    paths = [*producer_logs, *consumer_logs]
    processes = process_names(paths)
    producer: Role = "producer"
    consumer: Role = "consumer"
    roles = [producer] * len(producer_logs) + [consumer] * len(consumer_logs)
    logs = [
        LogCounts(str(path), process, role)
        for path, process, role in zip(paths, processes, roles, strict=True)
    ]
    events: list[Placed] = []
    sent_at: dict[str, tuple[Path, int]] = {}
    topics: set[str] = set()
    for file_no, (path, counts) in enumerate(zip(paths, logs, strict=True)):
        parsed = (
            producer_events(path, file_no, counts, sent_at)
            if counts.role == "producer"
            else consumer_events(path, file_no, counts)
        )
        for placed in parsed:
            events.append(placed)
            if placed[1].topic is not None:
                topics.add(placed[1].topic)
    run_id = run_id or run_dir.name
    table = _table(events, run_id)
    config = {
        "run_id": run_id,
        "source": "verifiable",
        "topic": sorted(topics)[0] if len(topics) == 1 else sorted(topics),
        **settings.to_json(),
        "producer_logs": {log.process: log.path for log in logs if log.role == "producer"},
        "consumer_logs": {log.process: log.path for log in logs if log.role == "consumer"},
        "converted_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
    }
    _write(files, table, json.dumps(config, indent=2) + "\n")
    return Conversion(run_dir, logs, table.num_rows)


def _write(files: RunDir, table: pa.Table, config: str) -> None:
    """Writes the history and config.json into `files`, or, when that fails (a full disk), removes what it
    made, so that no half-written run directory is left for a later check to judge: a new `--out` goes
    again, and an existing one keeps only what it held."""
    made = [path for path in (files.path, *files.path.parents) if not path.exists()]
    try:
        files.history.mkdir(parents=True)
        with replacing(files.history_parquet) as tmp:
            pq.write_table(table, tmp)
        write_replacing(files.config, config)
    except BaseException:
        files.history_parquet.unlink(missing_ok=True)
        if files.history.is_dir():
            files.history.rmdir()
        if made:  # the topmost directory this made, with whatever is under it
            shutil.rmtree(made[-1], ignore_errors=True)
        raise
