"""The judge wing needs no cluster: importing any checker or the report, and `kchaos check` of a whole run
directory, load none of the cluster's libraries (docker, testcontainers, confluent_kafka). A machine that
only judges run directories copied from elsewhere (a laptop, a Spark cluster's driver) never needs them, and
a change to the cluster can never break a check. Each case runs in a fresh interpreter, since this test
session has loaded those libraries long ago."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from kchaos.model.history import HistoryWriter
from kchaos.model.run_files import RunDir
from tests.histories import HistoryBuilder

ROOT = Path(__file__).resolve().parent.parent
CLUSTER_LIBRARIES = ("docker", "testcontainers", "confluent_kafka")
#: The runner's modules on the judge's path: the command line (every command is registered on it), the
#: commands that judge or report, and the judge itself.
JUDGE_RUNNER_MODULES = (
    "kchaos.runner.cli",
    "kchaos.runner.check_command",
    "kchaos.runner.report_command",
    "kchaos.runner.run_dir_check",
    "kchaos.runner.rules_command",
    "kchaos.runner.outcome",
)
#: Printed last by every probe: which of the cluster's libraries the interpreter loaded.
REPORT_LOADED = f"""
import json, sys
print(json.dumps([name for name in {CLUSTER_LIBRARIES!r} if name in sys.modules]))
"""


def judge_modules() -> list[str]:
    """Every module of the judge wing, found on disk so a new checker is covered without editing this."""
    found = []
    for package in ("checkers", "spark_analysis"):
        for path in sorted((ROOT / "kchaos" / package).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            found.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return found


def loaded_by(code: str, timeout: float = 120) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    """Runs `code` in a fresh interpreter from the project root; returns the process and the cluster
    libraries it had loaded when it ended."""
    done = subprocess.run(
        [sys.executable, "-c", code + REPORT_LOADED],
        cwd=ROOT, capture_output=True, text=True, timeout=timeout, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return done, json.loads(done.stdout.strip().splitlines()[-1])


def test_the_probe_sees_a_cluster_library_when_one_is_loaded() -> None:
    """The check itself: the cluster's own module loads docker, and the probe says so."""
    _, loaded = loaded_by("import kchaos.harness.cluster")
    assert set(loaded) == set(CLUSTER_LIBRARIES)


def test_importing_every_checker_and_the_report_loads_no_cluster_library() -> None:
    modules = [*judge_modules(), *JUDGE_RUNNER_MODULES]
    assert "kchaos.checkers.results" in modules
    _, loaded = loaded_by("".join(f"import {module}\n" for module in modules))
    assert loaded == []


def test_kchaos_check_of_a_run_directory_loads_no_cluster_library(tmp_path: Path) -> None:
    files = RunDir(tmp_path / "judged")
    files.history.mkdir(parents=True)
    config = {"run_id": "judged", "acks": "all", "min_insync_replicas": 2, "replication_factor": 3,
              "unclean_leader_election": False, "idempotence": True}  # fmt: skip
    files.config.write_text(json.dumps(config), encoding="utf-8")
    writer = HistoryWriter(files, "judged")
    history = HistoryBuilder(run_id="judged")
    history.final_reads(history.sends(3))  # acknowledged writes, all read back
    history.replay(writer)
    writer.finish()

    code = f"""
from kchaos.runner.cli import main
try:
    main(["check", {str(files.path)!r}])
except SystemExit as exit:
    print("exit", exit.code)
"""
    done, loaded = loaded_by(code, timeout=300)

    assert "exit 0" in done.stdout, done.stdout + done.stderr
    assert files.results.is_file()
    assert loaded == []
