"""Bad input is refused with exit status 2 and a first line that says what is wrong and where, and what is
not bad input (a reader that closes the pipe, `--help`) is not treated as a failure.

Nothing here reaches a Docker engine, a cluster or Spark: where a command would, that step is replaced."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import docker
import docker.errors
import pytest
import yaml
from click.testing import CliRunner, Result

import kchaos.runner.matrix_command
import kchaos.runner.matrix_run
from kchaos.harness.engine import EngineError, require_engine
from kchaos.model.fault_options import Number, SpecError
from kchaos.model.fault_spec import parse_spec
from kchaos.model.fault_table import FAULTS, option_values
from kchaos.model.faults.network import ONE_WAY_PORTS
from kchaos.model.faults.process import DIRENTS, TEARS
from kchaos.model.faults.reassign import REASSIGNED_REPLICAS
from kchaos.model.matrix import KEYS, Matrix, load_matrix, shipped_matrices
from kchaos.runner.cli import main

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "kchaos" / "matrices" / "example.yaml"
KCHAOS = ROOT / ".venv" / "bin" / "kchaos"
#: What a benchmark run rewrites.
BENCH_OUTPUTS = (ROOT / "bench" / "RESULTS.md", ROOT / "bench" / "results.json")


def invoke(args: list[str]) -> Result:
    return CliRunner().invoke(main, args, prog_name="kchaos")


def first_line(text: str) -> str:
    return text.splitlines()[0] if text else ""


def test_a_key_set_twice_in_a_matrix_file_is_refused_naming_the_key_and_both_lines(tmp_path: Path) -> None:
    path = tmp_path / "dup.yaml"
    path.write_text("base:\n  duration: 30\naxes:\n  acks: [all]\n  acks: ['1']\n", encoding="utf-8")

    result = invoke(["matrix", str(path)])

    assert result.exit_code == 2, result.output
    assert first_line(result.stderr) == (
        f"kchaos: {path}: line 5: key 'acks' is set twice (first on line 4); YAML would silently keep the "
        "last, so remove one of them"
    )


def test_a_key_set_twice_at_the_top_of_a_matrix_file_is_refused_too(tmp_path: Path) -> None:
    path = tmp_path / "dup.yaml"
    path.write_text("axes: {acks: [all]}\nrepetitions: 1\nrepetitions: 2\n", encoding="utf-8")

    result = invoke(["matrix", str(path)])

    assert result.exit_code == 2, result.output
    assert first_line(result.stderr).startswith(f"kchaos: {path}: line 3: key 'repetitions' is set twice")


@pytest.mark.parametrize(
    ("axis", "example"),
    [
        ("acks: []", "acks: [all]"),
        ("acks: '1'", "acks: ['1']"),
        ("nemesis:", "nemesis: ['kill:target=leader']"),
    ],
)
def test_an_axis_that_is_no_list_of_values_is_refused_with_an_example_that_is_one(
    tmp_path: Path, axis: str, example: str
) -> None:
    path = tmp_path / "empty.yaml"
    path.write_text(f"axes:\n  {axis}\n", encoding="utf-8")

    result = invoke(["matrix", str(path)])

    assert result.exit_code == 2, result.output
    name = axis.partition(":")[0]
    assert first_line(result.stderr) == (
        f"kchaos: {path}: axes.{name} must be a non-empty list of values, e.g. `{example}`"
    )
    values = yaml.safe_load(example)[name]
    assert isinstance(values, list) and values and values != [[]], "the example must itself be right"


def test_matrix_help_describes_every_key_the_loader_accepts(tmp_path: Path) -> None:
    result = invoke(["matrix", "--help"])

    assert result.exit_code == 0, result.output
    assert first_line(result.stdout) == "Usage: kchaos matrix [OPTIONS] [MATRIX_FILE]"
    described = re.findall(r"^    (\w+): ", result.stdout, flags=re.MULTILINE)
    assert described == list(KEYS)
    path = tmp_path / "every-key.yaml"
    path.write_text(
        "name: every-key\ndescription: all keys\nbase: {duration: 60}\naxes: {acks: [all, '1']}\n"
        "exclude: [{acks: '1'}]\nrepetitions: 2\n",
        encoding="utf-8",
    )
    assert sorted(yaml.safe_load(path.read_text(encoding="utf-8"))) == sorted(KEYS)
    assert len(load_matrix(path).points(tmp_path)) == 2


@pytest.mark.parametrize("kind", ["fifo", "directory"])
def test_a_matrix_path_that_is_no_regular_file_is_refused_not_waited_on(tmp_path: Path, kind: str) -> None:
    """`kchaos matrix FIFO` waited forever for a writer."""
    path = tmp_path / "matrix.yaml"
    if kind == "fifo":
        os.mkfifo(path)
    else:
        path.mkdir()

    result = invoke(["matrix", str(path), "--runs-dir", str(tmp_path / "runs")])

    assert result.exit_code == 2, result.output
    what = "a directory" if kind == "directory" else "not a regular file (a FIFO, socket or device)"
    assert first_line(result.stderr) == (
        f"kchaos: {path}: {what}; give the path of a matrix YAML file, or a shipped one's name"
    )
    assert not (tmp_path / "runs").exists()


def test_a_yaml_alias_bomb_in_a_matrix_file_is_refused_before_it_expands(tmp_path: Path) -> None:
    lines = ["a: &a [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"{chr(98 + n)}: &{chr(98 + n)} [{', '.join(['*' + chr(97 + n)] * 10)}]" for n in range(8)]
    path = tmp_path / "bomb.yaml"
    path.write_text("\n".join(lines) + "\naxes: {acks: [all]}\n", encoding="utf-8")

    result = invoke(["matrix", str(path)])

    assert result.exit_code == 2, result.output
    assert first_line(result.stderr) == (
        f"kchaos: {path}: line 2: YAML anchors and aliases (&name, *name) are not supported in a matrix "
        "file; write the values out"
    )


def test_matrix_without_a_file_lists_the_shipped_ones_a_line_each() -> None:
    result = invoke(["matrix"])

    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].startswith("shipped matrix files")
    shipped = shipped_matrices()
    assert [line.split()[0] for line in lines[1:]] == list(shipped)
    for line, path in zip(lines[1:], shipped.values(), strict=True):
        description = load_matrix(path).description
        assert description, f"{path.name} has no description"
        assert line.endswith(f"  {description}")


@pytest.mark.parametrize(
    ("command", "target"),
    [("matrix", EXAMPLE), ("check", ROOT / "tests" / "run_dirs" / "kip101-0.10.2.2"), ("report", None)],
)
def test_a_bad_spark_master_is_refused_naming_the_flag_before_spark_starts(
    tmp_path: Path, command: str, target: Path | None
) -> None:
    """`matrix --spark-master 'local[0]'` was refused by Spark after every run; check and report share
    the check (`report` after vetting its run directories, so it is given a real one)."""
    if target is None:
        target = tmp_path / "run"
        shutil.copytree(ROOT / "tests" / "run_dirs" / "kip101-0.10.2.2", target)
    runs = ["--runs-dir", str(tmp_path / "runs")] if command == "matrix" else []

    result = invoke([command, str(target), "--spark-master", "local[0]", *runs])

    assert result.exit_code == 2, result.output
    assert first_line(result.stderr) == (
        "kchaos: --spark-master 'local[0]' is not a Spark master URL; use local, local[N], local[*], "
        "local[N,F] (N from 1), spark://HOST:PORT, yarn, k8s://... or mesos://..., e.g. local[2]"
    )
    assert not (tmp_path / "runs").exists()


def stopped_at_the_first_run(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """`kchaos matrix` as far as its first run, which is replaced by an interruption; no engine is asked."""
    started: list[str] = []

    def first_run(spec: Matrix, runs_dir: Path, progress: Any) -> None:
        started.append(spec.name)
        raise KeyboardInterrupt

    monkeypatch.setattr(kchaos.runner.matrix_command, "require_engine", lambda: started.append("engine"))
    monkeypatch.setattr(kchaos.runner.matrix_run, "run_matrix", first_run)
    return started


def big_matrix(tmp_path: Path, seeds: int = 200, rates: int = 200) -> Path:
    """`seeds` x `rates` runs of 60 s: 40,000 by default."""
    path = tmp_path / "big.yaml"
    path.write_text(f"axes:\n  seed: {list(range(seeds))}\n  rate: {list(range(1, 1 + rates))}\n")
    return path


def test_a_matrix_says_how_many_runs_and_how_long_before_the_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    started = stopped_at_the_first_run(monkeypatch)

    result = invoke(["matrix", str(EXAMPLE), "--runs-dir", str(tmp_path)])

    assert result.exit_code == 2, result.output
    assert result.stdout.splitlines()[:2] == [
        f"* matrix example: 4 run(s): 4 configuration(s) into {tmp_path / 'example'}",
        "* 4 run(s) to go, estimated 6 min (each run's --duration plus about 60 s per run to start its "
        "cluster, read to the end, check and clean up)",
    ]
    assert started == ["engine", "example"], "the estimate comes before the first run"


def test_a_matrix_of_40000_runs_is_refused_without_yes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    started = stopped_at_the_first_run(monkeypatch)

    result = invoke(["matrix", str(big_matrix(tmp_path)), "--runs-dir", str(tmp_path)])

    assert result.exit_code == 2, result.output
    assert first_line(result.stderr) == (
        "kchaos: matrix big: 40000 runs to go, estimated 56 days; more than 100 runs start only with --yes "
        "(or narrow the axes, leave combinations out with `exclude`, lower `repetitions`)"
    )
    assert "40000 run(s) to go, estimated 56 days" in result.stdout
    assert started == [], "nothing was started, not even the engine asked"


def test_yes_starts_a_matrix_above_the_bound(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    started = stopped_at_the_first_run(monkeypatch)
    path = big_matrix(tmp_path, seeds=101, rates=1)

    refused = invoke(["matrix", str(path), "--runs-dir", str(tmp_path)])
    result = invoke(["matrix", str(path), "--runs-dir", str(tmp_path), "--yes"])

    assert refused.exit_code == 2 and "101 runs to go, estimated 3 h 22 min;" in refused.stderr

    assert started == ["engine", "big"]
    assert first_line(result.stderr).startswith("kchaos: interrupted"), result.output


def test_kchaos_faults_lists_what_every_option_of_every_fault_accepts() -> None:
    result = invoke(["faults"])

    assert result.exit_code == 0, result.output
    assert re.split(r"\s{2,}", first_line(result.stdout)) == [
        "fault", "kind", "options (defaults)", "the guarantee oracle treats it as",
    ]  # fmt: skip
    listed = dict(option_values())
    section = result.stdout.split("\noption values:\n", 1)[1].split("\n\nreleases:\n", 1)[0].splitlines()
    assert section == [f"  {key}: {accepted}" for key, accepted in listed.items()]
    assert listed["ms"] == (
        "a whole number from 1 to 60000 (milliseconds of added delay; beyond a minute, cut the link with "
        "isolate instead)"
    )
    for name, fault in FAULTS.items():
        for key in fault.defaults:
            member = key == "target" and fault.needs_group_members
            assert any(option == key or (member and option.startswith("target of ")) for option in listed), (
                f"{name}:{key} is not described"
            )


@pytest.mark.parametrize(
    ("fault", "key", "choices", "refused"),
    [
        ("unclean-election", "scope", ("topic", "cluster"), "broker"),
        ("one-way", "port", ONE_WAY_PORTS, "9092"),
        ("unclean-election", "trigger", ("true", "false"), "yes"),
        ("reassign", "replica", REASSIGNED_REPLICAS, "outgoing"),
        ("add-broker", "replica", REASSIGNED_REPLICAS, "all"),
        ("reassign", "interrupt", ("true", "false"), "kill"),
    ],
)
def test_the_choices_listed_are_the_ones_a_spec_accepts(
    fault: str, key: str, choices: tuple[str, ...], refused: str
) -> None:
    assert dict(option_values())[key].split(" (")[0] == " or ".join(choices)  # then what they mean, if said
    for choice in choices:
        assert parse_spec(f"{fault}:{key}={choice}").option(key) == choice
    with pytest.raises(SpecError):
        parse_spec(f"{fault}:{key}={refused}")


@pytest.mark.parametrize(
    ("key", "choices", "refused"), [("tear", TEARS, "half"), ("dirents", DIRENTS, "gone")]
)
def test_power_loss_takes_the_tears_and_directory_entries_listed_and_names_what_it_refuses(
    key: str, choices: tuple[str, ...], refused: str
) -> None:
    assert dict(option_values())[key].startswith(" or ".join(choices) + " (")
    for choice in choices:
        assert parse_spec(f"power-loss:{key}={choice}").option(key) == choice
    with pytest.raises(
        SpecError, match=f"power-loss: {key} must be one of .*got '{refused}'; e.g. power-loss"
    ):
        parse_spec(f"power-loss:{key}={refused}")


@pytest.mark.parametrize(
    ("fault", "option"),
    [(f, o) for f, d in FAULTS.items() for o in d.options if isinstance(o, Number)],
    ids=lambda value: value if isinstance(value, str) else value.key,
)
def test_the_bounds_listed_are_the_ones_a_spec_accepts(fault: str, option: Number) -> None:
    key, low, high = option.key, option.low, option.high
    # What the option's bounds need beside it: a delay at least its jitter, a slow disk some delay.
    others = {
        ("latency", "ms"): {"jitter": "0"},
        ("latency", "jitter"): {"ms": "60000"},
        ("slow-disk", "ms"): {"tail": "500", "share": "1"},
    }.get((fault, key), {})
    spec = ":".join([fault, *(f"{k}={v}" for k, v in others.items())])
    assert parse_spec(f"{spec}:{key}={low}").option(key) == str(low)
    with pytest.raises(SpecError, match=f"{key} must be"):
        parse_spec(f"{spec}:{key}={low - 1}" if low > 0 else f"{spec}:{key}=-1")
    if high is not None:
        assert parse_spec(f"{spec}:{key}={high}").option(key) == str(high)
        with pytest.raises(SpecError, match=f"{key} must be"):
            parse_spec(f"{spec}:{key}={high + 1}")


@pytest.mark.parametrize(
    ("spec", "accepted"),
    [
        ("clock:offset=-86400000", True),
        ("clock:offset=86400001", False),
        ("clock:offset=0", False),
        ("clock:offset=+5000", True),
        ("clock:offset=1e3", False),
        ("clock:mode=drift:offset=-1000", True),
        ("clock:mode=drift:offset=1001", False),
        ("clock:mode=strobe:offset=30000:period=100", True),
        ("clock:mode=warp", False),
    ],
)
def test_a_clock_offset_is_a_signed_whole_number_within_its_modes_bound_as_listed(
    spec: str, accepted: bool
) -> None:
    listed = dict(option_values())
    assert "drift within ±1,000" in listed["offset"] and "jump within ±86,400,000" in listed["offset"]
    assert listed["mode"].startswith("jump or strobe or drift")
    if accepted:
        assert parse_spec(spec).name == "clock"
        return
    with pytest.raises(
        SpecError, match=r"clock: (offset|mode) must be .*(e\.g\. clock:mode=\w+:offset=-|got 'warp')"
    ):
        parse_spec(spec)


def test_latency_jitter_is_at_most_ms_as_listed() -> None:
    assert dict(option_values())["jitter"].endswith("; at most ms")
    with pytest.raises(SpecError, match=r"jitter \(11\) exceeds ms"):
        parse_spec("latency:ms=10:jitter=11")


@pytest.mark.parametrize("reader", ["head -1", "true"])
def test_a_reader_that_closes_the_pipe_is_no_failure(reader: str) -> None:
    """`true` closes the pipe before kchaos has even started writing: the broken pipe is certain."""
    shell = f"set -o pipefail; {shlex.quote(str(KCHAOS))} faults | {reader}"

    done = subprocess.run(["bash", "-c", shell], capture_output=True, text=True, timeout=60, check=False)

    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    if reader == "head -1":
        assert done.stdout.startswith("fault ") and len(done.stdout.splitlines()) == 1


def test_a_positional_argument_to_the_chaos_marker_is_a_usage_error_naming_the_test(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(
        test_marked="""
        import pytest

        @pytest.mark.chaos("all")
        def test_acks():
            pass

        def test_other():
            pass
        """
    )

    result = pytester.runpytest()

    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert result.errlines[0] == (
        "ERROR: test_marked.py::test_acks: @pytest.mark.chaos(**settings) takes settings by name, e.g. "
        "@pytest.mark.chaos(acks=\"all\"); the positional 'all' would be ignored"
    )
    result.assert_outcomes()  # nothing ran


def test_the_chaos_marker_with_settings_by_name_is_accepted(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.chaos(acks="1")
        def test_acks(request):
            assert request.node.get_closest_marker("chaos").kwargs == {"acks": "1"}
        """
    )

    pytester.runpytest().assert_outcomes(passed=1)


