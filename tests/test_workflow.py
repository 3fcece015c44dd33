"""The nightly workflow lints clean and runs what the README says: every nightly scenario set on every
listed Kafka version, failing on a violation, with the runs uploaded even then. `.ci/nightly` runs the
same cells locally, so its lists must be the workflow's."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.config import DEFAULT_KAFKA_VERSION

ROOT = Path(__file__).resolve().parent.parent
WORKFLOW = ROOT / ".github" / "workflows" / "nightly.yml"
LOCAL_RUNNER = ROOT / ".ci" / "nightly"


def _actionlint() -> str | None:
    for candidate in (ROOT / ".venv" / "bin" / "actionlint", Path(sys.executable).parent / "actionlint"):
        if candidate.is_file():
            return str(candidate)
    return shutil.which("actionlint")


@pytest.fixture(scope="module")
def workflow() -> dict[Any, Any]:
    loaded = yaml.safe_load(WORKFLOW.read_text())
    assert isinstance(loaded, dict)
    return loaded


def _words(value: str) -> list[str]:
    return [word for word in re.split(r"[\s,]+", value) if word]


def _runner_default(name: str) -> list[str]:
    """The default `.ci/nightly` gives a list, from its `name=${KCHAOS_NIGHTLY_...:-default}` line."""
    match = re.search(
        rf"^{name}=\$\{{KCHAOS_NIGHTLY_{name.upper()}:-([^}}]*)\}}$", LOCAL_RUNNER.read_text(), re.M
    )
    assert match, f"{LOCAL_RUNNER} has no line {name}=${{KCHAOS_NIGHTLY_{name.upper()}:-...}}"
    return _words(match.group(1))


def _run_steps(workflow: dict[Any, Any]) -> list[dict[str, Any]]:
    return [step for job in workflow["jobs"].values() for step in job.get("steps", [])]


def test_actionlint_passes() -> None:
    actionlint = _actionlint()
    if actionlint is None:
        pytest.fail(
            "actionlint is not installed; run ./setup.sh (it installs it into .venv/bin with go install)"
        )
    result = subprocess.run(
        [actionlint, "-no-color", str(WORKFLOW.relative_to(ROOT))],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert result.returncode == 0, f"actionlint found problems:\n{result.stdout}{result.stderr}"


def test_runs_nightly_and_on_demand(workflow: dict[Any, Any]) -> None:
    triggers = workflow.get("on", workflow.get(True))  # YAML 1.1 reads a bare `on` as true
    assert isinstance(triggers, dict)
    assert triggers["schedule"][0]["cron"]
    assert "workflow_dispatch" in triggers


def test_every_nightly_matrix_file_is_a_scenario_set(workflow: dict[Any, Any]) -> None:
    listed = _words(workflow["env"]["KCHAOS_NIGHTLY_SCENARIOS"])
    on_disk = sorted(path.stem for path in (ROOT / "matrices").glob("nightly-*.yaml"))
    missing = [stem for stem in on_disk if stem not in listed]
    assert not missing, f"add {missing} to KCHAOS_NIGHTLY_SCENARIOS in {WORKFLOW.name} and .ci/nightly"
    if (ROOT / "matrices").is_dir():
        absent = [stem for stem in listed if not (ROOT / "matrices" / f"{stem}.yaml").is_file()]
        assert not absent, f"KCHAOS_NIGHTLY_SCENARIOS lists {absent}, which have no file in matrices/"


def test_kafka_versions_include_the_default(workflow: dict[Any, Any]) -> None:
    versions = _words(workflow["env"]["KCHAOS_NIGHTLY_VERSIONS"])
    assert DEFAULT_KAFKA_VERSION in versions
    assert all(re.fullmatch(r"\d+(\.\d+)+", version) for version in versions), versions
    assert len(set(versions)) == len(versions), versions


def test_matrix_is_versions_by_scenario_sets(workflow: dict[Any, Any]) -> None:
    job = workflow["jobs"]["chaos"]
    strategy = job["strategy"]
    assert strategy["fail-fast"] is False
    assert "plan.outputs.kafka-versions" in strategy["matrix"]["kafka-version"]
    assert "plan.outputs.scenarios" in strategy["matrix"]["scenarios"]
    assert job["timeout-minutes"] > 0


def test_runs_kchaos_matrix_and_fails_on_its_exit_status(workflow: dict[Any, Any]) -> None:
    runs = [step["run"] for step in _run_steps(workflow) if "kchaos matrix" in step.get("run", "")]
    assert len(runs) == 1, "exactly one step runs `kchaos matrix`"
    assert '--axis "kafka_version=$KCHAOS_KAFKA_VERSION"' in runs[0]
    assert 'exit "$status"' in runs[0], (
        "the step must fail with kchaos's exit status (1 violation, 2 harness)"
    )


def test_uploads_runs_and_summarizes_even_when_the_matrix_failed(workflow: dict[Any, Any]) -> None:
    steps = workflow["jobs"]["chaos"]["steps"]
    uploads = [step for step in steps if str(step.get("uses", "")).startswith("actions/upload-artifact@")]
    assert len(uploads) == 1
    assert uploads[0]["if"] == "always()"
    assert uploads[0]["with"]["path"].startswith("matrix-runs")
    assert "matrix.kafka-version" in uploads[0]["with"]["name"]
    assert "matrix.scenarios" in uploads[0]["with"]["name"]
    summaries = [step for step in steps if "GITHUB_STEP_SUMMARY" in step.get("run", "")]
    assert summaries and summaries[0]["if"] == "always()"


def test_local_runner_has_the_workflows_lists(workflow: dict[Any, Any]) -> None:
    assert _runner_default("versions") == _words(workflow["env"]["KCHAOS_NIGHTLY_VERSIONS"])
    assert _runner_default("scenarios") == _words(workflow["env"]["KCHAOS_NIGHTLY_SCENARIOS"])
    text = LOCAL_RUNNER.read_text()
    assert "kchaos matrix" in text and "./setup.sh" in text


def test_local_runner_is_valid_bash() -> None:
    result = subprocess.run(["bash", "-n", str(LOCAL_RUNNER)], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr


def _step(workflow: dict[Any, Any], job: str, name: str) -> dict[str, Any]:
    steps = [step for step in workflow["jobs"][job]["steps"] if step.get("name") == name]
    assert len(steps) == 1, f"job {job} has no step named {name!r}"
    return steps[0]


def _bash(script: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    assert shutil.which("jq") is not None, "jq is missing (the workflow's scripts use it): run ./setup.sh"
    return subprocess.run(
        ["bash", "-e", "-c", script],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )


def test_plan_turns_the_lists_into_matrix_json(workflow: dict[Any, Any], tmp_path: Path) -> None:
    script = _step(workflow, "plan", "Choose versions and scenario sets")["run"]
    output = tmp_path / "output"
    env = {"PATH": "/usr/bin:/bin", "GITHUB_OUTPUT": str(output), **workflow["env"]}
    result = _bash(script, {**env, "VERSIONS": "", "SCENARIOS": ""}, ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    lines = dict(line.split("=", 1) for line in output.read_text().splitlines())
    assert json.loads(lines["kafka-versions"]) == _words(workflow["env"]["KCHAOS_NIGHTLY_VERSIONS"])
    assert json.loads(lines["scenarios"]) == _words(workflow["env"]["KCHAOS_NIGHTLY_SCENARIOS"])

    result = _bash(script, {**env, "VERSIONS": "4.3.1,latest", "SCENARIOS": ""}, ROOT)
    assert result.returncode != 0 and "'latest' is not a Kafka version" in result.stdout


def test_summary_lists_each_runs_verdict(workflow: dict[Any, Any], tmp_path: Path) -> None:
    script = _step(workflow, "chaos", "Summarize verdicts")["run"]
    runs = tmp_path / "matrix-runs" / "kafka-4.3.1" / "nightly-x"
    for point, verdict, lost in (("acks-all", "ok", 0), ("acks-1", "violation", 7)):
        (runs / point).mkdir(parents=True)
        results = {
            "verdict": verdict,
            "summary": {"sends_acknowledged": 100},
            "anomalies": {"lost-write": {"count": lost, "verdict": verdict}},
        }
        (runs / point / "results.json").write_text(json.dumps(results))
    (runs / "unfinished").mkdir()
    (runs / "unfinished" / "config.json").write_text("{}")
    summary = tmp_path / "summary.md"
    env = {
        "PATH": "/usr/bin:/bin",
        "GITHUB_STEP_SUMMARY": str(summary),
        "RUNS_DIR": str(tmp_path / "matrix-runs" / "kafka-4.3.1"),
        "SCENARIOS": "nightly-x",
        "KCHAOS_KAFKA_VERSION": "4.3.1",
        "STATUS": "1",
        "OUTCOME": "failure",
    }
    result = _bash(script, env, tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    text = summary.read_text()
    assert "at least one run has a `violation`" in text
    assert "| nightly-x/acks-all | ok | 100 | 0 |  |" in text
    assert "| nightly-x/acks-1 | **violation** | 100 | 7 | lost-write: 7 (violation) |" in text
    assert "| nightly-x/unfinished | no results.json" in text
    assert "::error title=violation::" in result.stdout and "acks-1" in result.stdout
