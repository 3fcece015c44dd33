"""How fast kchaos's workload writes and reads, against Kafka's own producer tool on the same cluster.

    flock /tmp/kchaos-cluster.lock .venv/bin/python -m bench.workload --records 100000 --rounds 3

One cluster (three KRaft nodes of the default release, the heap `kchaos run` gives them), then, in each
round and side by side: Kafka's `ProducerPerformance` inside node 1 (`--throughput -1`, `--record-size
20`) into a fresh topic, and the kchaos workload with no rate limit (`--rate 0`), its producers and one
consumer recording every send and read, into another fresh topic: same acks, same record count, same
partitions, replication factor and `min.insync.replicas` as a default run. Reported per side: medians of
acknowledged records per second (first send to last acknowledgement); for kchaos also how long its
consumer took after the last acknowledgement to have read every acknowledged record, and whether the
history accounts for every send (one outcome per invocation) and every acknowledged record was read.

Timed goals live here, never in tests. Run it while nothing else runs (the cluster lock): two cores carry
the brokers and the clients, and a busy machine fences brokers.
"""

from __future__ import annotations

import argparse
import re
import secrets
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from bench.sections import write_json_section, write_markdown_section
from kchaos.harness.cluster import INTERNAL_PORT, KafkaCluster
from kchaos.harness.image import resolve_image, sidecar_image
from kchaos.model.config import RunConfig
from kchaos.model.events import INVOKE, OK, OUTCOMES, POLL, SEND
from kchaos.model.history import HistoryWriter, read_staging, read_staging_by_rows
from kchaos.model.releases import DEFAULT_KAFKA_VERSION
from kchaos.model.run_files import RunDir
from kchaos.model.waiting import wait_until
from kchaos.workloads.consumer import ConsumerWorkload
from kchaos.workloads.producer import ProducerWorkload

BENCH_DIR = Path(__file__).resolve().parent
#: This benchmark's section of RESULTS.md and results.json (`bench.sections`).
SECTION = "workload"
#: `N records sent, R records/sec (...)`: the summary line ProducerPerformance ends with.
_PERF_SUMMARY = re.compile(r"(\d+) records sent, ([\d.]+) records/sec")
DEFAULTS = RunConfig.model_validate({})


@dataclass(frozen=True)
class PerfRound:
    records: int
    records_per_s: float


@dataclass(frozen=True)
class KchaosRound:
    records: int
    acknowledged: int
    records_per_s: float
    #: Seconds from the last acknowledgement until the consumer had read every acknowledged record.
    consumer_behind_s: float | None
    outcomes_per_invoke: bool
    acknowledged_read: int
    history_rows: int
    #: Seconds to turn the staged history into a table: Arrow's JSON reader, and row by row.
    convert_arrow_s: float
    convert_rows_s: float


def producer_performance(cluster: KafkaCluster, topic: str, records: int, acks: str) -> PerfRound:
    """Kafka's own producer benchmark, run inside node 1 against the brokers' internal listener."""
    bootstrap = ",".join(f"{node.hostname}:{INTERNAL_PORT}" for node in cluster.nodes.values())
    node = cluster.nodes[min(cluster.nodes)]
    output = node.run_tool(
        "org.apache.kafka.tools.ProducerPerformance", "--topic", topic, "--num-records", str(records),
        "--record-size", "20", "--throughput", "-1",
        "--producer-props", f"acks={acks}", f"bootstrap.servers={bootstrap}",
    )  # fmt: skip
    found = _PERF_SUMMARY.findall(output)
    if not found:
        raise RuntimeError(f"ProducerPerformance printed no summary line:\n{output[-2000:]}")
    sent, rate = found[-1]
    return PerfRound(int(sent), float(rate))


