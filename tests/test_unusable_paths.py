"""A path the harness cannot use is refused with exit status 2 and a first line naming it and the fix, before
any container or Spark starts: a --runs-dir that is a file or cannot be created or written, a matrix file
that is not text, a JAVA_HOME with no Java in it. Each used to end in `kchaos: the harness failed:` and an
exception's name (NotADirectoryError, UnicodeDecodeError), or in Spark's JAVA_GATEWAY_EXITED.

Nothing here starts a container or a JVM: the steps that would are replaced by ones that fail the test."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from pyspark import SparkContext

import kchaos.checkers.runtime.session
import kchaos.runner.matrix_command
import kchaos.runner.matrix_run
import kchaos.runner.outcome
import kchaos.runner.run
from kchaos.checkers.runtime.java_home import JavaHomeError, java_home_problem
from kchaos.runner.cli import main
from tests.test_cli_errors import run_dir_with_history

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "kchaos" / "matrices" / "example.yaml"
NO_ENGINE = {"DOCKER_HOST": "unix:///tmp/kchaos-test-no-engine.sock"}
RUNS_FIX = "name a folder for the run directories (created if missing), e.g. --runs-dir runs"
JAVA_FIX = (
    "and Spark starts its JVM from $JAVA_HOME/bin/java; unset JAVA_HOME to use the java on PATH, or point it "
    "at a JDK or JRE 17 or newer"
)


@pytest.fixture(autouse=True)
def nothing_starts(monkeypatch: pytest.MonkeyPatch) -> None:
    """A run, a matrix's runs, a check and the engine check all fail the test if reached."""

    def reached(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("reached a step that starts a container or Spark: it was not refused up front")

    monkeypatch.setattr(kchaos.runner.run, "execute", reached)
    monkeypatch.setattr(kchaos.runner.matrix_run, "run_matrix", reached)
    monkeypatch.setattr(kchaos.runner.matrix_command, "require_engine", reached)
    monkeypatch.setattr(kchaos.runner.outcome, "check_and_report", reached)
    monkeypatch.delenv("PYSPARK_GATEWAY_PORT", raising=False)


def invoke(args: list[str]) -> Result:
    return CliRunner().invoke(main, args, env=NO_ENGINE)


def refused(result: Result) -> str:
    """The first line of a refusal, after checking it exited 2, with nothing on stdout and no traceback."""
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output, result.output
    assert "the harness failed" not in result.stderr, result.stderr
    return result.stderr.splitlines()[0]


# --- 1. --runs-dir: a folder that exists or can be created, and can be written ----------------------------


def test_run_refuses_a_runs_dir_that_is_a_file(tmp_path: Path) -> None:
    result = invoke(["run", "--runs-dir", "/etc/passwd"])

    assert refused(result) == f"kchaos: --runs-dir /etc/passwd is a file, not a folder; {RUNS_FIX}"
    assert result.stdout == ""


def test_run_refuses_a_runs_dir_under_a_file(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("not a folder", encoding="utf-8")
    runs = tmp_path / "file" / "runs"

    result = invoke(["run", "--runs-dir", str(runs)])

    file = tmp_path / "file"
    assert refused(result) == (
        f"kchaos: --runs-dir {runs} cannot be created: {file} is a file, not a folder; {RUNS_FIX}"
    )


def test_run_refuses_a_runs_dir_it_cannot_write(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Root writes through permission bits, so the refusal of os.access is what stands in for them."""
    runs = tmp_path / "runs"
    runs.mkdir()
    access = os.access

    def no_writing_in_runs(path: Any, mode: int, **kwargs: Any) -> bool:
        return not (Path(path) == runs and mode & os.W_OK) and access(path, mode, **kwargs)

    monkeypatch.setattr(os, "access", no_writing_in_runs)

    result = invoke(["run", "--runs-dir", str(runs)])

    assert refused(result) == (
        f"kchaos: --runs-dir {runs} is not writable; make it writable (chmod u+w {runs}), or {RUNS_FIX}"
    )
    assert list(runs.iterdir()) == []


def test_matrix_refuses_a_runs_dir_under_a_file(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("not a folder", encoding="utf-8")
    runs = tmp_path / "file" / "runs"

    result = invoke(["matrix", str(EXAMPLE), "--runs-dir", str(runs)])

    file = tmp_path / "file"
    assert refused(result) == (
        f"kchaos: --runs-dir {runs} cannot be created: {file} is a file, not a folder; {RUNS_FIX}"
    )
    assert result.stdout == ""


# --- 2. a matrix file that is not text ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "why"),
    [
        (b"\x00\xff\xfe garbage", "byte 1 is not UTF-8"),
        (b"axes:\n  acks: [all]\x00\n", "character 19 is a control character"),
    ],
)
def test_a_binary_matrix_file_is_refused_naming_it(tmp_path: Path, content: bytes, why: str) -> None:
    path = tmp_path / "matrix.yaml"
    path.write_bytes(content)

    result = invoke(["matrix", str(path), "--runs-dir", str(tmp_path / "runs")])

    assert refused(result) == (
        f"kchaos: {path}: not a text YAML file ({why}); give the path of a matrix file, or the name of one "
        "kchaos ships (`kchaos matrix --help` lists a matrix file's keys)"
    )
    assert not (tmp_path / "runs").exists()


# --- 3. a JAVA_HOME with no Java in it ---------------------------------------------------------------------


def java_home_cases(tmp_path: Path) -> dict[str, tuple[Path, str]]:
    tmp_path.mkdir()
    (tmp_path / "file").write_text("not a JDK", encoding="utf-8")
    (tmp_path / "jdk" / "bin").mkdir(parents=True)
    (tmp_path / "jdk" / "bin" / "java").write_text("#!/bin/sh\n", encoding="utf-8")  # not executable
    return {
        "empty folder": (tmp_path, f"there is no file {tmp_path / 'bin' / 'java'}"),
        "file": (tmp_path / "file", f"{tmp_path / 'file'} is a file, not a folder"),
        "missing": (tmp_path / "gone", f"{tmp_path / 'gone'} does not exist"),
        "not executable": (tmp_path / "jdk", f"{tmp_path / 'jdk' / 'bin' / 'java'} is not executable"),
    }


@pytest.mark.parametrize("case", ["empty folder", "file", "missing", "not executable"])
def test_check_refuses_a_java_home_with_no_java_before_spark_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    home, why = java_home_cases(tmp_path / "java")[case]
    monkeypatch.setenv("JAVA_HOME", str(home))
    run_dir = run_dir_with_history(tmp_path)

    result = CliRunner().invoke(main, ["check", str(run_dir)])

    assert refused(result) == f"kchaos: JAVA_HOME={home} names no Java ({why}), {JAVA_FIX}"


def test_report_refuses_a_java_home_with_no_java(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run_dir = run_dir_with_history(tmp_path)
    (run_dir / "results.json").write_text(
        '{"run_id": "cli-test", "verdict": "ok", "anomalies": {}}', encoding="utf-8"
    )
    monkeypatch.setenv("JAVA_HOME", str(tmp_path))

    result = CliRunner().invoke(main, ["report", str(run_dir)])

    assert refused(result).startswith(f"kchaos: JAVA_HOME={tmp_path} names no Java (there is no file ")


def test_run_refuses_a_java_home_with_no_java_before_the_engine(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("JAVA_HOME", str(tmp_path))

    result = invoke(["run", "--runs-dir", str(tmp_path / "runs")])

    assert refused(result).startswith(f"kchaos: JAVA_HOME={tmp_path} names no Java")
    assert not (tmp_path / "runs").exists()


def test_a_spark_session_refuses_before_starting_a_jvm(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every Spark path goes through `spark_session`: it refuses too, without building a session."""

    class NoBuilder:
        @property
        def builder(self) -> Any:
            raise AssertionError("a JVM was about to start")

    monkeypatch.setenv("JAVA_HOME", str(tmp_path))
    monkeypatch.setattr(SparkContext, "_active_spark_context", None)
    monkeypatch.setattr(kchaos.checkers.runtime.session, "SparkSession", NoBuilder())

    with pytest.raises(JavaHomeError, match=r"^JAVA_HOME=.* names no Java \(there is no file "):
        kchaos.checkers.runtime.session.spark_session("local[1]")


def test_a_java_home_that_names_a_java_or_is_unset_passes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    java = tmp_path / "bin" / "java"
    java.parent.mkdir()
    java.write_text("#!/bin/sh\n", encoding="utf-8")
    java.chmod(0o755)
    monkeypatch.setenv("JAVA_HOME", str(tmp_path))
    assert java_home_problem() is None
    monkeypatch.setenv("JAVA_HOME", "")
    assert java_home_problem() is None
    monkeypatch.delenv("JAVA_HOME")
    assert java_home_problem() is None
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "gone"))
    monkeypatch.setenv("PYSPARK_GATEWAY_PORT", "1234")  # under spark-submit the JVM is already running
    assert java_home_problem() is None
