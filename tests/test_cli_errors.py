"""Exit status 1 means a violation and nothing else: every way the harness itself fails exits 2 with a line
saying what failed and the fix, never a traceback on the terminal (that goes to the run's harness.log, or
to the terminal with `kchaos --debug`). No Docker engine is needed: where one matters, it is made absent."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from confluent_kafka import KafkaError, KafkaException

import kchaos.harness.engine
import kchaos.harness.labels
import kchaos.runner.outcome
import kchaos.runner.run
from kchaos.model.history import HistoryWriter
from kchaos.model.run_files import RunDir
from kchaos.nemesis.fault import FaultError
from kchaos.runner.cli import main
from kchaos.runner.outcome import RunOutcome
from kchaos.workloads.final_read import FinalReadIncomplete
from tests.histories import HistoryBuilder

ROOT = Path(__file__).resolve().parent.parent
KCHAOS = ROOT / ".venv" / "bin" / "kchaos"

NO_ENGINE = {"DOCKER_HOST": "unix:///tmp/kchaos-test-no-engine.sock"}
NO_ENGINE_MESSAGE = (
    "kchaos: no Docker engine answers at unix:///tmp/kchaos-test-no-engine.sock (No such file or directory); "
    "start the Docker engine (e.g. `sudo systemctl start docker`, or run `dockerd`) or set DOCKER_HOST to "
    "one that runs; in a kchaos clone, ./setup.sh installs and starts it"
)

CONFIG = {
    "run_id": "cli-test",
    "acks": "all",
    "min_insync_replicas": 2,
    "replication_factor": 3,
    "unclean_leader_election": False,
    "idempotence": True,
}


def invoke(args: list[str], env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(main, args, env=env)


def assert_harness_failure(result: Result, *expected: str) -> None:
    assert result.exit_code == 2, result.output
    assert result.stdout == "", "a harness failure is told on stderr"
    for text in expected:
        assert text in result.stderr, result.stderr
    assert "Traceback" not in result.output, result.output


@pytest.fixture
def engine_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kchaos.harness.engine, "require_engine", lambda timeout=0.0: None)


def run_dir_with_history(tmp_path: Path, lines: list[str] | None = None) -> Path:
    """A run directory with settings and a staged history (a run that crashed before converting it)."""
    files = RunDir(tmp_path / "runs" / "cli-test")
    files.history.mkdir(parents=True)
    files.config.write_text(json.dumps(CONFIG), encoding="utf-8")
    if lines is None:
        writer = HistoryWriter(files, "cli-test")
        history = HistoryBuilder(run_id="cli-test")
        history.final_reads(history.sends(3))  # acknowledged writes, all read: a run that can be `ok`
        history.replay(writer)
        writer.record("producer-0", "invoke", "send", topic="kchaos", partition=0, value="v")
        writer.flush()  # on disk, as a crashed run's rows are; the writer is never finished
    else:
        files.history_staging.write_text("".join(lines), encoding="utf-8")
    return files.path


# --- kchaos check: what is wrong with the run directory, before Spark starts ---------------------------


def test_check_corrupt_config_json(tmp_path: Path) -> None:
    run_dir = run_dir_with_history(tmp_path)
    (run_dir / "config.json").write_text('{"acks": "all",', encoding="utf-8")
    result = invoke(["check", str(run_dir)])
    assert_harness_failure(
        result,
        f"kchaos: {run_dir}/config.json is not valid JSON (Expecting property name enclosed in double quotes",
        "restore it (it holds the run's settings) or check another run directory",
    )


def test_check_config_json_that_is_not_an_object(tmp_path: Path) -> None:
    run_dir = run_dir_with_history(tmp_path)
    (run_dir / "config.json").write_text("[1, 2]", encoding="utf-8")
    result = invoke(["check", str(run_dir)])
    assert_harness_failure(result, f"kchaos: {run_dir}/config.json holds a JSON list, not the object")


def test_check_missing_config_json(tmp_path: Path) -> None:
    run_dir = run_dir_with_history(tmp_path)
    (run_dir / "config.json").unlink()
    result = invoke(["check", str(run_dir)])
    assert_harness_failure(result, f"kchaos: {run_dir} has no config.json (the run's settings")


def test_check_missing_history(tmp_path: Path) -> None:
    run_dir = run_dir_with_history(tmp_path)
    (run_dir / "history" / "history.ndjson").unlink()
    result = invoke(["check", str(run_dir)])
    assert_harness_failure(
        result, f"kchaos: {run_dir} has no history/history.parquet or history/history.ndjson"
    )


def test_check_refuses_more_examples_than_a_run_may_keep(tmp_path: Path) -> None:
    run_dir = run_dir_with_history(tmp_path)
    result = invoke(["check", str(run_dir), "--max-examples", "2147483648"])
    assert result.exit_code == 2, result.output
    assert "Invalid value for '--max-examples': 2147483648 is not in the range 1<=x<=10000" in result.stderr
    assert not (run_dir / "results.json").exists()


def test_an_import_refuses_more_examples_than_a_run_may_keep(tmp_path: Path) -> None:
    log = tmp_path / "producer.log"
    log.write_text("", encoding="utf-8")
    out = tmp_path / "imported"
    result = invoke(
        ["import-verifiable", "--producer-log", str(log), "--out", str(out), "--max-examples", "10001"]
    )
    assert result.exit_code == 2, result.output
    assert "Invalid value for '--max-examples': 10001 is not in the range 1<=x<=10000" in result.stderr
    assert not out.exists()


def test_check_a_directory_that_is_no_run_at_all(tmp_path: Path) -> None:
    result = invoke(["check", str(tmp_path)])
    assert_harness_failure(result, f"kchaos: {tmp_path} is not a run directory")


def test_check_a_damaged_history_names_the_file_and_line(tmp_path: Path) -> None:
    rows = [json.dumps({"run_id": "cli-test", "index": n}) + "\n" for n in range(3)]
    run_dir = run_dir_with_history(tmp_path, [rows[0], rows[1][:12] + "\n", rows[2]])
    result = invoke(["check", str(run_dir)])
    assert_harness_failure(
        result,
        f"kchaos: {run_dir}/history/history.ndjson line 2: not valid JSON (",
        "not the last line",
        "cannot be checked",
    )


def test_check_still_checks_a_crashed_run_whose_last_line_is_torn(tmp_path: Path) -> None:
    """The one bad line a history may have: the run died while writing it. Checked as usual (Spark)."""
    run_dir = run_dir_with_history(tmp_path)
    with (run_dir / "history" / "history.ndjson").open("a", encoding="utf-8") as fh:
        fh.write('{"run_id":"cli-test","index":99,"proc')
    result = invoke(["check", str(run_dir)])
    assert result.exit_code == 0, result.output
    assert "verdict: ok" in result.output
    assert (run_dir / "results.json").exists()


# --- kchaos run: refused before anything starts ----------------------------------------------------------


def test_run_refuses_a_run_id_that_exists(tmp_path: Path, engine_answers: None) -> None:
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "results.json").write_text("{}", encoding="utf-8")
    result = invoke(["run", "--runs-dir", str(tmp_path), "--run-id", "taken"])
    assert_harness_failure(
        result, f"kchaos: {tmp_path}/taken already exists", "pick another --run-id, or remove that directory"
    )
    assert [p.name for p in (tmp_path / "taken").iterdir()] == ["results.json"]


def test_run_without_docker_engine_creates_no_run_directory(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    result = invoke(["run", "--runs-dir", str(runs), "--run-id", "x"], env=NO_ENGINE)
    assert_harness_failure(result, NO_ENGINE_MESSAGE)
    assert not runs.exists()


def test_clean_without_docker_engine() -> None:
    result = invoke(["clean"], env=NO_ENGINE)
    assert_harness_failure(result, NO_ENGINE_MESSAGE)


def test_image_build_without_docker_engine() -> None:
    result = invoke(["image", "build"], env=NO_ENGINE)
    assert_harness_failure(result, NO_ENGINE_MESSAGE)


def test_the_installed_command_exits_2_without_a_traceback(tmp_path: Path) -> None:
    """The real entry point, as CI calls it."""
    if not KCHAOS.exists():
        pytest.fail(f"{KCHAOS} is missing; run ./setup.sh")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), **NO_ENGINE}
    done = subprocess.run(
        [str(KCHAOS), "run", "--runs-dir", str(tmp_path / "runs")],
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.strip() == NO_ENGINE_MESSAGE
    assert not (tmp_path / "runs").exists()


# --- anything else that escapes a command ----------------------------------------------------------------

ESCAPING = [
    (FaultError("iptables -A INPUT failed on kafka-2: exit 1"), "FaultError: iptables -A INPUT failed"),
    (FinalReadIncomplete("partition 1 read to 40 of 52"), "FinalReadIncomplete: partition 1 read to 40"),
    (KafkaException(KafkaError(KafkaError._TIMED_OUT, "Local: Timed out")), "KafkaException: KafkaError{"),
    (RuntimeError("something nobody foresaw"), "RuntimeError: something nobody foresaw"),
    (KeyError("leader"), "KeyError: 'leader'"),
]
ESCAPING_IDS = [type(exc).__name__ for exc, _ in ESCAPING]


def failing_execute(exc: BaseException) -> Any:
    def execute(config: Any, **kwargs: Any) -> RunOutcome:
        (config.run_dir / "logs").mkdir(parents=True)  # as the real one does before anything can fail
        (config.run_dir / "logs" / "harness.log").write_text("earlier lines\n", encoding="utf-8")
        raise exc

    return execute


@pytest.mark.parametrize(("exc", "named"), ESCAPING, ids=ESCAPING_IDS)
def test_run_failing_unexpectedly_exits_2_naming_the_error_and_where_the_traceback_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, engine_answers: None, exc: Exception, named: str
) -> None:
    monkeypatch.setattr(kchaos.runner.run, "execute", failing_execute(exc))
    result = invoke(["run", "--runs-dir", str(tmp_path), "--run-id", "r"])
    run_dir = tmp_path / "r"
    log = run_dir / "logs" / "harness.log"
    assert_harness_failure(
        result,
        f"kchaos: the harness failed: {named}",
        f"run directory: {run_dir}",
        f"harness log (with the traceback): {log}",
    )
    kept = log.read_text(encoding="utf-8")
    assert kept.startswith("earlier lines\n")
    assert "Traceback (most recent call last)" in kept
    assert type(exc).__name__ in kept


def test_known_run_failures_keep_their_own_words(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, engine_answers: None
) -> None:
    from kchaos.harness.cluster_error import ClusterError

    monkeypatch.setattr(
        kchaos.runner.run, "execute", failing_execute(ClusterError("kafka-1 exited with code 1"))
    )
    result = invoke(["run", "--runs-dir", str(tmp_path), "--run-id", "r"])
    assert_harness_failure(result, "kchaos: kafka-1 exited with code 1\n", f"run directory: {tmp_path / 'r'}")
    assert "the harness failed" not in result.stderr


def test_an_interrupted_run_keeps_its_message(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, engine_answers: None
) -> None:
    monkeypatch.setattr(kchaos.runner.run, "execute", failing_execute(KeyboardInterrupt()))
    result = invoke(["run", "--runs-dir", str(tmp_path), "--run-id", "r"])
    assert_harness_failure(
        result,
        f"kchaos: interrupted; cleaned up. What was recorded is in {tmp_path / 'r'}",
        f"`kchaos check {tmp_path / 'r'}` judges it as the partial run it is",
    )


@pytest.mark.parametrize(("exc", "named"), ESCAPING, ids=ESCAPING_IDS)
def test_check_failing_unexpectedly_exits_2_with_the_traceback_in_the_run_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, exc: Exception, named: str
) -> None:
    def check_and_report(*args: Any, **kwargs: Any) -> RunOutcome:
        raise exc

    monkeypatch.setattr(kchaos.runner.outcome, "check_and_report", check_and_report)
    run_dir = run_dir_with_history(tmp_path)
    result = invoke(["check", str(run_dir)])
    log = run_dir / "logs" / "harness.log"
    assert_harness_failure(
        result, f"kchaos: the harness failed: {named}", f"harness log (with the traceback): {log}"
    )
    assert "Traceback (most recent call last)" in log.read_text(encoding="utf-8")


def test_an_interrupted_check_exits_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def check_and_report(*args: Any, **kwargs: Any) -> RunOutcome:
        raise KeyboardInterrupt

    monkeypatch.setattr(kchaos.runner.outcome, "check_and_report", check_and_report)
    run_dir = run_dir_with_history(tmp_path)
    result = invoke(["check", str(run_dir)])
    assert_harness_failure(result, f"kchaos: interrupted (run directory: {run_dir})")


def test_without_a_run_directory_the_traceback_is_shown_only_on_request(
    monkeypatch: pytest.MonkeyPatch, engine_answers: None
) -> None:
    def sweep(**kwargs: Any) -> list[str]:
        raise RuntimeError("the engine hung up")

    monkeypatch.setattr(kchaos.harness.labels, "sweep", sweep)
    result = invoke(["clean"])
    assert_harness_failure(
        result,
        "kchaos: the harness failed: RuntimeError: the engine hung up",
        "for the traceback, run again as kchaos --debug ...",
    )
    debug = invoke(["--debug", "clean"])
    assert debug.exit_code == 2
    assert "Traceback (most recent call last)" in debug.stderr
    assert "kchaos: the harness failed: RuntimeError: the engine hung up" in debug.stderr


# --- what is not a harness failure keeps its exit status -------------------------------------------------


def test_a_violation_still_exits_1(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, engine_answers: None
) -> None:
    anomaly = {"count": 2, "verdict": "violation", "rule_id": "R1", "rule": "acks=all loses nothing"}
    results = {
        "verdict": "violation",
        "summary": {"sends_acknowledged": 10},
        "anomalies": {"lost-write": anomaly},
    }

    def execute(config: Any, **kwargs: Any) -> RunOutcome:
        return RunOutcome(config.run_dir, results, config.run_dir / "report.html")

    monkeypatch.setattr(kchaos.runner.run, "execute", execute)
    result = invoke(["run", "--runs-dir", str(tmp_path), "--run-id", "r"])
    assert result.exit_code == 1, result.output
    assert "verdict: violation" in result.output


def test_usage_errors_keep_clicks_exit_status_and_message() -> None:
    result = invoke(["run", "--no-such-flag"])
    assert result.exit_code == 2
    assert "No such option '--no-such-flag'" in result.stderr
    assert "Traceback" not in result.output
    assert invoke(["--help"]).exit_code == 0


def test_an_unknown_command_is_a_usage_error() -> None:
    result = invoke(["chekc"])
    assert result.exit_code == 2 and "No such command" in result.stderr
