"""The workflows lint clean and run what the README says. The nightly one: every nightly scenario set on
every listed Kafka version, failing on a violation, with the runs uploaded even then; `.ci/nightly` runs
the same cells locally, so its lists must be the workflow's. The test one: the README's test command on
every push and pull request, with what `./setup.sh` downloads cached."""

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

from kchaos.model.releases import DEFAULT_KAFKA_VERSION, Release

ROOT = Path(__file__).resolve().parent.parent
WORKFLOWS = ROOT / ".github" / "workflows"
WORKFLOW = WORKFLOWS / "nightly.yml"
TESTS_WORKFLOW = WORKFLOWS / "test.yml"
#: The README's test command, which CI and the test workflow run.
TEST_COMMAND = "./setup.sh && .venv/bin/pytest"
LOCAL_RUNNER = ROOT / ".ci" / "nightly"


def _actionlint() -> str | None:
    for candidate in (ROOT / ".venv" / "bin" / "actionlint", Path(sys.executable).parent / "actionlint"):
        if candidate.is_file():
            return str(candidate)
    return shutil.which("actionlint")


def _load(path: Path) -> dict[Any, Any]:
    loaded = yaml.safe_load(path.read_text())
    assert isinstance(loaded, dict)
    return loaded


@pytest.fixture(scope="module")
def workflow() -> dict[Any, Any]:
    return _load(WORKFLOW)


@pytest.fixture(scope="module")
def tests_workflow() -> dict[Any, Any]:
    return _load(TESTS_WORKFLOW)


def _triggers(workflow: dict[Any, Any]) -> dict[str, Any]:
    triggers = workflow.get("on", workflow.get(True))  # YAML 1.1 reads a bare `on` as true
    assert isinstance(triggers, dict)
    return triggers


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


def test_every_workflow_is_tested_here() -> None:
    assert sorted(WORKFLOWS.glob("*.y*ml")) == sorted([WORKFLOW, TESTS_WORKFLOW])


