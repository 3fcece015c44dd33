"""A default run's own cost, and its verdict's wait after the replica dump, beside the Spark floor.

    flock /tmp/kchaos-cluster.lock .venv/bin/python -m bench.run_end [--turns 3] [--duration 60]

Each turn runs, one after the other: the Spark floor (`bench.floor`: a fresh session for a default run's
history and one trivial job, the least a check in a cold JVM costs) and a whole default `kchaos run`
process (`--duration` seconds of writing, its default faults). The run's own times come from its
`logs/harness.log`, whose lines the run stamps as it goes: when it started writing and stopped, when its
replicas were dumped (`replicas dumped`) and when its verdict was in (`verdict: ...`, told to the terminal
at that moment, before the report is written). Figures are medians over the turns.

Goals (issue 44): the run's whole wall at most `--duration` + 25 s; the verdict at most 5 s after the
dump. Writes the `run-end` section of bench/RESULTS.md and bench/results.json. A cluster runs: take the
cluster lock, and run nothing else meanwhile.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import re
import shutil
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench.ordinary import _floor
from bench.process import measure
from bench.sections import write_json_section, write_markdown_section
from kchaos.model.run_files import RunDir

BENCH_DIR = Path(__file__).resolve().parent
SECTION = "run-end"
#: The goals: wall over the duration, and the verdict after the dump.
OVERHEAD_GOAL_S = 25.0
VERDICT_GOAL_S = 5.0
#: A default run's history: about 15,000 sends at 200/s for 60 s, four rows each.
DEFAULT_HISTORY_ROWS = 60_000

#: The harness.log lines a run's phases are read from, by the name the report gives them.
MARKS = {
    "started": re.compile(r"progress: starting \d+ Kafka"),
    "writing": re.compile(r"progress: writing for "),
    "healed": re.compile(r"progress: healed; "),
    "dumping": re.compile(r"progress: dumping every broker"),
    "dumped": re.compile(r"kchaos\.runner\.run: replicas dumped$"),
    "verdict": re.compile(r"kchaos\.runner\.run: verdict: "),
}
_STAMP = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) ")


def marks(harness_log: Path) -> dict[str, float]:
    """The first time (seconds since the epoch) each of `MARKS` appears in a run's harness.log."""
    found: dict[str, float] = {}
    for line in harness_log.read_text(encoding="utf-8", errors="replace").splitlines():
        stamp = _STAMP.match(line)
        if stamp is None:
            continue
        for name, pattern in MARKS.items():
            if name not in found and pattern.search(line):
                when = dt.datetime.strptime(stamp.group(1), "%Y-%m-%d %H:%M:%S,%f")
                found[name] = when.replace(tzinfo=dt.UTC).timestamp()
    return found


def phases(found: dict[str, float], wall_s: float, duration_s: float) -> dict[str, float]:
    """A run's wall split where its user sees it: before the first write, writing, healing and reading
    back, the dump, and from the dump to the verdict; and the wall over the duration."""
    missing = [name for name in MARKS if name not in found]
    if missing:
        raise ValueError(f"the run's harness.log lacks {missing}")
    return {
        "wall": round(wall_s, 1),
        "over_duration": round(wall_s - duration_s, 1),
        "to_first_write": round(found["writing"] - found["started"], 1),
        "writing": round(found["healed"] - found["writing"], 1),
        "heal_and_read": round(found["dumping"] - found["healed"], 1),
        "dump": round(found["dumped"] - found["dumping"], 1),
        "verdict_after_dump": round(found["verdict"] - found["dumped"], 1),
    }


