"""`kchaos hunt` on real Kafka: a seeded mix run, its verdict, and the replay that hits the same nodes.

The installed command runs a hunt of one short run of a mix (`mix:kinds=kill,isolate,pause`, faults of 2 s
after 1 s of quiet, so three fit in 20 s, on Kafka's quicker failure timers: each fault holds until Kafka
reacts); what is tested is the hunt's promise on a real run: a run directory for the seed, judged, and the
`kchaos run --replay` command it prints configuring the very run it made, so its `schedule.json` is what
that command plans (planned by the config loader, without a second cluster). Nightly, the printed command
is also run as printed (about one more 40 s run, a minute with its check): its topic must be placed as
the original's was and each fault's start row must name the nodes the original's did. Seed 7 draws a
`kill:target=followers`, resolved from the partition's leader, which without the replayed placement and
pins would hit other nodes about two times in three, and an `isolate:target=successor`. Seed after seed,
each with its own run directory, table row and replay, is tests/test_hunt.py's, on runs that need no
cluster.
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path

import pytest

from kchaos.model.fault_pins import read_pins
from kchaos.model.fault_plan import plan
from kchaos.model.run_files import RunDir
from kchaos.model.topic_assignment import read_assignment
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


def hunt(runs_dir: Path) -> tuple[RunDir, str]:
    """One seeded hunt run, checked as the hunt's table and run directory promise; its run directory and
    the replay command it printed."""
    command = [
        str(KCHAOS), "hunt", "--runs", "1", "--seed", "7", "--run-id", "hunt", "--runs-dir", str(runs_dir),
    ]  # fmt: skip
    done = subprocess.run([*command, *SHORT_MIX], capture_output=True, text=True, timeout=600, check=False)
    print(done.stdout)  # the hunt's table and replay commands, shown with -s
    assert done.returncode in (0, 1), done.stdout + done.stderr  # judged: ok/permitted, or a violation
    assert_no_leftovers()
    assert sorted(path.name for path in runs_dir.iterdir()) == ["hunt-1-seed7"]
    replays = dict(re.findall(r"^  (hunt-\d-seed\d): (\S+ run --replay .*)$", done.stdout, re.MULTILINE))
    assert set(replays) == {"hunt-1-seed7"}, done.stdout
    run_id, line = next(iter(replays.items()))
    files = RunDir(runs_dir / run_id)
    verdict = json.loads(files.results.read_text(encoding="utf-8"))["verdict"]
    assert verdict in ("ok", "permitted", "violation"), f"{run_id}: {verdict}"
    row = rf"^{run_id} +\d+ +.+ +{verdict} \(\d+ acknowledged, \d+ lost(; [a-z, -]+)?\)$"
    assert re.search(row, done.stdout, re.MULTILINE), done.stdout
    ran = json.loads(files.schedule.read_text(encoding="utf-8"))
    replayed = [asdict(p) for p in plan(replay_config(line))]
    assert ran == replayed and len(ran) == 3
    assert all(":target=" in fault["fault"] for fault in ran)  # each a concrete, drawn spec
    # A fault aimed at a role, so the replay tests the pins: pick a seed that draws one.
    assert any(re.search(r":target=(leader|followers)\b", fault["fault"]) for fault in ran), ran
    return files, line


def test_hunt_runs_each_seed_judges_it_and_prints_the_command_that_replays_it(tmp_path: Path) -> None:
    """The hunt's run and the command it prints, which plans the very schedule the run had. About 40 s."""
    hunt(tmp_path / "runs")


@pytest.mark.nightly  # CI: the test above (the printed command plans the same schedule, without a cluster)
def test_the_printed_command_replays_the_run_on_the_same_nodes(tmp_path: Path) -> None:
    """The printed command, run as printed (from the same working directory as the hunt): the same
    placement, each fault on the nodes the original's hit. About 50 s more than the test above."""
    runs_dir = tmp_path / "runs"
    files, line = hunt(runs_dir)
    again = subprocess.run(shlex.split(line), capture_output=True, text=True, timeout=600, check=False)
    print(again.stdout)
    assert again.returncode in (0, 1), again.stdout + again.stderr
    assert_no_leftovers()
    copy = RunDir(runs_dir / f"{files.path.name}-replay")
    assert json.loads(copy.config.read_text(encoding="utf-8"))["replay_of"] == str(files.path)
    assert copy.schedule.read_text(encoding="utf-8") == files.schedule.read_text(encoding="utf-8")
    assert read_assignment(copy.assignment) == read_assignment(files.assignment)
    assert read_pins(copy.path) == read_pins(files.path)  # each fault's nodes and choices, one for one
    assert "hit or chose otherwise than in the run it replays" not in again.stdout