@pytest.mark.nightly  # the linter is the nightly's own tool (.ci/actionlint), not one a chaos run needs
@pytest.mark.parametrize("path", [WORKFLOW, TESTS_WORKFLOW], ids=lambda path: path.name)
def test_actionlint_passes(path: Path) -> None:
    actionlint = _actionlint()
    if actionlint is None:
        pytest.fail("actionlint is not installed; run .ci/actionlint (it installs it into .venv/bin)")
    result = subprocess.run(
        [actionlint, "-no-color", str(path.relative_to(ROOT))],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert result.returncode == 0, f"actionlint found problems:\n{result.stdout}{result.stderr}"


def test_runs_nightly_and_on_demand(workflow: dict[Any, Any]) -> None:
    triggers = _triggers(workflow)
    assert triggers["schedule"][0]["cron"]
    assert "workflow_dispatch" in triggers


def test_every_nightly_matrix_file_is_a_scenario_set_or_an_extra_cell(workflow: dict[Any, Any]) -> None:
    """A set that needs one release (ZooKeeper mode on 3.9.2) runs as an extra cell instead."""
    listed = _words(workflow["env"]["KCHAOS_NIGHTLY_SCENARIOS"])
    listed += [cell["scenarios"] for cell in workflow["jobs"]["chaos"]["strategy"]["matrix"]["include"]]
    on_disk = sorted(path.stem for path in (ROOT / "kchaos" / "matrices").glob("nightly-*.yaml"))
    missing = [stem for stem in on_disk if stem not in listed]
    assert not missing, f"add {missing} to KCHAOS_NIGHTLY_SCENARIOS in {WORKFLOW.name} and .ci/nightly"
    if (ROOT / "kchaos" / "matrices").is_dir():
        absent = [stem for stem in listed if not (ROOT / "kchaos" / "matrices" / f"{stem}.yaml").is_file()]
        assert not absent, f"KCHAOS_NIGHTLY_SCENARIOS lists {absent}, which have no file in kchaos/matrices/"


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


# --- the test workflow ----------------------------------------------------------------------------------


def test_tests_run_on_every_push_and_pull_request(tests_workflow: dict[Any, Any]) -> None:
    triggers = _triggers(tests_workflow)
    assert "push" in triggers and "pull_request" in triggers
    for event in ("push", "pull_request"):  # no branch or path filter: every one
        assert not triggers[event], f"{event} is filtered: {triggers[event]}"


def test_tests_run_the_readmes_test_command(tests_workflow: dict[Any, Any]) -> None:
    assert f"```sh\n{TEST_COMMAND}\n```" in (ROOT / "README.md").read_text(encoding="utf-8")
    assert TEST_COMMAND in (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    [job] = tests_workflow["jobs"].values()
    runs = [step.get("run", "") for step in job["steps"]]
    setup = [i for i, run in enumerate(runs) if re.search(r"(^|\s)\./setup\.sh(\s|$)", run)]
    tests = [i for i, run in enumerate(runs) if re.search(r"(^|\s)\.venv/bin/pytest$", run.strip())]
    assert len(setup) == 1 and len(tests) == 1, "one step runs ./setup.sh, a later one .venv/bin/pytest"
    assert setup[0] < tests[0] == len(runs) - 1
    assert not any(step.get("continue-on-error") for step in job["steps"])
    assert job["timeout-minutes"] > 0


def _cache_steps(job: dict[str, Any], action: str) -> dict[str, dict[str, Any]]:
    """The job's steps that use actions/cache/<action>, by the path they cache."""
    steps = [
        step for step in job["steps"] if str(step.get("uses", "")).startswith(f"actions/cache/{action}@")
    ]
    return {step["with"]["path"]: step for step in steps}


@pytest.mark.parametrize(
    ("path", "keyed_by", "used_by_setup"),
    [
        ("~/.cache/pip", "pyproject.toml", "PIP_CACHE_DIR=$HOME/.cache/pip"),
        ("~/.m2/repository", "kchaos/compose/kafka/pom.xml", "-Dmaven.repo.local=$HOME/.m2/repository"),
        ("~/.cache/kchaos/base-image.tar", "kchaos/compose/base/**", "docker save kchaos/base:bookworm"),
    ],
    ids=["pip", "maven", "base-image"],
)
def test_tests_cache_what_setup_downloads(
    tests_workflow: dict[Any, Any], path: str, keyed_by: str, used_by_setup: str
) -> None:
    """Each cache is restored before ./setup.sh, filled by it, and saved before the tests, when it missed,
    under the key it was looked up by (which changes with the files it is made from)."""
    [job] = tests_workflow["jobs"].values()
    steps = job["steps"]
    restore, save = _cache_steps(job, "restore").get(path), _cache_steps(job, "save").get(path)
    assert restore is not None and save is not None, f"{path} is not both restored and saved"
    assert f"hashFiles('{keyed_by}'" in restore["with"]["key"]
    assert save["with"]["key"] == f"${{{{ steps.{restore['id']}.outputs.cache-primary-key }}}}"
    assert save["if"] == f"steps.{restore['id']}.outputs.cache-hit != 'true'"
    setup = next(i for i, step in enumerate(steps) if "./setup.sh" in step.get("run", ""))
    tests = next(i for i, step in enumerate(steps) if ".venv/bin/pytest" in step.get("run", ""))
    assert steps.index(restore) < setup < steps.index(save) < tests
    assert any(used_by_setup in step.get("run", "") for step in steps[: steps.index(save)])


def test_tests_load_the_cached_base_image_before_setup(tests_workflow: dict[Any, Any]) -> None:
    [job] = tests_workflow["jobs"].values()
    steps = job["steps"]
    restore = _cache_steps(job, "restore")["~/.cache/kchaos/base-image.tar"]
    load = [step for step in steps if "docker load" in step.get("run", "")]
    assert len(load) == 1
    assert load[0]["if"] == f"steps.{restore['id']}.outputs.cache-hit == 'true'"
    assert "~/.cache/kchaos/base-image.tar" in load[0]["run"]
    setup = next(i for i, step in enumerate(steps) if "./setup.sh" in step.get("run", ""))
    assert steps.index(restore) < steps.index(load[0]) < setup


def test_the_zookeeper_era_cell_runs_in_the_workflow_and_locally(workflow: dict[Any, Any]) -> None:
    included = workflow["jobs"]["chaos"]["strategy"]["matrix"]["include"]
    cells = [f"{cell['kafka-version']}:{cell['scenarios']}" for cell in included]
    match = re.search(
        r"^extra_cells=\$\{KCHAOS_NIGHTLY_EXTRA_CELLS-([^}]*)\}$", LOCAL_RUNNER.read_text(), re.M
    )
    assert match and _words(match.group(1)) == cells
    versions = [Release.parse(cell["kafka-version"]) for cell in included]
    assert any(version.metadata_modes == ("zookeeper",) for version in versions), cells
    for cell in included:
        assert (ROOT / "kchaos" / "matrices" / f"{cell['scenarios']}.yaml").is_file(), cell


def test_the_nightly_runs_every_faults_effect_in_zookeeper_mode(workflow: dict[Any, Any]) -> None:
    """The module that CI runs on the default release (KRaft) runs nightly on a ZooKeeper-era release,
    in the workflow and in .ci/nightly alike."""
    command = ".venv/bin/pytest tests/cluster/test_fault_effects.py --kchaos-kafka-version 2.6.3"
    runs = [step.get("run", "") for step in workflow["jobs"]["nightly-tests"]["steps"]]
    assert command in runs
    assert f"if {command}; then" in LOCAL_RUNNER.read_text(encoding="utf-8")
