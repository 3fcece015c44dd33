"""How long a matrix will take, said before its first run, and how many runs it may start unasked.

A matrix file with a few long axes multiplies into tens of thousands of runs, each minutes long; started
without a word, the first sign of it is a machine busy for weeks. So `kchaos matrix` says how many runs
are to go and about how long they take before the first starts, and refuses more than `CONFIRM_ABOVE`
of them unless told `--yes`.

The estimate is each run's `--duration` (the seconds it writes) plus `RUN_OVERHEAD_S` for what every run
does besides writing: start a cluster, heal, read every partition to its end, check the history and
remove the cluster. It is a planning figure, not a promise: a fault that heals slowly, or a slow image
build before the first run, takes longer.
"""

from __future__ import annotations

from collections.abc import Sequence

from kchaos.model.matrix import MatrixPoint

#: Seconds a run takes beyond its --duration: docs/matrix.md's example matrix (four 30 s runs, about five
#: minutes on 2 cores) spends about 45 s per run on cluster start, final read, check and teardown;
#: rounded up, as a larger cluster or history takes longer.
RUN_OVERHEAD_S = 60.0

#: More runs to go than this need `--yes`: about a day and a half of default (60 s) runs.
CONFIRM_ABOVE = 100


def estimated_seconds(points: Sequence[MatrixPoint]) -> float:
    """The sum of each run's --duration plus `RUN_OVERHEAD_S` per run."""
    return sum(point.config.duration + RUN_OVERHEAD_S for point in points)


def duration_text(seconds: float) -> str:
    """`45 min`, `3 h 20 min`, `27 days`: as precise as an estimate deserves."""
    minutes = max(1, round(seconds / 60))
    if minutes < 120:
        return f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    if hours < 48:
        return f"{hours} h {minutes} min" if minutes else f"{hours} h"
    return f"{round(hours / 24)} days"


def estimate_text(points: Sequence[MatrixPoint]) -> str:
    """`4 run(s) to go, estimated 6 min (...)`: the count, the time, and how the time was estimated."""
    return (
        f"{len(points)} run(s) to go, estimated {duration_text(estimated_seconds(points))} "
        f"(each run's --duration plus about {RUN_OVERHEAD_S:.0f} s per run to start its cluster, read to "
        "the end, check and clean up)"
    )