def kchaos_workload(
    cluster: KafkaCluster, topic: str, records: int, producers: int, workdir: Path
) -> KchaosRound:
    """The kchaos producers (unpaced, `records` sends in all) and one consumer, recording as in a run."""
    config = RunConfig.model_validate(
        {"topic": topic, "rate": 0, "producers": producers, "consumers": 1, "acks": DEFAULTS.acks}
    )
    history = HistoryWriter(RunDir(workdir / topic), f"bench-{topic}")
    readers = ConsumerWorkload(config, cluster.bootstrap, history)
    writers = ProducerWorkload(config, cluster.bootstrap, history, limit=records)
    readers.start()
    writers.start()
    try:
        wait_until(
            lambda: all(p.done and not p.pending for p in writers.processes),
            600, f"{records} sends acknowledged or failed",
        )  # fmt: skip
        acknowledged = history.count(SEND, OK)
        wait_until(lambda: history.count(POLL, OK) >= acknowledged, 120, "the consumer to read every record")
    finally:
        writers.stop()
        readers.stop()
        path = history.finish()
    staging = RunDir(workdir / topic).history_staging
    return _judged(
        pq.read_table(path), records, _timed(read_staging, staging), _timed(read_staging_by_rows, staging)
    )


def _timed(convert: Callable[[Path], Any], staging: Path) -> float:
    started = time.perf_counter()
    convert(staging)
    return round(time.perf_counter() - started, 3)


def _judged(table: Any, records: int, convert_arrow_s: float, convert_rows_s: float) -> KchaosRound:
    """What the recorded history says of the round: rates from its own clocks, and whether it is whole."""
    sends = table.filter(pc.equal(table["f"], SEND))
    invokes = sends.filter(pc.equal(sends["type"], INVOKE))
    outcomes = sends.filter(pc.is_in(sends["type"], pa.array(list(OUTCOMES))))
    acked = sends.filter(pc.equal(sends["type"], OK))
    polls = table.filter(pc.and_(pc.equal(table["f"], POLL), pc.equal(table["type"], OK)))
    invoked_values = set(invokes["value"].to_pylist())
    outcome_values = outcomes["value"].to_pylist()
    acked_values = set(acked["value"].to_pylist())
    read_values = set(polls["value"].to_pylist())
    first_ns = pc.min(invokes["time_ns"]).as_py()
    last_ack_ns = pc.max(acked["time_ns"]).as_py()
    seconds = (last_ack_ns - first_ns) / 1e9
    read_acked = polls.filter(pc.is_in(polls["value"], pa.array(list(acked_values))))
    last_read_ns = pc.max(read_acked["time_ns"]).as_py() if read_acked.num_rows else None
    return KchaosRound(
        records=len(invoked_values),
        acknowledged=len(acked_values),
        records_per_s=round(len(acked_values) / seconds, 1),
        consumer_behind_s=_seconds_after(last_read_ns, last_ack_ns),
        outcomes_per_invoke=(
            invokes.num_rows == records
            and len(outcome_values) == len(invoked_values)
            and set(outcome_values) == invoked_values
        ),
        acknowledged_read=len(acked_values & read_values),
        history_rows=table.num_rows,
        convert_arrow_s=convert_arrow_s,
        convert_rows_s=convert_rows_s,
    )


def _seconds_after(later_ns: int | None, earlier_ns: int) -> float | None:
    return None if later_ns is None else round(max(0, later_ns - earlier_ns) / 1e9, 3)


