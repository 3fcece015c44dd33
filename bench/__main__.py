"""Every benchmark in one run, so bench/RESULTS.md's figures come from the same hour of the same machine:

    flock /tmp/kchaos-cluster.lock .venv/bin/python -m bench

First the workload (`bench.workload`: a cluster, Kafka's ProducerPerformance against the kchaos workload),
then a default run's own cost and its verdict's wait after the replica dump (`bench.run_end`: three
default `kchaos run`s beside the Spark floor), then, once those clusters are gone, the checker
(`bench.run --replicas`: the Spark floor against a default run's check, then 1M and 10M sends). One after
the other, never side by side: two cores cannot carry brokers and Spark at once without each slowing the
other. Arguments after `--` go to `bench.run`.

`-h`/`--help` prints the usage and runs nothing: a benchmark run takes the machine for most of an hour
and rewrites bench/RESULTS.md, which asking for help must not do. Any other argument before `--` is
refused the same way, before anything starts.
"""

from __future__ import annotations

import subprocess
import sys

USAGE = "usage: python -m bench [-h] [-- BENCH_RUN_ARGS...]"


def main(argv: list[str]) -> int:
    own = argv[: argv.index("--")] if "--" in argv else argv
    if any(arg in ("-h", "--help") for arg in own):
        print(f"{USAGE}\n\n{__doc__}")
        return 0
    if own:
        print(f"python -m bench: unknown argument(s) {' '.join(own)}; runs nothing\n{USAGE}", file=sys.stderr)
        return 2
    checker_args = argv[argv.index("--") + 1 :] if "--" in argv else []
    for module, args in (
        ("bench.workload", []),
        ("bench.run_end", []),
        ("bench.run", ["--replicas", *checker_args]),
    ):
        print(f"* python -m {module} {' '.join(args)}", flush=True)
        code = subprocess.call([sys.executable, "-m", module, *args])
        if code != 0:
            print(f"* {module} failed ({code}); the later benchmarks were not run", flush=True)
            return code
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
