"""Synthetic run directories of any size, with a known number of each anomaly, for the checker benchmark.

A history of N sends has about 4N rows, laid out the way a real run records them:

- `consumer-0` assigns itself every partition (one `assign` row), then the run proceeds in blocks of
  `block` sends: each send is an `invoke` and an `ok` row (producers `producer-0..`, partitions round
  robin), and after each block the consumer polls the block's records (one `poll` row per record);
- a short tail of extra sends, some polled, none read by the final read;
- `final-reader` reads every partition from offset 0 to its end (`final-read` invoke, then one row per
  record);
- optionally `replicas/replicas.parquet`: three brokers' copies of every partition log.

Every column is built with numpy/pyarrow and written in row groups, so 10M sends (40M rows) take seconds
and bounded memory. The anomalies are made by editing a few entries of the arrays, each chosen so it
produces exactly the counts in `expected.json` (by the definitions in docs/anomalies.md):

- lost-write: the reads at an acknowledged record's offset return another, never acknowledged value
  (as after a truncation): 1 lost-write each;
- unseen: tail sends to partition 1, never read: 1 each;
- truncated-read: tail sends to partition 2, polled, absent from the final read: 1 each;
- duplicate: the final read of partition 3 ends with copies of earlier values at new offsets: 1 each;
- nonmonotonic-send: two sends of one producer to partition 4 swap value and offset (the later-invoked
  lands lower): 1 each;
- inconsistent-offset: a send to partition 5 acknowledged one below the offset it is read at: 1 each;
- nonmonotonic-poll: the consumer is handed two records of partition 0 in swapped order: 1
  nonmonotonic-poll and 2 poll-skip each;
- replica-divergence (with replicas): broker 3 holds another value at an offset: 1 each.

    .venv/bin/python -m bench.generate --sends 1000000 --out bench/data/sends-1000000 [--replicas]
"""

from __future__ import annotations

import argparse
import json
import shutil
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from bench.plan import (
    BLOCK,
    BROKERS,
    CHUNK_SENDS,
    DUPLICATE_P,
    PARTITIONS,
    PRODUCERS,
    ROW_NS,
    TOPIC,
    TRUNCATED_P,
    UNSEEN_P,
    WALL_START,
    Injected,
    Plan,
    plan,
)
from kchaos.model.events import (
    ASSIGN,
    FINAL_READ,
    FINAL_READER_PROCESS,
    INVOKE,
    OK,
    POLL,
    SEND,
    consumer_process,
    producer_process,
)
from kchaos.model.history_schema import SCHEMA
from kchaos.model.oracle_inputs import OracleInputs
from kchaos.model.replica_records import REPLICA_SCHEMA
from kchaos.model.run_files import RunDir


def _strings(choices: list[str], codes: np.ndarray) -> pa.Array:
    """A string column from a few distinct values, without a Python object per row."""
    return pa.array(choices, pa.string()).take(pa.array(codes))


def _ids(values: np.ndarray) -> pa.Array:
    return pc.cast(pa.array(values, pa.int64()), pa.string())


def _nullable_ints(values: np.ndarray, valid: np.ndarray, kind: pa.DataType) -> pa.Array:
    return pa.array(values, type=kind, mask=~valid)


class _Rows:
    """Column builder for one row group: each `add` appends a run of rows of one shape."""

    def __init__(self, run_id: str, first_index: int) -> None:
        self.run_id = run_id
        self.first_index = first_index
        self.parts: list[dict[str, pa.Array]] = []
        self.count = 0

    def add(
        self,
        process: pa.Array,
        type_: pa.Array,
        f: pa.Array,
        partition: np.ndarray,
        offset: np.ndarray,
        offset_valid: np.ndarray,
        value: pa.Array,
        detail: pa.Array | None = None,
    ) -> None:
        n = len(value)
        topic = pa.repeat(pa.scalar(TOPIC), n)
        self.parts.append(
            {
                "process": process,
                "type": type_,
                "f": f,
                "topic": topic,
                "partition": pa.array(partition, pa.int32()),
                "offset": _nullable_ints(offset, offset_valid, pa.int64()),
                "key": pa.nulls(n, pa.string()),
                "value": value,
                "error": pa.nulls(n, pa.string()),
                "detail": detail if detail is not None else pa.nulls(n, pa.string()),
            }
        )
        self.count += n

    def table(self) -> pa.Table:
        index = np.arange(self.first_index, self.first_index + self.count, dtype=np.int64)
        columns: dict[str, Any] = {
            "run_id": pa.repeat(pa.scalar(self.run_id), self.count),
            "index": pa.array(index),
            "time_ns": pa.array(index * ROW_NS),
            "wall_time": pa.array(WALL_START + index * (ROW_NS / 1e9)),
        }
        for name in SCHEMA.names[4:]:
            columns[name] = pa.concat_arrays([part[name] for part in self.parts])
        return pa.Table.from_pydict(columns, schema=SCHEMA)