def one_run(repo: Path, duration_s: float, timeout: float) -> dict[str, Any]:
    """One default `kchaos run` process of `duration_s`: its exit status and `phases`."""
    runs = Path(tempfile.mkdtemp(prefix="kchaos-bench-run-end-"))
    try:
        command = [
            sys.executable, "-c", "from kchaos.runner.cli import main; main()", "run",
            "--runs-dir", str(runs), "--run-id", "bench", "--duration", f"{duration_s:g}",
        ]  # fmt: skip
        measured = measure(command, repo, timeout)
        if measured.returncode not in (0, 1):
            raise RuntimeError(f"kchaos run failed ({measured.returncode}): {measured.stdout[-2000:]}")
        files = RunDir(runs / "bench")
        verdict = json.loads(files.results.read_text(encoding="utf-8"))["verdict"]
        return {
            "exit_code": measured.returncode,
            "verdict": verdict,
            **phases(marks(files.harness_log), measured.seconds, duration_s),
        }
    finally:
        shutil.rmtree(runs, ignore_errors=True)


def measure_run_end(repo: Path, turns: int, duration_s: float, timeout: float) -> dict[str, Any]:
    floors: list[dict[str, Any]] = []
    runs: list[dict[str, Any]] = []
    for turn in range(turns):
        floors.append(_floor(repo, DEFAULT_HISTORY_ROWS, timeout))
        runs.append(one_run(repo, duration_s, timeout))
        print(f"* turn {turn + 1}: floor {floors[-1]['seconds']} s, run {runs[-1]}", flush=True)
    median = {
        key: round(statistics.median(run[key] for run in runs), 1) for key in runs[0] if key != "verdict"
    }
    return {
        "turns": turns,
        "duration_seconds": duration_s,
        "floor_seconds": round(statistics.median(f["seconds"] for f in floors), 3),
        "median": median,
        "meets_goals": median["over_duration"] <= OVERHEAD_GOAL_S
        and median["verdict_after_dump"] <= VERDICT_GOAL_S,
        "floors": floors,
        "runs": runs,
    }


def markdown(report: dict[str, Any], command: str) -> str:
    m = report["median"]
    rows = "\n".join(
        f"| {n} | {r['wall']} | {r['over_duration']} | {r['to_first_write']} | {r['writing']} | "
        f"{r['heal_and_read']} | {r['dump']} | {r['verdict_after_dump']} | {f['seconds']} | {r['verdict']} |"
        for n, (r, f) in enumerate(zip(report["runs"], report["floors"], strict=True), start=1)
    )
    met = "met" if report["meets_goals"] else "missed"
    return f"""## A run's end

Generated by `{command}`: {report["turns"]} turns, each the Spark floor (`python -m bench.floor`, a cold
session for a default run's history and one trivial job) and then a default `kchaos run --duration
{report["duration_seconds"]:g}` (3 nodes of Kafka 4.3.1, librdkafka processes, 200 sends/s, a leader killed
and a leader isolated), one after the other. Seconds, from the run's harness.log. Goals: wall at most the
duration + {OVERHEAD_GOAL_S:g} s, verdict at most {VERDICT_GOAL_S:g} s after the replica dump ({met}).

**Median: wall {m["wall"]} s ({m["over_duration"]} s over the duration); verdict {m["verdict_after_dump"]} s
after the dump, against a cold Spark floor of {report["floor_seconds"]} s.**

| turn | wall | over | to first write | writing | heal, read | dump | verdict after dump | floor | verdict |
|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|
{rows}
"""


def main() -> None:
    parser = argparse.ArgumentParser(description="A default run's overhead and verdict latency.")
    parser.add_argument("--turns", type=int, default=3)
    parser.add_argument("--duration", type=float, default=60.0)
    parser.add_argument("--timeout", type=float, default=900.0)
    args = parser.parse_args()
    repo = BENCH_DIR.parent
    report = measure_run_end(repo, args.turns, args.duration, args.timeout)
    command = f"python -m bench.run_end --turns {args.turns} --duration {args.duration:g}"
    write_json_section(BENCH_DIR / "results.json", SECTION, report)
    write_markdown_section(BENCH_DIR / "RESULTS.md", SECTION, markdown(report, command))
    print(markdown(report, command))


if __name__ == "__main__":
    main()
