"""The dependency-cycle check between read-write transactions on a big history (issue 49), beside its floor.

    .venv/bin/python -m bench.cycles --txns 1000000 [--per-class 10] [--repeats 1]

Generates a run directory of `--txns` read-write transactions (bench/data/rw-<N>/, reused while its
settings match): 4 producers taking turns on 8 partitions, each transaction 1-4 sends and 0-2 polls of
distinct partitions, every one committed, then a final read of every partition. The transactions run one
after another, each poll returning its partition's latest record, so their dependency graph has no cycle;
into it go `--per-class` planted pairs of concurrent transactions per class, each a cycle of its own
(`PLANTS`, tests.test_dependency_reference's plants at the partitions' ends). Each transaction's records
in a partition are followed by an offset for its commit marker, as in Kafka.

The floor is the same history without its `txn-poll` rows (bench/data/rw-<N>-floor/): its check is the
same but for the read-write transaction checks (the internal anomalies and the cycles). Each is one
`check_run` in a process of its own, taking turns, `--repeats` times: the process's and the check's wall
seconds, the Python driver's peak resident memory (the JVM is its child) and the whole tree's. Writes the
`cycles` section of bench/RESULTS.md and bench/results.json. Take the cluster lock (docs/benchmark.md).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from bench.process import PeakSampler, measure
from bench.sections import write_json_section, write_markdown_section
from kchaos.checkers.rules.anomaly_names import (
    BASE_CYCLE_CLASSES,
    CYCLE_CLASSES,
    G0,
    G1C,
    G2,
    G_SINGLE,
    WR_CYCLE,
)
from kchaos.model import events as ev
from kchaos.model.history_schema import SCHEMA
from kchaos.model.oracle_inputs import OracleInputs
from kchaos.model.run_files import RunDir

BENCH_DIR = Path(__file__).resolve().parent
SECTION = "cycles"
TOPIC = "bench-rw"
PARTITIONS, PRODUCERS = 8, 4
ROW_NS, WALL_START = 1_000, 1_700_000_000.0
#: Op codes, indexes into F_NAMES; a marker takes an offset in its partition and has no row.
BEGIN, SEND, POLL, COMMIT, MARKER, ASSIGN, FINAL = range(7)
F_NAMES = [ev.TXN_BEGIN, ev.TXN_SEND, ev.TXN_POLL, ev.TXN_COMMIT, "", ev.ASSIGN, ev.FINAL_READ]
PROCESSES = [*(ev.producer_process(k) for k in range(PRODUCERS)), ev.FINAL_READER_PROCESS]
#: Per op: its sort key, the transaction and producer its `key` names (-1: none), the row's process, op,
#: 1 for `ok` (0 `invoke`), partition, record (a send's, or the one a poll or the final read returned),
#: offset and detail (an index into `plan`'s details); -1 where it has none.
COLUMNS = ("order", "txn", "proc", "process", "f", "ok", "part", "record", "offset", "detail")
CHUNK_OPS = 2_000_000

#: The planted pairs, step by step: `who op [partition [read]]`. T1 and T2 are two producers' transactions
#: running at once; a send or poll is to partition A or B (two the plant draws); a poll returns the record
#: of the step numbered `read` (from 0), or without one the partition's latest record (a transaction's
#: before the plant). Each makes the edges its class needs between T1 and T2 alone; every other edge of
#: theirs comes from a transaction before the plant or goes to one after it, so each is a component alone.
PLANTS: dict[str, str] = {
    WR_CYCLE: "T1 begin, T2 begin, T1 send A, T2 send B, T1 poll B 3, T2 poll A 2, T1 commit, T2 commit",
    G0: "T1 begin, T2 begin, T1 send A, T2 send A, T2 send B, T1 send B, T1 commit, T2 commit",
    G1C: "T1 begin, T1 send A, T2 begin, T2 send A, T2 send B, T2 commit, T1 poll B 4, T1 commit",
    G_SINGLE: "T1 begin, T1 poll A, T2 begin, T2 send A, T2 send B, T2 commit, T1 send B, T1 commit",
    G2: "T1 begin, T2 begin, T1 poll A, T2 poll B, T1 send B, T2 send A, T1 commit, T2 commit",
}
OPS = {"begin": BEGIN, "send": SEND, "poll": POLL, "commit": COMMIT}
Ops = dict[str, np.ndarray]


def _ops(n: int, **given: Any) -> Ops:
    """`n` ops: the `given` columns (each a value per op, or one for all), -1 in the others."""
    return {name: np.broadcast_to(np.asarray(given.get(name, -1), dtype=np.int64), (n,)) for name in COLUMNS}


def _serial(rng: np.random.Generator, n: int, slot: np.ndarray) -> Ops:
    """`n` transactions run one after another, transaction t at sort slot `slot[t]`: begin, its polls (of
    distinct partitions, records resolved by `plan`), its sends (invoke, ok), its commit (invoke, ok), then
    a marker in each partition it wrote."""
    sends, polls = rng.integers(1, 5, n), rng.integers(0, 3, n)
    send_part = rng.integers(0, PARTITIONS, int(sends.sum()))
    first, step = rng.integers(0, PARTITIONS, n), rng.integers(1, PARTITIONS, n)
    poll_txn = np.repeat(np.arange(n), polls)
    second = np.arange(poll_txn.size) - (np.cumsum(polls) - polls)[poll_txn]
    poll_part = (first[poll_txn] + second * step[poll_txn]) % PARTITIONS
    written = np.unique(np.repeat(np.arange(n), sends) * PARTITIONS + send_part)
    markers = np.bincount(written // PARTITIONS, minlength=n)
    rows = 1 + polls + 2 * sends + 2 + markers
    txn = np.repeat(np.arange(n), rows)
    pos = np.arange(txn.size) - (np.cumsum(rows) - rows)[txn]
    q, s = polls[txn], sends[txn]
    f = np.select(
        [pos == 0, pos <= q, pos <= q + 2 * s, pos <= q + 2 * s + 2], [BEGIN, POLL, SEND, COMMIT], MARKER
    )
    send_j = (np.cumsum(sends) - sends)[txn] + (pos - q - 1) // 2
    poll_j = (np.cumsum(polls) - polls)[txn] + pos - 1
    mark_j = (np.cumsum(markers) - markers)[txn] + pos - (q + 2 * s + 3)

    def take(values: np.ndarray, j: np.ndarray) -> np.ndarray:
        return values[np.clip(j, 0, values.size - 1)] if values.size else np.full(j.size, -1)

    sources = [take(send_part, send_j), take(poll_part, poll_j), take(written % PARTITIONS, mark_j)]
    ok = np.where(f == SEND, (pos - q) % 2 == 0, (f != COMMIT) | (pos == q + 2 * s + 2))
    return _ops(txn.size, order=slot[txn] * 64 + pos, txn=txn, proc=txn % PRODUCERS, process=txn % PRODUCERS,
                f=f, ok=ok, part=np.select([f == SEND, f == POLL, f == MARKER], sources, -1),
                record=np.where(f == SEND, send_j, -1))  # fmt: skip


def _plants(rng: np.random.Generator, at: list[int], first_txn: int, first_record: int) -> Ops:
    """The planted pairs: plant j, of class BASE_CYCLE_CLASSES[j % 5], right after serial transaction `at[j]`
    (sort slot `at[j] + j + 1`), its producers the next two in turn."""
    ops: list[tuple[int, ...]] = []
    record = first_record
    for j, after in enumerate(at):
        a = int(rng.integers(0, PARTITIONS))
        where = {"A": a, "B": (a + 1 + int(rng.integers(0, PARTITIONS - 1))) % PARTITIONS}
        records: dict[int, int] = {}
        wrote: dict[int, set[int]] = {0: set(), 1: set()}
        rows: list[tuple[int, int, int, int, int]] = []  # who, op, ok, partition, record
        for number, step in enumerate(PLANTS[BASE_CYCLE_CLASSES[j % len(BASE_CYCLE_CLASSES)]].split(", ")):
            name, op, *rest = step.split()
            who, f, part = int(name[1]) - 1, OPS[op], where[rest[0]] if rest else -1
            if f == SEND:
                records[number], record = record, record + 1
                wrote[who].add(part)
                rows += [(who, SEND, 0, part, records[number]), (who, SEND, 1, part, records[number])]
            elif f == POLL:
                rows.append((who, POLL, 1, part, records[int(rest[1])] if len(rest) > 1 else -1))
            elif f == COMMIT:
                rows += [(who, COMMIT, 0, -1, -1), (who, COMMIT, 1, -1, -1)]
                rows += [(who, MARKER, 1, p, -1) for p in sorted(wrote[who])]
            else:
                rows.append((who, BEGIN, 1, -1, -1))
        for pos, (who, f, ok, part, rec) in enumerate(rows):
            producer = (after + 1 + who) % PRODUCERS
            ops.append(
                ((after + j + 1) * 64 + pos, first_txn + 2 * j + who, producer, producer, f, ok, part, rec)
            )
    return _ops(len(ops), **dict(zip(COLUMNS, zip(*ops, strict=True), strict=False)))


def plan(txns: int, per_class: int, seed: int = 49) -> tuple[Ops, list[str]]:
    """Every row's op in history order: the producers' assigns (their consumers read at read_committed),
    the transactions with each offset and polled record resolved (a poll of a still empty partition is
    dropped), then the final read of every partition in offset order; and the rows' details."""
    rng = np.random.default_rng(seed)
    plants = per_class * len(BASE_CYCLE_CLASSES)
    n = txns - 2 * plants
    if n < 50 * (plants + 1):
        raise ValueError(f"{txns} transactions are too few for {plants} plants 50 transactions apart")
    at = [(j + 1) * n // (plants + 1) for j in range(plants)]
    serial = _serial(rng, n, np.arange(n) + np.searchsorted(np.array(at), np.arange(n), side="left"))
    planted = _plants(rng, at, n, int(((serial["f"] == SEND) & (serial["ok"] == 1)).sum()))
    order = np.argsort(np.concatenate([serial["order"], planted["order"]]), kind="stable")
    ops = {name: np.concatenate([serial[name], planted[name]])[order] for name in COLUMNS}
    f, part, record, offset = ops["f"], ops["part"], ops["record"], ops["offset"]
    acked = (f == SEND) & (ops["ok"] == 1)
    ends, final = [], []
    for p in range(PARTITIONS):
        taking = np.flatnonzero((acked | (f == MARKER)) & (part == p))
        offset[taking] = np.arange(taking.size)
        ends.append(int(taking.size))
        written = np.flatnonzero(acked & (part == p))
        latest = np.flatnonzero((f == POLL) & (part == p) & (record < 0))
        before = np.searchsorted(written, latest) - 1
        record[latest] = np.where(before >= 0, record[written[np.maximum(before, 0)]], -1)
        final += [_ops(1, process=PRODUCERS, f=FINAL, ok=0, part=p, detail=PRODUCERS + 1 + p)]
        final += [{**{c: ops[c][written] for c in COLUMNS}, "process": np.full(written.size, PRODUCERS),
                   "f": np.full(written.size, FINAL)}]  # fmt: skip
    at_offset = np.full(int(record.max()) + 1, -1, dtype=np.int64)
    at_offset[record[acked]] = offset[acked]
    polled = (f == POLL) & (record >= 0)
    offset[polled] = at_offset[record[polled]]
    ops["detail"] = np.where(f == BEGIN, ops["proc"], -1)
    keep = (f != MARKER) & ((f != POLL) | polled)
    start = _ops(PRODUCERS, process=range(PRODUCERS), f=np.full(PRODUCERS, ASSIGN), ok=1, detail=PRODUCERS)
    parts = [start, {c: ops[c][keep] for c in COLUMNS}, *final]
    assign = {ev.ISOLATION: ev.READ_COMMITTED, "partitions": list(range(PARTITIONS)),
              "from": dict.fromkeys(map(str, range(PARTITIONS)))}  # fmt: skip
    details = [
        *(json.dumps({ev.TRANSACTIONAL_ID: f"bench-{process}"}) for process in PROCESSES[:PRODUCERS]),
        json.dumps(assign, sort_keys=True),
        *(
            json.dumps({"from": 0, ev.ISOLATION: ev.READ_COMMITTED, "to": end}, sort_keys=True)
            for end in ends
        ),
    ]
    return {c: np.concatenate([part[c] for part in parts]) for c in COLUMNS}, details


def _table(run_id: str, first: int, ops: Ops, details: list[str]) -> pa.Table:
    """Rows `first`.. of the history from their ops."""
    n, f = ops["f"].size, ops["f"]
    index = np.arange(first, first + n, dtype=np.int64)

    def text(values: np.ndarray, absent: np.ndarray) -> pa.Array:
        return pc.cast(pa.array(values, mask=absent), pa.string())

    untopical = (f == BEGIN) | (f == COMMIT)
    columns = {
        "run_id": pa.repeat(pa.scalar(run_id), n), "index": pa.array(index),
        "time_ns": pa.array(index * ROW_NS), "wall_time": pa.array(WALL_START + index * (ROW_NS / 1e9)),
        "process": pa.array(PROCESSES).take(pa.array(ops["process"])),
        "type": pa.array([ev.INVOKE, ev.OK]).take(pa.array(ops["ok"])),
        "f": pa.array(F_NAMES).take(pa.array(f)),
        "topic": pa.array([TOPIC]).take(pa.array(np.zeros(n, dtype=np.int64), mask=untopical)),
        "partition": pa.array(ops["part"], pa.int32(), mask=ops["part"] < 0),
        "offset": pa.array(ops["offset"], mask=ops["offset"] < 0),
        "key": pc.binary_join_element_wise("producer-", text(ops["proc"], ops["txn"] < 0), "-txn-",
                                           text(ops["txn"], ops["txn"] < 0), ""),
        "value": text(ops["record"], ops["record"] < 0),
        "error": pa.nulls(n, pa.string()),
        "detail": pa.array(details).take(pa.array(ops["detail"], mask=ops["detail"] < 0)),
    }  # fmt: skip
    return pa.Table.from_pydict(columns, schema=SCHEMA)


def generate(txns: int, per_class: int, out: Path) -> dict[str, Any]:
    """Writes the run directory `out` and its floor `<out>-floor` (the same rows but the `txn-poll` ones),
    each with config.json and expected.json; returns what expected.json holds."""
    started = time.monotonic()
    ops, details = plan(txns, per_class)
    floor_dir = out.with_name(out.name + "-floor")
    sides = {out: ops, floor_dir: {c: values[ops["f"] != POLL] for c, values in ops.items()}}
    expected: dict[str, Any] = {
        "txns": txns, "per_class": per_class, "sends": int(((ops["f"] == SEND) & (ops["ok"] == 1)).sum()),
        "polls": int((ops["f"] == POLL).sum()),
        # A plant's two transactions overlap in time, so none is also a variant (process, realtime).
        "anomalies": {name: per_class if name in BASE_CYCLE_CLASSES else 0 for name in CYCLE_CLASSES},
    }  # fmt: skip
    oracle = OracleInputs(acks="all", min_insync_replicas=2, replication_factor=3,
                          unclean_leader_election=False, idempotence=True, partitions=PARTITIONS)  # fmt: skip
    for run_dir, rows in sides.items():
        if run_dir.exists():
            shutil.rmtree(run_dir)
        RunDir(run_dir).history.mkdir(parents=True)
        size = rows["f"].size
        with pq.ParquetWriter(RunDir(run_dir).history_parquet, SCHEMA) as writer:
            for lo in range(0, size, CHUNK_OPS):
                chunk = {c: values[lo : lo + CHUNK_OPS] for c, values in rows.items()}
                writer.write_table(_table(run_dir.name, lo, chunk, details))
        config = {"run_id": run_dir.name, "source": "bench", "topic": TOPIC, "workload": "txn",
                  "producers": PRODUCERS, "txn_polls": 2 * (run_dir == out), **oracle.to_json()}  # fmt: skip
        RunDir(run_dir).config.write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
        expected["floor_rows" if run_dir == floor_dir else "history_rows"] = size
    expected["generate_seconds"] = round(time.monotonic() - started, 2)
    for run_dir in sides:
        (run_dir / "expected.json").write_text(json.dumps(expected, indent=2) + "\n", encoding="utf-8")
    return expected


def dataset(txns: int, per_class: int, regenerate: bool) -> tuple[Path, Path, dict[str, Any]]:
    """The run directory for `txns` and its floor, generated unless made with the same settings."""
    run_dir = BENCH_DIR / "data" / f"rw-{txns}"
    floor_dir = run_dir.with_name(run_dir.name + "-floor")
    paths = [d / "expected.json" for d in (run_dir, floor_dir)]
    if not regenerate and all(p.exists() for p in paths):
        expected: dict[str, Any] = json.loads(paths[0].read_text(encoding="utf-8"))
        if expected.get("per_class") == per_class:
            return run_dir, floor_dir, expected
    return run_dir, floor_dir, generate(txns, per_class, run_dir)


def check(run_dir: Path, memory: str, edges: bool) -> dict[str, Any]:
    """One `check_run` of `run_dir` in this process (`--check`): its wall seconds (the Spark session's
    start included), the Python driver's peak resident memory and the whole process tree's during it, and
    every anomaly's count. `edges`: then, untimed, the dependency edges by kind and how many of them the
    cycle search was given (`cycle_edges`)."""
    from kchaos.checkers.results import check_run

    sampler = PeakSampler(os.getpid())
    sampler.start()
    started = time.perf_counter()
    results = check_run(run_dir, driver_memory=memory)
    seconds = time.perf_counter() - started
    tree = sampler.stop()
    driver = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # kilobytes on Linux
    counts = {name: anomaly["count"] for name, anomaly in results["anomalies"].items()}
    out: dict[str, Any] = {"check_seconds": round(seconds, 2), "driver_peak_mb": round(driver / 2**20),
                           "tree_peak_mb": round(tree / 2**20), "counts": counts}  # fmt: skip
    if edges:
        from pyspark.sql import SparkSession

        from kchaos.checkers.passes.frames import load_history
        from kchaos.checkers.passes.read_write.dependency_edges import (
            cycle_edges,
            positioned_edges,
            transaction_spans,
        )
        from kchaos.checkers.passes.read_write.transaction_reads import transaction_reads
        from kchaos.checkers.passes.transaction_passes import outcomes

        session = SparkSession.getActiveSession()
        assert session is not None
        history = load_history(session, run_dir)
        spans = transaction_spans(history, outcomes(history))
        positioned = positioned_edges(history, transaction_reads(history), spans).persist()
        kinds = positioned.groupBy("kind").count().collect()
        out["edges"] = {str(row["kind"]): int(row["count"]) for row in kinds}
        out["searched_edges"] = cycle_edges(positioned).count()
    return out


def _turn(run_dir: Path, memory: str, timeout: float, edges: bool) -> dict[str, Any]:
    command = [sys.executable, "-m", "bench.cycles", "--check", str(run_dir), "--spark-memory", memory]
    measured = measure([*command, *(["--edges"] if edges else [])], BENCH_DIR.parent, timeout)
    lines = [line for line in measured.stdout.splitlines() if line.startswith("{")]
    result: dict[str, Any] = {"ok": measured.returncode == 0 and bool(lines)}
    result.update(json.loads(lines[-1]) if result["ok"] else {"error": measured.stderr.strip()[-2000:]})
    mb = round(measured.peak_bytes / 2**20)
    return {**result, "process_seconds": round(measured.seconds, 2), "process_peak_mb": mb}


def _median(turns: list[dict[str, Any]], name: str) -> float | None:
    values = [turn[name] for turn in turns if turn.get("ok")]
    return round(statistics.median(values), 2) if values else None


def measure_cycles(
    txns: int, per_class: int, repeats: int, memory: str, timeout: float, regenerate: bool
) -> dict[str, Any]:
    """The floor's and the full check's turns, taking turns, then their medians and what the check found."""
    run_dir, floor_dir, expected = dataset(txns, per_class, regenerate)
    turns: dict[str, list[dict[str, Any]]] = {"floor": [], "full": []}
    for repeat in range(repeats):
        turns["floor"].append(_turn(floor_dir, memory, timeout, False))
        turns["full"].append(_turn(run_dir, memory, timeout, repeat == 0))
    names = ("check_seconds", "process_seconds", "driver_peak_mb", "tree_peak_mb")
    medians = {side: {name: _median(each, name) for name in names} for side, each in turns.items()}
    full = [turn for turn in turns["full"] if turn.get("ok")]
    planted: dict[str, int] = expected["anomalies"]
    floor_s, full_s = medians["floor"]["check_seconds"], medians["full"]["check_seconds"]
    found = [{n: c for n, c in t["counts"].items() if n in planted or c} for t in full]
    floor_found = {n for t in turns["floor"] if t.get("ok") for n, c in t["counts"].items() if c}
    return {
        "command": f"python -m bench.cycles --txns {txns} --per-class {per_class} --repeats {repeats} "
        f"--spark-memory {memory}",
        "measured_at": time.strftime("%Y-%m-%d %H:%M"), "cpus": os.cpu_count(), "dataset": expected,
        "turns": turns, "medians": medians,
        "full_over_floor": round(full_s / floor_s, 3) if floor_s and full_s else None,
        "edges": full[0].get("edges") if full else None,
        "searched_edges": full[0].get("searched_edges") if full else None,
        "planted": planted, "found": found[0] if found else {},
        "found_exactly": bool(found) and all(each == planted for each in found),
        "floor_found": sorted(floor_found),
    }  # fmt: skip


def markdown(report: dict[str, Any]) -> str:
    d, m, edges = report["dataset"], report["medians"], report["edges"] or {}
    lines = [
        "## Cycles", "",
        f"`{report['command']}` ({report['measured_at']}, {report['cpus']} CPUs): {d['txns']:,} read-write "
        f"transactions ({d['sends']:,} sends, {d['polls']:,} polls) from {PRODUCERS} producers on "
        f"{PARTITIONS} partitions, {d['per_class']} planted cycles of each class. Floor: the same history "
        "without its `txn-poll` rows, so the same check but the read-write transaction ones (the internal "
        "anomalies and the cycles). Each a whole `check_run` in a process of its own, taking turns; medians "
        f"of {len(report['turns']['full'])}. Check seconds include starting the Spark session; driver: the "
        "Python process's peak resident memory; tree: with the Spark JVM.", "",
        "| check | history rows | check s | process s | driver peak MB | tree peak MB |",
        "|---|---:|---:|---:|---:|---:|",
        *(f"| {side} | {d[rows]:,} | {m[side]['check_seconds']} | {m[side]['process_seconds']} | "
          f"{m[side]['driver_peak_mb']} | {m[side]['tree_peak_mb']} |"
          for side, rows in (("floor", "floor_rows"), ("full", "history_rows"))), "",
        f"Full over floor: **{report['full_over_floor']}**. Dependency edges: {sum(edges.values()):,} "
        f"({', '.join(f'{k} {v:,}' for k, v in sorted(edges.items()))}), of which the cycle search was "
        f"given {report['searched_edges']}. Cycles found = planted: "
        f"**{'yes' if report['found_exactly'] else 'NO'}** (planted {json.dumps(report['planted'])}, found "
        f"{json.dumps(report['found'])}); the floor found {json.dumps(report['floor_found'])}.",
        "", "Each turn (floor s, full s): " + ", ".join(
            f"({f.get('check_seconds', 'failed')}, {g.get('check_seconds', 'failed')})"
            for f, g in zip(report["turns"]["floor"], report["turns"]["full"], strict=True)),
    ]  # fmt: skip
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--txns", type=int, default=1_000_000)
    parser.add_argument("--per-class", type=int, default=10, help="planted cycles of each class")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--spark-memory", default="6g", help="the check's Spark driver heap")
    parser.add_argument("--timeout", type=float, default=3600.0, help="seconds per check process")
    parser.add_argument("--regenerate", action="store_true")
    parser.add_argument("--check", type=Path, help=argparse.SUPPRESS)  # one check, in this process
    parser.add_argument("--edges", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.check:
        print(json.dumps(check(args.check, args.spark_memory, args.edges)))
        return
    report = measure_cycles(
        args.txns, args.per_class, args.repeats, args.spark_memory, args.timeout, args.regenerate
    )
    write_json_section(BENCH_DIR / "results.json", SECTION, report)
    write_markdown_section(BENCH_DIR / "RESULTS.md", SECTION, markdown(report))
    print(markdown(report))


if __name__ == "__main__":
    main()