_PRODUCERS = [producer_process(n) for n in range(PRODUCERS)]
_CONSUMER = consumer_process(0)


def _send_block_rows(rows: _Rows, p: Plan, lo: int, hi: int) -> None:
    """Sends lo..hi in blocks: per block, invoke/ok pairs, then the consumer polls the block."""
    n = hi - lo
    blocks = n // BLOCK
    # Row positions inside the run of 3n rows: block b holds sends [b*BLOCK, (b+1)*BLOCK).
    local = np.arange(3 * n, dtype=np.int64)
    block, pos = local // (3 * BLOCK), local % (3 * BLOCK)
    is_send = pos < 2 * BLOCK
    send_j = block * BLOCK + np.where(is_send, pos // 2, pos - 2 * BLOCK)
    i = lo + send_j  # the send this row belongs to (for polls: the poll slot)
    is_ok = is_send & (pos % 2 == 1)
    partition = i % PARTITIONS
    offset = np.where(is_send, p.send_offset[i], p.poll_offset[i])
    value = np.where(is_send, p.send_value[i], p.poll_value[i])
    proc_code = np.where(is_send, (i // PARTITIONS) % PRODUCERS, PRODUCERS)
    type_code = np.where(is_send & ~is_ok, 0, 1)
    f_code = np.where(is_send, 0, 1)
    assert blocks * BLOCK == n
    rows.add(
        _strings([*_PRODUCERS, _CONSUMER], proc_code),
        _strings([INVOKE, OK], type_code),
        _strings([SEND, POLL], f_code),
        partition,
        offset,
        ~is_send | is_ok,
        _ids(value),
    )


def _tail_rows(rows: _Rows, p: Plan) -> None:
    """Tail sends past each partition's end: unseen ones never read, truncated ones only polled."""
    end = p.sends // PARTITIONS  # next offset of every partition
    values = np.concatenate([p.tail_unseen, p.tail_truncated])
    parts = np.concatenate(
        [np.full(p.tail_unseen.size, UNSEEN_P), np.full(p.tail_truncated.size, TRUNCATED_P)]
    )
    offsets = np.concatenate([end + np.arange(p.tail_unseen.size), end + np.arange(p.tail_truncated.size)])
    k = values.size
    rows.add(
        _strings(_PRODUCERS, np.tile([0, 0], k)),
        _strings([INVOKE, OK], np.tile([0, 1], k)),
        _strings([SEND], np.zeros(2 * k, dtype=np.int64)),
        np.repeat(parts, 2),
        np.repeat(offsets, 2),
        np.tile([False, True], k),
        _ids(np.repeat(values, 2)),
    )
    t = p.tail_truncated.size
    rows.add(
        _strings([_CONSUMER], np.zeros(t, dtype=np.int64)),
        _strings([OK], np.zeros(t, dtype=np.int64)),
        _strings([POLL], np.zeros(t, dtype=np.int64)),
        np.full(t, TRUNCATED_P),
        end + np.arange(t),
        np.ones(t, dtype=bool),
        _ids(p.tail_truncated),
    )


def _partition_log(p: Plan, partition: int) -> tuple[np.ndarray, np.ndarray]:
    """(offsets, value ids) of a partition's log as the final read and the replicas see it."""
    log = p.log_value[partition::PARTITIONS]
    offsets = np.arange(log.size, dtype=np.int64)
    if partition == DUPLICATE_P:
        extra = p.duplicate_of
        log = np.concatenate([log, extra])
        offsets = np.arange(log.size, dtype=np.int64)
    return offsets, log


def _final_read_rows(rows: _Rows, p: Plan, partition: int) -> None:
    offsets, log = _partition_log(p, partition)
    detail = json.dumps({"from": 0, "to": int(log.size)})
    rows.add(
        _strings([FINAL_READER_PROCESS], np.zeros(1, dtype=np.int64)),
        _strings([INVOKE], np.zeros(1, dtype=np.int64)),
        _strings([FINAL_READ], np.zeros(1, dtype=np.int64)),
        np.array([partition]),
        np.zeros(1, dtype=np.int64),
        np.zeros(1, dtype=bool),
        pa.nulls(1, pa.string()),
        detail=pa.array([detail]),
    )
    n = log.size
    rows.add(
        _strings([FINAL_READER_PROCESS], np.zeros(n, dtype=np.int64)),
        _strings([OK], np.zeros(n, dtype=np.int64)),
        _strings([FINAL_READ], np.zeros(n, dtype=np.int64)),
        np.full(n, partition),
        offsets,
        np.ones(n, dtype=bool),
        _ids(log),
    )


def write_history(p: Plan, run_dir: Path, run_id: str) -> int:
    files = RunDir(run_dir)
    files.history.mkdir(parents=True)
    path = files.history_parquet
    written = 0
    with pq.ParquetWriter(path, SCHEMA) as writer:
        first = _Rows(run_id, 0)
        assign = json.dumps({"partitions": list(range(PARTITIONS)), "from": {}})
        first.add(
            _strings([_CONSUMER], np.zeros(1, dtype=np.int64)),
            _strings([OK], np.zeros(1, dtype=np.int64)),
            _strings([ASSIGN], np.zeros(1, dtype=np.int64)),
            np.zeros(1, dtype=np.int64),
            np.zeros(1, dtype=np.int64),
            np.zeros(1, dtype=bool),
            pa.nulls(1, pa.string()),
            detail=pa.array([assign]),
        )
        first.parts[0]["partition"] = pa.nulls(1, pa.int32())
        for lo in range(0, p.sends, CHUNK_SENDS):
            rows = first if lo == 0 else _Rows(run_id, written)
            _send_block_rows(rows, p, lo, min(lo + CHUNK_SENDS, p.sends))
            table = rows.table()
            writer.write_table(table)
            written += int(table.num_rows)
        rows = _Rows(run_id, written)
        _tail_rows(rows, p)
        for partition in range(PARTITIONS):
            _final_read_rows(rows, p, partition)
        table = rows.table()
        writer.write_table(table)
        written += int(table.num_rows)
    return written


def write_replicas(p: Plan, run_dir: Path) -> int:
    """Every broker's copy of every partition: the final log; broker 3 diverges at the planted offsets."""
    files = RunDir(run_dir)
    files.replicas.mkdir(parents=True)
    divergent = set(p.divergent.tolist())
    next_value = p.next_value
    written = 0
    with pq.ParquetWriter(files.replicas_parquet, REPLICA_SCHEMA) as writer:
        for partition in range(PARTITIONS):
            offsets, log = _partition_log(p, partition)
            for broker in BROKERS:
                values = log
                if broker == BROKERS[-1]:
                    hit = [int(i) // PARTITIONS for i in divergent if int(i) % PARTITIONS == partition]
                    if hit:
                        values = log.copy()
                        values[hit] = np.arange(next_value, next_value + len(hit))
                n = offsets.size
                table = pa.Table.from_pydict(
                    {
                        "broker": pa.array(np.full(n, broker), pa.int32()),
                        "topic": pa.repeat(pa.scalar(TOPIC), n),
                        "partition": pa.array(np.full(n, partition), pa.int32()),
                        "offset": pa.array(offsets),
                        "leader_epoch": pa.array(np.zeros(n, dtype=np.int32)),
                        "key": pa.nulls(n, pa.string()),
                        "value": _ids(values),
                    },
                    schema=REPLICA_SCHEMA,
                )
                writer.write_table(table)
                written += n
            next_value += sum(1 for i in divergent if int(i) % PARTITIONS == partition)
    return written


def generate(
    sends: int, out: Path, *, replicas: bool = False, injected: Injected | None = None
) -> dict[str, Any]:
    """Writes a run directory (config.json, history/, optional replicas/, expected.json).

    Returns what expected.json holds: the anomaly counts both engines must report.
    """
    injected = injected or Injected()
    started = time.monotonic()
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    run_id = out.name
    p = plan(sends, injected)
    rows = write_history(p, out, run_id)
    replica_rows = write_replicas(p, out) if replicas else 0
    config = {
        "run_id": run_id,
        "source": "bench",
        "topic": TOPIC,
        **OracleInputs(
            acks="all",
            min_insync_replicas=2,
            replication_factor=3,
            unclean_leader_election=False,
            idempotence=True,
            partitions=PARTITIONS,
        ).to_json(),
    }
    RunDir(out).config.write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    expected = {
        "sends": sends + injected.unseen + injected.truncated_read,
        "sends_acknowledged": sends + injected.unseen + injected.truncated_read,
        "history_rows": rows,
        "replica_rows": replica_rows,
        "replicas": replicas,
        "injected": asdict(injected),
        "anomalies": injected.expected(replicas),
        "generate_seconds": round(time.monotonic() - started, 2),
    }
    (out / "expected.json").write_text(json.dumps(expected, indent=2) + "\n", encoding="utf-8")
    return expected


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sends", type=int, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--replicas", action="store_true", help="also write replicas/replicas.parquet")
    args = parser.parse_args()
    expected = generate(args.sends, args.out, replicas=args.replicas)
    print(json.dumps(expected, indent=2))


if __name__ == "__main__":
    main()