def run(records: int, rounds: int, producers: int, acks: str) -> dict[str, Any]:
    image = resolve_image(None, DEFAULT_KAFKA_VERSION)
    cluster = KafkaCluster(
        run_id=f"bench-workload-{secrets.token_hex(3)}", image=image.ref,
        sidecar_image=sidecar_image(), size=DEFAULTS.brokers, heap=DEFAULTS.broker_heap,
    )  # fmt: skip
    perf: list[PerfRound] = []
    kchaos: list[KchaosRound] = []
    with cluster, tempfile.TemporaryDirectory(prefix="kchaos-bench-") as workdir:
        for n in range(rounds):
            for side in ("perf", "kchaos"):
                topic = f"{side}-{n}"
                cluster.create_topic(
                    topic, DEFAULTS.partitions, DEFAULTS.replication_factor, DEFAULTS.min_insync_replicas
                )
                if side == "perf":
                    perf.append(producer_performance(cluster, topic, records, acks))
                else:
                    kchaos.append(kchaos_workload(cluster, topic, records, producers, Path(workdir)))
                print(f"round {n + 1} {side}: {(perf if side == 'perf' else kchaos)[-1]}", flush=True)
    perf_rate = statistics.median(r.records_per_s for r in perf)
    kchaos_rate = statistics.median(r.records_per_s for r in kchaos)
    return {
        "kafka_version": image.kafka_version,
        "records": records,
        "rounds": rounds,
        "producers": producers,
        "acks": acks,
        "producer_performance": [asdict(r) for r in perf],
        "kchaos": [asdict(r) for r in kchaos],
        "producer_performance_per_s": perf_rate,
        "kchaos_per_s": kchaos_rate,
        "ratio": round(kchaos_rate / perf_rate, 3),
        "consumer_behind_s": statistics.median(r.consumer_behind_s or 0.0 for r in kchaos),
        "every_send_recorded": all(r.outcomes_per_invoke for r in kchaos),
        "every_ack_read": all(r.acknowledged_read == r.acknowledged for r in kchaos),
        "history_rows": statistics.median(r.history_rows for r in kchaos),
        "convert_arrow_s": statistics.median(r.convert_arrow_s for r in kchaos),
        "convert_rows_s": statistics.median(r.convert_rows_s for r in kchaos),
    }


def markdown(result: dict[str, Any]) -> str:
    rows = "\n".join(
        f"| {n + 1} | {p['records_per_s']:,.0f} | {k['records_per_s']:,.0f} | {k['acknowledged']:,} | "
        f"{k['consumer_behind_s']} | {'yes' if k['outcomes_per_invoke'] else 'NO'} | "
        f"{k['acknowledged_read']:,} |"
        for n, (p, k) in enumerate(zip(result["producer_performance"], result["kchaos"], strict=True))
    )
    return (
        f"Generated by `python -m bench.workload --records {result['records']} --rounds {result['rounds']} "
        f"--producers {result['producers']}`: one 3-node KRaft cluster of Kafka {result['kafka_version']}, "
        f"acks={result['acks']}, {result['records']:,} records per side and round, the two sides taking "
        "turns. ProducerPerformance runs inside node 1 (20-byte values); kchaos runs with `--rate 0` "
        "(no limit), one consumer, every send and read recorded.\n\n"
        f"**kchaos {result['kchaos_per_s']:,.0f}/s against ProducerPerformance "
        f"{result['producer_performance_per_s']:,.0f}/s: ratio {result['ratio']}** (medians); the consumer "
        f"had read everything {result['consumer_behind_s']} s after the last acknowledgement (median); "
        f"every send has one outcome: {'yes' if result['every_send_recorded'] else 'NO'}; every "
        f"acknowledged record read: {'yes' if result['every_ack_read'] else 'NO'}.\n\n"
        f"Turning that history ({result['history_rows']:,.0f} rows staged) into a table (median): Arrow's "
        f"JSON reader {result['convert_arrow_s']} s, row by row {result['convert_rows_s']} s, ratio "
        f"{result['convert_arrow_s'] / result['convert_rows_s']:.2f}.\n\n"
        "| round | ProducerPerformance /s | kchaos acknowledged /s | kchaos acknowledged | consumer behind s "
        "| one outcome per send | acknowledged and read |\n|---:|---:|---:|---:|---:|---|---:|\n"
        f"{rows}\n"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--producers", type=int, default=1)
    parser.add_argument("--acks", choices=("all", "1"), default=DEFAULTS.acks)
    args = parser.parse_args(argv)
    result = run(args.records, args.rounds, args.producers, args.acks)
    write_json_section(BENCH_DIR / "results.json", SECTION, result)
    write_markdown_section(BENCH_DIR / "RESULTS.md", SECTION, "## Workload\n\n" + markdown(result))
    print(markdown(result))


if __name__ == "__main__":
    main()