@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_bench_help_prints_usage_and_runs_nothing(flag: str) -> None:
    written = {path: (path.stat().st_mtime_ns, path.read_bytes()) for path in BENCH_OUTPUTS}

    done = subprocess.run(
        [sys.executable, "-m", "bench", flag],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )

    assert done.returncode == 0, done.stderr
    assert first_line(done.stdout) == "usage: python -m bench [-h] [-- BENCH_RUN_ARGS...]"
    assert "* python -m" not in done.stdout, "no benchmark was started"
    assert {path: (path.stat().st_mtime_ns, path.read_bytes()) for path in BENCH_OUTPUTS} == written


def test_bench_refuses_an_argument_it_does_not_take_before_running_anything() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "bench", "--replicas"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )

    assert done.returncode == 2
    assert first_line(done.stderr) == "python -m bench: unknown argument(s) --replicas; runs nothing"
    assert done.stdout == ""


NO_ENGINE_HOST = "unix:///tmp/kchaos-test-no-engine.sock"
START_THE_ENGINE = (
    "start the Docker engine (e.g. `sudo systemctl start docker`, or run `dockerd`) or set DOCKER_HOST to "
    "one that runs; in a kchaos clone, ./setup.sh installs and starts it"
)


def test_without_an_engine_the_message_says_what_a_wheel_user_does(monkeypatch: pytest.MonkeyPatch) -> None:
    """The engine check itself, with the client made to fail as a missing socket does: nothing is asked."""

    def no_socket(**kwargs: Any) -> None:
        try:
            raise FileNotFoundError(2, "No such file or directory")
        except FileNotFoundError as exc:
            raise docker.errors.DockerException("Error while fetching server API version") from exc

    monkeypatch.setenv("DOCKER_HOST", NO_ENGINE_HOST)
    monkeypatch.setattr(docker, "from_env", no_socket)

    with pytest.raises(EngineError) as caught:
        require_engine(timeout=1)
    assert str(caught.value) == (
        f"no Docker engine answers at {NO_ENGINE_HOST} (No such file or directory); {START_THE_ENGINE}"
    )


