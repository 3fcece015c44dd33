"""How fast, and in how much memory, the Spark checker and the pandas reference check big histories.

    .venv/bin/python -m bench.run --sizes 1000000 10000000

For each size: generate the history once (bench/data/sends-<N>, reused while its generator settings
match), then run each engine over it in a subprocess of its own (`bench.engine`), sampling the resident
memory of that process and all its descendants (the Spark JVM) from /proc. Reports wall seconds, sends
checked per second, peak memory, whether both engines report the same count for every anomaly (and the
counts the generator planted), and Spark's time over pandas's. Writes bench/results.json and
bench/RESULTS.md and prints the table.

Timed goals live here, never in tests: the machine is shared and has two cores. Run it while no Kafka
cluster is running (docs/benchmark.md wraps it in the same lock the cluster tests take).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.generate import generate
from bench.ordinary import TARGET_RATIO, TARGET_SECONDS, measure_ordinary
from bench.plan import Injected
from bench.process import measure
from bench.sections import write_json_section, write_markdown_section
from kchaos.model.config import DEFAULT_SPARK_MASTER

BENCH_DIR = Path(__file__).resolve().parent
DATA_DIR = BENCH_DIR / "data"
ENGINES = ("spark", "pandas")
#: This benchmark's section of RESULTS.md and results.json (`bench.sections`); others write their own.
SECTION = "checker"


def _address_space_limit(gigabytes: float) -> Callable[[], None]:
    """A MemoryError in the engine instead of the kernel's OOM killer picking a process on a shared machine.
    Only for pandas: a JVM reserves far more address space than it uses."""

    def limit() -> None:
        size = int(gigabytes * 2**30)
        resource.setrlimit(resource.RLIMIT_AS, (size, size))

    return limit


def run_engine(
    engine: str,
    run_dir: Path,
    timeout: float,
    memory_limit_gb: float | None = None,
    breakdown: bool = True,
    spark_memory: str = "6g",
) -> dict[str, Any]:
    """One engine in its own process; its JSON result plus wall time, peak memory and exit status."""
    command = [sys.executable, "-m", "bench.engine", engine, str(run_dir), "--spark-memory", spark_memory]
    if not breakdown:
        command.append("--no-breakdown")
    limit = _address_space_limit(memory_limit_gb) if memory_limit_gb else None
    measured = measure(command, BENCH_DIR.parent, timeout, limit)
    stdout, stderr, wall, peak = measured.stdout, measured.stderr, measured.seconds, measured.peak_bytes
    result: dict[str, Any] = {"engine": engine, "ok": False}
    lines = [line for line in stdout.splitlines() if line.startswith("{")]
    if measured.returncode == 0 and lines:
        result = {**json.loads(lines[-1]), "ok": True}
    else:
        result["error"] = stderr.strip()[-3000:]
    result["exit_code"] = measured.returncode
    result["process_seconds"] = round(wall, 2)
    result["peak_rss_mb"] = round(peak / 2**20)
    return result


def dataset(sends: int, replicas: bool, regenerate: bool) -> tuple[Path, dict[str, Any]]:
    """The history for `sends`, generated unless one made with the same settings is already there."""
    run_dir = DATA_DIR / f"sends-{sends}"
    expected_path = run_dir / "expected.json"
    if not regenerate and expected_path.exists():
        expected: dict[str, Any] = json.loads(expected_path.read_text(encoding="utf-8"))
        if expected.get("replicas") == replicas and expected.get("injected") == Injected().__dict__:
            return run_dir, expected
    return run_dir, generate(sends, run_dir, replicas=replicas)


def compare(sends: int, expected: dict[str, Any], results: dict[str, dict[str, Any]]) -> dict[str, Any]:
    spark, pandas = results.get("spark", {}), results.get("pandas", {})
    spark_counts: dict[str, Any] = spark.get("counts", {})
    pandas_counts: dict[str, Any] = pandas.get("counts", {})
    names = sorted(set(spark_counts) | set(pandas_counts))
    planted = expected["anomalies"]
    disagree = {n: [spark_counts.get(n), pandas_counts.get(n)] for n in names
                if spark_counts.get(n) != pandas_counts.get(n)}  # fmt: skip
    off_plan = {
        engine: {n: [c, planted.get(n)] for n, c in counts.items() if n in planted and c != planted[n]}
        for engine, counts in (("spark", spark_counts), ("pandas", pandas_counts))
    }
    spark_s = spark.get("seconds", {}).get("check")
    pandas_s = pandas.get("seconds", {}).get("check")
    both_ok = bool(spark.get("ok") and pandas.get("ok"))
    return {
        "both_ok": both_ok,
        "counts_agree": both_ok and not disagree,
        "disagreements": disagree,
        "differs_from_planted": off_plan,
        "spark_over_pandas_time": round(spark_s / pandas_s, 3) if spark_s and pandas_s else None,
        "spark_sends_per_s": round(expected["sends"] / spark_s) if spark_s else None,
        "pandas_sends_per_s": round(expected["sends"] / pandas_s) if pandas_s else None,
    }


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1][:200] if lines else "no output"


def markdown(report: dict[str, Any]) -> str:
    lines = ["## Checker", "", *_ordinary_lines(report.get("ordinary"))]
    if not report["runs"]:
        return "\n".join(lines)
    lines += [
        "### Large histories",
        "",
        f"Machine: {report['machine']['cpus']} CPUs, {report['machine']['memory_gb']} GB RAM, "
        f"Python {report['machine']['python']}. Generated by `python -m bench.run`; check seconds exclude "
        "starting the engine (Spark session / imports), process seconds include everything. Replica dumps "
        f"{'included' if report['settings']['replicas'] else 'not included'}; the pandas process ran with "
        f"an address-space limit of {report['settings']['pandas_memory_gb']:g} GB; Spark ran in "
        f"{DEFAULT_SPARK_MASTER} with a {report['settings']['spark_memory']} heap.",
        "",
        "| sends | history rows | engine | check s | process s | sends/s | peak RSS MB | counts = planted "
        "| engines agree | Spark/pandas time |",
        "|---:|---:|---|---:|---:|---:|---:|---|---|---:|",
    ]
    for run in report["runs"]:
        cmp = run["comparison"]
        for engine in [e for e in ENGINES if e in run["engines"]]:
            r = run["engines"][engine]
            check = r.get("seconds", {}).get("check") if r.get("ok") else None
            rate = cmp.get(f"{engine}_sends_per_s")
            planted = "n/a" if not r.get("ok") else ("NO" if cmp["differs_from_planted"][engine] else "yes")
            agree = "yes" if cmp["counts_agree"] else ("NO" if cmp["both_ok"] else "n/a")
            lines.append(
                f"| {run['sends']:,} | {run['history_rows']:,} | {engine} | "
                f"{check if check is not None else 'failed: ' + _last_line(r.get('error', ''))} | "
                f"{r.get('process_seconds', '')} | {f'{rate:,}' if rate else ''} | "
                f"{r.get('peak_rss_mb', '')} | {planted} | {agree} | {cmp['spark_over_pandas_time'] or ''} |"
            )
    lines += [
        "",
        "### Where Spark spends its time",
        "",
        "Seconds (and Spark jobs) of each step inside the timed `find_anomalies`: `counts` computes the "
        "shared passes and every anomaly's count in one job, each anomaly's own step collects its first "
        "occurrences, and `example-records` is the one lookup of the records all examples point at. Then "
        "each pass of `kchaos.checkers.passes.history_passes` materialized on its own.",
        "",
    ]
    for run in report["runs"]:
        spark = run["engines"].get("spark", {})
        if not spark.get("ok"):
            continue
        seconds = spark["seconds"]
        lines.append(
            f"- {run['sends']:,} sends: session start {seconds['startup']}, find_anomalies "
            f"{seconds['find_anomalies']}, summary {seconds['summary']}; "
            + ", ".join(
                f"{name} {s} ({spark.get('per_anomaly_spark_jobs', {}).get(name, '?')} jobs)"
                for name, s in spark.get("per_anomaly_seconds", {}).items()
            )
            + f"; history read as {spark.get('parquet_partitions', '?')} Spark partitions"
        )
        per_pass = spark.get("per_pass", {})
        if "seconds" in per_pass:
            lines.append(
                "  - per pass, measured again after the timed run (warm JVM): "
                + ", ".join(
                    f"{name} {s} ({per_pass['spark_jobs'].get(name, '?')} jobs)"
                    for name, s in per_pass["seconds"].items()
                )
            )
        elif per_pass:
            lines.append(f"  - per-pass breakdown failed: {per_pass.get('error')}")
    lines += ["", "### Counts", ""]
    for run in report["runs"]:
        cmp = run["comparison"]
        lines.append(f"- {run['sends']:,} sends: planted {json.dumps(run['planted'])}")
        for engine, r in run["engines"].items():
            if r.get("ok"):
                lines.append(f"  - {engine}: {json.dumps(r.get('counts', {}))}")
        if cmp["both_ok"] and cmp["disagreements"]:
            lines.append(f"  - disagreements (spark, pandas): {json.dumps(cmp['disagreements'])}")
        for engine, off in cmp["differs_from_planted"].items():
            if off:
                lines.append(f"  - {engine} differs from planted (reported, planted): {json.dumps(off)}")
    for run in report["runs"]:
        for engine, r in run["engines"].items():
            if not r.get("ok"):
                tail = "\n".join(r.get("error", "").splitlines()[-8:])
                lines += [
                    "",
                    f"{engine} at {run['sends']:,} sends failed (last lines):",
                    "",
                    "```",
                    tail,
                    "```",
                ]
    return "\n".join(lines) + "\n"


def _ordinary_lines(ordinary: dict[str, Any] | None) -> list[str]:
    """The ordinary check against the floor (`bench.ordinary`), first: it is what every user waits for."""
    if not ordinary:
        return []
    verdict = "met" if ordinary["meets_target"] else "missed"
    remote_verdict = "met" if ordinary.get("remote_meets_target") else "missed"
    counts = "yes" if ordinary["counts_as_planted"] else f"NO: {json.dumps(ordinary['counts'])}"
    return [
        f"### Ordinary check (a default run: {ordinary['sends']:,} sends, "
        f"{ordinary['history_rows']:,} history rows, {ordinary['replica_rows']:,} replica rows)",
        "",
        "Whole processes, interpreter and JVM start included, run in turn, median of "
        f"{ordinary['repeats']}. Floor: `python -m bench.floor --history-rows N` (the session a check of "
        "that history starts, and one trivial job). Check: `kchaos check` of the default run's directory "
        "(results.json and report.html). Warm server: the same `kchaos check --spark-remote` on a Spark "
        "Connect server (`kchaos spark-server`) started and warmed by one untimed check before the turns. "
        f"Target: check within {TARGET_RATIO}x the floor and at most {TARGET_SECONDS:g} s (local: {verdict}; "
        f"warm server: {remote_verdict}).",
        "",
        "| floor s | check s | check / floor | check peak RSS MB | warm server: check s "
        "| warm server / floor | counts = planted |",
        "|---:|---:|---:|---:|---:|---:|---|",
        f"| {ordinary['floor_seconds']} | {ordinary['check_seconds']} | {ordinary['ratio']} | "
        f"{max(c['peak_rss_mb'] for c in ordinary['checks'])} | {ordinary.get('remote_seconds')} | "
        f"{ordinary.get('remote_ratio')} | {counts} |",
        "",
        "Each turn (floor s, check s, warm server s): "
        + ", ".join(
            f"({f['seconds']}, {c['seconds']}, {r['seconds']})"
            for f, c, r in zip(
                ordinary["floors"], ordinary["checks"], ordinary.get("remotes", []), strict=False
            )
        ),
        "",
    ]


def _memory_gb() -> float:
    with open("/proc/meminfo", encoding="ascii") as fh:
        kb = int(fh.readline().split()[1])
    return round(kb / 2**20, 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--sizes",
        type=int,
        nargs="*",
        default=[1_000_000, 10_000_000],
        help="sends per large history (none: skip)",
    )
    parser.add_argument("--engines", nargs="+", choices=ENGINES, default=list(ENGINES))
    parser.add_argument("--replicas", action="store_true", help="include replicas/replicas.parquet")
    parser.add_argument("--regenerate", action="store_true", help="generate the histories again")
    parser.add_argument("--timeout", type=float, default=3600.0, help="seconds per engine run")
    parser.add_argument(
        "--pandas-memory-gb", type=float, default=16.0, help="address-space limit of the pandas process"
    )
    parser.add_argument(
        "--spark-memory",
        default="6g",
        help="heap of the local Spark JVM (its executors run inside it), well below --pandas-memory-gb",
    )
    parser.add_argument(
        "--no-breakdown", action="store_true", help="skip Spark's per-pass diagnostic run after the timed one"
    )
    parser.add_argument("--out", type=Path, default=BENCH_DIR, help="where results.json and RESULTS.md go")
    parser.add_argument(
        "--ordinary-repeats",
        type=int,
        default=3,
        help="times the floor and the default run's `kchaos check` are each measured (0: skip them)",
    )
    args = parser.parse_args()
    report: dict[str, Any] = {
        "machine": {"cpus": os.cpu_count(), "memory_gb": _memory_gb(), "python": platform.python_version()},
        "started_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "settings": {
            "replicas": args.replicas,
            "pandas_memory_gb": args.pandas_memory_gb,
            "spark_memory": args.spark_memory,
        },
        "runs": [],
    }
    if args.ordinary_repeats > 0:
        ordinary = measure_ordinary(
            BENCH_DIR.parent, DATA_DIR, args.ordinary_repeats, args.regenerate, args.timeout
        )
        report["ordinary"] = ordinary
        print(f"* default run: floor {ordinary['floor_seconds']}s, check {ordinary['check_seconds']}s, "
              f"ratio {ordinary['ratio']}", flush=True)  # fmt: skip
    for sends in args.sizes:
        started = time.perf_counter()
        run_dir, expected = dataset(sends, args.replicas, args.regenerate)
        print(f"* {sends:,} sends: {expected['history_rows']:,} rows in {run_dir} "
              f"({time.perf_counter() - started:.1f}s)", flush=True)  # fmt: skip
        engines: dict[str, dict[str, Any]] = {}
        for engine in args.engines:
            limit = args.pandas_memory_gb if engine == "pandas" else None
            engines[engine] = run_engine(
                engine, run_dir, args.timeout, limit, not args.no_breakdown, args.spark_memory
            )
            r = engines[engine]
            print(f"  {engine}: ok={r['ok']} check={r.get('seconds', {}).get('check')}s "
                  f"process={r['process_seconds']}s peak={r['peak_rss_mb']}MB", flush=True)  # fmt: skip
        report["runs"].append(
            {
                "sends": expected["sends"],
                "history_rows": expected["history_rows"],
                "replica_rows": expected["replica_rows"],
                "generate_seconds": expected["generate_seconds"],
                "planted": expected["anomalies"],
                "engines": engines,
                "comparison": compare(sends, expected, engines),
            }
        )
    args.out.mkdir(parents=True, exist_ok=True)
    write_json_section(args.out / "results.json", SECTION, report)
    text = markdown(report)
    write_markdown_section(args.out / "RESULTS.md", SECTION, text)
    print(text)


if __name__ == "__main__":
    main()
