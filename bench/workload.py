"""How fast kchaos's workload writes and reads, against Kafka's own producer tool on the same cluster.

    flock /tmp/kchaos-cluster.lock .venv/bin/python -m bench.workload --records 100000 --rounds 3

One cluster (three KRaft nodes of the default release, the heap `kchaos run` gives them), then, in each
round and side by side: Kafka's `ProducerPerformance` inside node 1 (`--throughput -1`, `--record-size
20`) into a fresh topic, and each kchaos producer side with no rate limit (`--rate 0`), its producers and
one consumer (`--consumers 1`, as in a run; `--consumers 0`: the producers alone, as ProducerPerformance
runs) recording every send and read, into a fresh topic of its own: same acks, same record count,
same partitions, replication factor and `min.insync.replicas` as a default run. The kchaos sides
(`--sides`): `threads`, confluent-kafka threads in this process (`--client librdkafka`); `rdkafka-process`,
the librdkafka worker process in its container (`--client librdkafka-process`); `java-process`, the
release's Java client worker in its container (`--client java`). Reported per side: medians of
acknowledged records per second (first send to last acknowledgement), and each kchaos side's ratio to
ProducerPerformance; for kchaos also how long its consumer took after the last acknowledgement to have
read every acknowledged record, and whether the history accounts for every send (one outcome per
invocation) and every acknowledged record was read.

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
from kchaos.harness.client_image import ensure_client_image
from kchaos.harness.cluster import KafkaCluster
from kchaos.harness.image import resolve_image, sidecar_image
from kchaos.harness.kafka_node import INTERNAL_PORT
from kchaos.harness.rdkafka_image import ensure_rdkafka_image
from kchaos.model.config import RunConfig
from kchaos.model.events import INVOKE, OK, OUTCOMES, POLL, SEND
from kchaos.model.history import HistoryWriter
from kchaos.model.history_files import read_staging, read_staging_by_rows
from kchaos.model.releases import DEFAULT_KAFKA_VERSION
from kchaos.model.run_files import RunDir
from kchaos.model.waiting import wait_until
from kchaos.workloads.in_harness.consumer import ConsumerWorkload
from kchaos.workloads.in_harness.producer import ProducerWorkload
from kchaos.workloads.processes.java.producer import JavaProducerWorkload
from kchaos.workloads.processes.rdkafka.producer import RdkafkaProducerWorkload

BENCH_DIR = Path(__file__).resolve().parent
#: This benchmark's section of RESULTS.md and results.json (`bench.sections`).
SECTION = "workload"
#: `N records sent, R records/sec (...)`: the summary line ProducerPerformance ends with.
_PERF_SUMMARY = re.compile(r"(\d+) records sent, ([\d.]+) records/sec")
DEFAULTS = RunConfig.model_validate({})
THREADS, RDKAFKA_PROCESS, JAVA_PROCESS = "threads", "rdkafka-process", "java-process"
#: The kchaos producer sides, in the order each round runs them after ProducerPerformance.
SIDES = (THREADS, RDKAFKA_PROCESS, JAVA_PROCESS)


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
    #: None: no consumer read (`--consumers 0`).
    acknowledged_read: int | None
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
    cluster: KafkaCluster,
    topic: str,
    records: int,
    producers: int,
    workdir: Path,
    side: str = THREADS,
    images: dict[str, str] | None = None,
    consumers: int = 1,
) -> KchaosRound:
    """The kchaos producers of `side` (unpaced, `records` sends in all) and `consumers` consumers (0 or 1),
    recording as in a run; `images`: the client image of each process side."""
    config = RunConfig.model_validate(
        {
            "topic": topic,
            "rate": 0,
            "producers": producers,
            "consumers": max(consumers, 1),
            "acks": DEFAULTS.acks,
        }
    )
    history = HistoryWriter(RunDir(workdir / topic), f"bench-{topic}")
    readers = ConsumerWorkload(config, cluster.bootstrap, history)
    writers: ProducerWorkload | JavaProducerWorkload
    done: Callable[[], bool]
    if side == THREADS:
        threads = ProducerWorkload(config, cluster.bootstrap, history, limit=records)
        writers, done = threads, lambda: all(p.done and not p.pending for p in threads.processes)
    else:
        kind = RdkafkaProducerWorkload if side == RDKAFKA_PROCESS else JavaProducerWorkload
        processes = kind(config, cluster, history, (images or {})[side], DEFAULT_KAFKA_VERSION, limit=records)
        # A worker with a limit makes its sends, drains them and exits 0: done when every one has ended.
        writers, done = processes, lambda: all(not p.thread.is_alive() for p in processes.producers)
    if consumers:
        readers.start()
    writers.start()
    try:
        wait_until(done, 600, f"{records} sends acknowledged or failed")
        acknowledged = history.count(SEND, OK)
        if consumers:
            wait_until(
                lambda: history.count(POLL, OK) >= acknowledged, 120, "the consumer to read every record"
            )
    finally:
        writers.stop()
        if consumers:
            readers.stop()
        path = history.finish()
    staging = RunDir(workdir / topic).history_staging
    return _judged(
        pq.read_table(path), records, _timed(read_staging, staging), _timed(read_staging_by_rows, staging),
        consumers,
    )  # fmt: skip


def _timed(convert: Callable[[Path], Any], staging: Path) -> float:
    started = time.perf_counter()
    convert(staging)
    return round(time.perf_counter() - started, 3)


def _judged(
    table: Any, records: int, convert_arrow_s: float, convert_rows_s: float, consumers: int = 1
) -> KchaosRound:
    """What the recorded history says of the round: rates from its own clocks, and whether it is whole
    (every acknowledged record read, when a consumer read)."""
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
        acknowledged_read=len(acked_values & read_values) if consumers else None,
        history_rows=table.num_rows,
        convert_arrow_s=convert_arrow_s,
        convert_rows_s=convert_rows_s,
    )


def _seconds_after(later_ns: int | None, earlier_ns: int) -> float | None:
    return None if later_ns is None else round(max(0, later_ns - earlier_ns) / 1e9, 3)


def run(
    records: int, rounds: int, producers: int, acks: str, sides: tuple[str, ...] = SIDES, consumers: int = 1
) -> dict[str, Any]:
    image = resolve_image(None, DEFAULT_KAFKA_VERSION)
    images = {
        **({RDKAFKA_PROCESS: ensure_rdkafka_image()} if RDKAFKA_PROCESS in sides else {}),
        **({JAVA_PROCESS: ensure_client_image(image.kafka_version)} if JAVA_PROCESS in sides else {}),
    }
    cluster = KafkaCluster(
        run_id=f"bench-workload-{secrets.token_hex(3)}", image=image.ref,
        sidecar_image=sidecar_image(), size=DEFAULTS.brokers, heap=DEFAULTS.broker_heap,
    )  # fmt: skip
    perf: list[PerfRound] = []
    kchaos: dict[str, list[KchaosRound]] = {side: [] for side in sides}
    with cluster, tempfile.TemporaryDirectory(prefix="kchaos-bench-") as workdir:
        for n in range(rounds):
            for side in ("perf", *sides):
                topic = f"{side}-{n}"
                cluster.create_topic(
                    topic, DEFAULTS.partitions, DEFAULTS.replication_factor, DEFAULTS.min_insync_replicas
                )
                if side == "perf":
                    perf.append(producer_performance(cluster, topic, records, acks))
                    said: object = perf[-1]
                else:
                    kchaos[side].append(
                        kchaos_workload(
                            cluster, topic, records, producers, Path(workdir), side, images, consumers
                        )
                    )
                    said = kchaos[side][-1]
                print(f"round {n + 1} {side}: {said}", flush=True)
    perf_rate = statistics.median(r.records_per_s for r in perf)
    result: dict[str, Any] = {
        "kafka_version": image.kafka_version,
        "records": records,
        "rounds": rounds,
        "producers": producers,
        "consumers": consumers,
        "acks": acks,
        "producer_performance": [asdict(r) for r in perf],
        "producer_performance_per_s": perf_rate,
        "sides": {side: _side(kchaos[side], perf_rate) for side in sides},
    }
    return result


def _side(rounds: list[KchaosRound], perf_rate: float) -> dict[str, Any]:
    """One kchaos side's rounds and medians, its rate as a ratio to ProducerPerformance's."""
    rate = statistics.median(r.records_per_s for r in rounds)
    return {
        "rounds": [asdict(r) for r in rounds],
        "per_s": rate,
        "ratio": round(rate / perf_rate, 3),
        "consumer_behind_s": statistics.median(r.consumer_behind_s or 0.0 for r in rounds),
        "every_send_recorded": all(r.outcomes_per_invoke for r in rounds),
        "every_ack_read": (
            None
            if rounds[0].acknowledged_read is None
            else all(r.acknowledged_read == r.acknowledged for r in rounds)
        ),
        "history_rows": statistics.median(r.history_rows for r in rounds),
        "convert_arrow_s": statistics.median(r.convert_arrow_s for r in rounds),
        "convert_rows_s": statistics.median(r.convert_rows_s for r in rounds),
    }


def markdown(result: dict[str, Any]) -> str:
    sides: dict[str, Any] = result["sides"]
    summary = "\n".join(
        f"- **{side}: {s['per_s']:,.0f}/s, ratio {s['ratio']}** (median); consumer done "
        f"{s['consumer_behind_s']} s after the last acknowledgement; one outcome per send: "
        f"{'yes' if s['every_send_recorded'] else 'NO'}; every acknowledged record read: "
        f"{_said(s['every_ack_read'])}; {s['history_rows']:,.0f} history rows, into a table "
        f"in {s['convert_arrow_s']} s (Arrow) / {s['convert_rows_s']} s (row by row)"
        for side, s in sides.items()
    )
    rows = "\n".join(
        f"| {n + 1} | {p['records_per_s']:,.0f} | "
        + " | ".join(
            f"{s['rounds'][n]['records_per_s']:,.0f} ({s['rounds'][n]['acknowledged']:,} acked, "
            f"{'whole' if s['rounds'][n]['outcomes_per_invoke'] else 'NOT WHOLE'})"
            for s in sides.values()
        )
        + " |"
        for n, p in enumerate(result["producer_performance"])
    )
    return (
        f"Generated by `python -m bench.workload --records {result['records']} --rounds {result['rounds']} "
        f"--producers {result['producers']} --consumers {result.get('consumers', 1)} "
        f"--sides {','.join(sides)}`: one 3-node KRaft cluster of Kafka "
        f"{result['kafka_version']}, acks={result['acks']}, {result['records']:,} records per side and "
        "round, the sides taking turns. ProducerPerformance runs inside node 1 (20-byte values); each kchaos "
        f"side runs with `--rate 0` (no limit), {_readers(result.get('consumers', 1))}, every send and read "
        "recorded: `threads` are "
        "confluent-kafka threads in the harness (`--client librdkafka`), `rdkafka-process` the librdkafka "
        "worker process (`--client librdkafka-process`), `java-process` the Java client worker "
        "(`--client java`), each process in a container of its own.\n\n"
        f"**ProducerPerformance {result['producer_performance_per_s']:,.0f}/s** (median).\n\n"
        f"{summary}\n\n"
        f"| round | ProducerPerformance /s | {' | '.join(f'{side} acknowledged /s' for side in sides)} |\n"
        f"|---:|---:|{'---:|' * len(sides)}\n"
        f"{rows}\n"
    )


def _readers(consumers: int) -> str:
    return "one consumer" if consumers else "no consumer (its producers alone, as ProducerPerformance runs)"


def _said(whether: bool | None) -> str:
    return "not read (no consumer)" if whether is None else "yes" if whether else "NO"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--producers", type=int, default=1)
    parser.add_argument("--acks", choices=("all", "1"), default=DEFAULTS.acks)
    parser.add_argument(
        "--consumers", type=int, choices=(0, 1), default=1,
        help="1: one consumer reads and records every record, as in a run; 0: the producers alone, as "
        "ProducerPerformance runs",
    )  # fmt: skip
    parser.add_argument(
        "--sides", default=",".join(SIDES), help=f"kchaos sides, comma-separated, of {', '.join(SIDES)}"
    )
    args = parser.parse_args(argv)
    sides = tuple(side for side in args.sides.split(",") if side)
    unknown = [side for side in sides if side not in SIDES]
    if unknown or not sides:
        parser.error(f"--sides: {', '.join(unknown) or 'none given'}; choose from {', '.join(SIDES)}")
    result = run(args.records, args.rounds, args.producers, args.acks, sides, args.consumers)
    write_json_section(BENCH_DIR / "results.json", SECTION, result)
    write_markdown_section(BENCH_DIR / "RESULTS.md", SECTION, "## Workload\n\n" + markdown(result))
    print(markdown(result))


if __name__ == "__main__":
    main()