@pytest.mark.parametrize("host", ["notaurl", "tcp://"])
def test_a_malformed_docker_host_is_named_as_such(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, host: str
) -> None:
    monkeypatch.setattr(docker, "from_env", lambda **kwargs: pytest.fail("no engine may be asked"))

    result = CliRunner().invoke(
        main, ["run", "--runs-dir", str(tmp_path / "runs")], env={"DOCKER_HOST": host}
    )

    assert result.exit_code == 2, result.output
    assert first_line(result.stderr).startswith(
        f"kchaos: DOCKER_HOST={host!r} is not a Docker engine address ("
    )
    assert first_line(result.stderr).endswith(
        "); set it to one such as unix:///var/run/docker.sock or tcp://HOST:2375, or unset it for the local "
        "engine"
    )
    assert not (tmp_path / "runs").exists()


def test_a_chaos_test_without_an_engine_fails_in_one_line_not_a_chained_traceback(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DOCKER_HOST", NO_ENGINE_HOST)
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.chaos(nemesis="none", spark_master="spark://localhost:7077")  # no local Spark to start
        def test_run(chaos_run):
            chaos_run()

        def test_cluster(kafka_cluster):
            pass
        """
    )

    result = pytester.runpytest("-p", "no:cacheprovider")

    result.assert_outcomes(failed=1, errors=1)
    output = result.stdout.str()
    message = f"kchaos: no Docker engine answers at {NO_ENGINE_HOST} (No such file or directory); "
    message += START_THE_ENGINE
    # One line each for the failed test and the errored fixture (pytest's short summary in CI repeats them
    # after `FAILED ... - `, which is not a line of its own).
    assert sum(line == message for line in result.stdout.lines) == 2, output
    assert "Traceback" not in output and "During handling" not in output and "urllib3" not in output, output
    assert len(result.stdout.lines) < 40, output
