"""The run-end benchmark reads a run's phases from the lines its harness.log stamps; timings themselves are
never asserted here (bench/run_end.py measures them)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.run_end import marks, phases

LOG = """\
2026-11-28 06:44:34,631 INFO kchaos.runner.run: progress: starting 3 Kafka 4.3.1 nodes (kchaos/kafka:4.3.1)
2026-11-28 06:44:41,959 INFO kchaos.runner.run: progress: writing for 60s (acks=all, ...)
2026-11-28 06:44:59,000 INFO kchaos.runner.warm_check: the check's session is warm after 15.7 s
2026-11-28 06:45:47,197 INFO kchaos.runner.run: progress: healed; waiting up to 180s for every partition
2026-11-28 06:45:48,458 INFO kchaos.runner.run: progress: dumping every broker's copy of every partition
2026-11-28 06:45:51,746 INFO kchaos.runner.run: replicas dumped
2026-11-28 06:45:56,400 INFO kchaos.runner.run: verdict: ok
2026-11-28 06:45:56,422 INFO kchaos.runner.run: progress: writing the report
"""


def test_a_run_s_phases_are_read_from_its_stamped_lines(tmp_path: Path) -> None:
    log = tmp_path / "harness.log"
    log.write_text(LOG, encoding="utf-8")
    found = phases(marks(log), wall_s=84.4, duration_s=60.0)
    assert found == {
        "wall": 84.4, "over_duration": 24.4, "to_first_write": 7.3, "writing": 65.2, "heal_and_read": 1.3,
        "dump": 3.3, "verdict_after_dump": 4.7,
    }  # fmt: skip


def test_a_log_without_a_verdict_is_refused_naming_what_it_lacks(tmp_path: Path) -> None:
    log = tmp_path / "harness.log"
    log.write_text("\n".join(line for line in LOG.splitlines() if "verdict" not in line), encoding="utf-8")
    with pytest.raises(ValueError, match="verdict"):
        phases(marks(log), wall_s=84.4, duration_s=60.0)
