"""`kchaos hunt` on real Kafka: a seeded mix run, its verdict, and the replay that plans the same.

The installed command runs a hunt of one short run of a mix (`mix:kinds=kill,isolate,pause`, faults of 2 s
after 1 s of quiet, so three fit in 20 s, on Kafka's quicker failure timers: each fault holds until Kafka
reacts); what is tested is the hunt's promise on a real run: a run directory for the seed, judged, and the
`kchaos run` command it prints configuring the very run it made, so its `schedule.json` is what that command
plans (planned by the config loader, without a second cluster). Seed after seed, each with its own run
directory, table row and replay, is tests/test_hunt.py's, on runs that need no cluster.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from kchaos.model.fault_plan import plan
from kchaos.model.run_files import RunDir
from kchaos.runner.hunt_command import PROGRAM, replay_config
from tests.cluster.conftest import assert_no_leftovers
from tests.cluster.fault_steps import QUICK_TIMER_FLAGS

pytestmark = pytest.mark.cluster

#: The installed `kchaos` command of this environment.
KCHAOS = Path(sys.executable).parent / PROGRAM
SHORT_MIX = [
    "--nemesis", "mix:kinds=kill,isolate,pause", "--duration", "20", "--fault-duration", "2",
    "--fault-interval", "1", "--rate", "100", *QUICK_TIMER_FLAGS,
]  # fmt: skip


def test_hunt_runs_each_seed_judges_it_and_prints_the_command_that_plans_it_again(tmp_path: Path) -> None:
    runs_dir = tmp_path / "runs"
    command = [
        str(KCHAOS),
        "hunt",
        "--runs",
        "1",
        "--seed",
        "1",
        "--run-id",
        "hunt",
        "--runs-dir",
        str(runs_dir),
    ]
    done = subprocess.run([*command, *SHORT_MIX], capture_output=True, text=True, timeout=600, check=False)
    print(done.stdout)  # the hunt's table and replay commands, shown with -s
    assert done.returncode in (0, 1), done.stdout + done.stderr  # judged: ok/permitted, or a violation
    assert_no_leftovers()
    assert sorted(path.name for path in runs_dir.iterdir()) == ["hunt-1-seed1"]
    replays = dict(re.findall(rf"^  (hunt-\d-seed\d): ({PROGRAM} run .*)$", done.stdout, re.MULTILINE))
    assert set(replays) == {"hunt-1-seed1"}, done.stdout
    for run_id, line in replays.items():
        files = RunDir(runs_dir / run_id)
        verdict = json.loads(files.results.read_text(encoding="utf-8"))["verdict"]
        assert verdict in ("ok", "permitted", "violation"), f"{run_id}: {verdict}"
        assert re.search(rf"^{run_id} +\d+ +.+ +{verdict}$", done.stdout, re.MULTILINE), done.stdout
        ran = json.loads(files.schedule.read_text(encoding="utf-8"))
        replayed = [
            {"key": p.key, "fault": p.fault, "at": p.at, "duration": p.duration}
            for p in plan(replay_config(line))
        ]
        assert ran == replayed and len(ran) == 3
        assert all(":target=" in fault["fault"] for fault in ran)  # each a concrete, drawn spec
