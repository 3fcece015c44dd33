"""`kchaos run` refuses bad input with exit status 2 and a message naming the field and the fix, before any
container starts and before the run directory exists.

Nothing here can reach a Docker engine: `no_containers` makes the engine absent and the run itself fail
the test, so a refusal that came too late shows as a failure, never as a cluster starting.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner, Result

import kchaos.runner.run
from kchaos.model.config import ConfigError, load_config
from kchaos.runner.cli import main

NO_ENGINE = {"DOCKER_HOST": "unix:///tmp/kchaos-test-no-engine.sock"}


@pytest.fixture(autouse=True)
def no_containers(monkeypatch: pytest.MonkeyPatch) -> None:
    def execute(config: Any, **kwargs: Any) -> Any:
        raise AssertionError(f"run {config.run_id} reached execute: it was not refused up front")

    monkeypatch.setattr(kchaos.runner.run, "execute", execute)


def refused(tmp_path: Path, *args: str) -> list[str]:
    """The lines `kchaos run ARGS` fails with, after checking it exited 2 and created no run directory."""
    runs = tmp_path / "runs"
    result: Result = CliRunner().invoke(main, ["run", "--runs-dir", str(runs), *args], env=NO_ENGINE)
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    assert not runs.exists()
    return result.stderr.splitlines()


def config_error(**values: object) -> list[str]:
    with pytest.raises(ConfigError) as error:
        load_config(**values)
    return str(error.value).splitlines()


# --- 1. every time is finite and bounded: the fault planner walks the whole timeline ---------------------


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (
            ["--duration", "inf"],
            "duration (--duration): Input should be a finite number, got inf; give a value in 0<x<=86400",
        ),
        (
            ["--duration", "nan"],
            "duration (--duration): Input should be a finite number, got nan; give a value in 0<x<=86400",
        ),
        (
            ["--duration", "90000"],
            "duration (--duration): Input should be less than or equal to 86400, got 90000.0; give a value "
            "in 0<x<=86400",
        ),
        (
            ["--recovery-timeout", "1e300"],
            "recovery_timeout (--recovery-timeout): Input should be less than or equal to 3600, got 1e+300; "
            "give a value in 0<x<=3600",
        ),
        (
            ["--final-read-timeout", "inf"],
            "final_read_timeout (--final-read-timeout): Input should be a finite number, got inf; give a "
            "value in 0<x<=3600",
        ),
        (
            ["--fault-duration", "0.000001"],
            "fault_duration (--fault-duration): Input should be greater than or equal to 1, got 1e-06; give "
            "a value in 1<=x<=3600",
        ),
        (
            ["--fault-interval-max", "inf"],
            "fault_interval_max (--fault-interval-max): Input should be a finite number, got inf; give a "
            "value in 0<=x<=3600",
        ),
        (
            ["--message-timeout-ms", "99999999999"],
            "message_timeout_ms (--message-timeout-ms): Input should be less than or equal to 3600000, got "
            "99999999999; give a value in 1000<=x<=3600000",
        ),
        (
            ["--rate", "inf"],
            "rate (--rate): Input should be a finite number, got inf; give a value in x>=0",
        ),
    ],
)
def test_an_unbounded_or_infinite_time_is_refused_with_its_range(
    tmp_path: Path, args: list[str], line: str
) -> None:
    assert refused(tmp_path, *args)[:2] == ["kchaos: invalid configuration:", f"  {line}"]


def test_an_infinite_duration_in_a_matrix_file_is_refused_too() -> None:
    values = yaml.safe_load("duration: .inf\nrecovery_timeout: 1.0e+300\n")
    assert config_error(**values) == [
        "invalid configuration:",
        "  duration (--duration): Input should be a finite number, got inf; give a value in 0<x<=86400",
        "  recovery_timeout (--recovery-timeout): Input should be less than or equal to 3600, got 1e+300; "
        "give a value in 0<x<=3600",
    ]


def test_the_longest_times_are_accepted_and_plan() -> None:
    config = load_config(duration=86400, fault_duration=3600, fault_interval=3600, recovery_timeout=3600)
    assert config.duration == 86400


def test_run_help_shows_the_upper_bounds() -> None:
    result = CliRunner().invoke(main, ["run", "--help"], terminal_width=1000, max_content_width=1000)
    shown = " ".join(result.output.split())
    assert "[default: 60.0; 0<x<=86400]" in shown
    assert "[default: 180.0; 0<x<=3600]" in shown
    assert "[default: 15.0; 1<=x<=3600]" in shown


# --- 2. a --nemesis that says no faults, or two things at once, is refused rather than guessed -----------


@pytest.mark.parametrize(
    ("nemesis", "line"),
    [
        ("", "nemesis (--nemesis): '' names no fault; write none for no faults"),
        (",", "nemesis (--nemesis): ',' names no fault; write none for no faults"),
        (
            "kill,,pause",
            "nemesis (--nemesis): 'kill,,pause' has an empty item between commas; remove the extra comma "
            "(write none for no faults)",
        ),
        (
            "none,kill",
            "nemesis (--nemesis): none means no faults, yet 'none,kill' lists faults with it; write none "
            "alone, or only the faults (kill)",
        ),
        (
            "kill:target=leader:target=random",
            "nemesis (--nemesis): kill: option target is given twice (target=leader, then target=random); "
            "give it once",
        ),
    ],
)
def test_a_nemesis_that_is_empty_mixed_with_none_or_repeats_an_option_is_refused(
    tmp_path: Path, nemesis: str, line: str
) -> None:
    assert refused(tmp_path, "--nemesis", nemesis)[:2] == ["kchaos: invalid configuration:", f"  {line}"]


def test_a_matrix_files_nemesis_list_is_held_to_the_same_rules() -> None:
    assert config_error(nemesis=["none", "kill"])[1].startswith("  nemesis (--nemesis): none means no faults")
    empty = "  nemesis (--nemesis): '' names no fault; write none for no faults"
    assert config_error(nemesis=[""])[1] == empty


@pytest.mark.parametrize("nemesis", ["none", " none ", ["none"], (), []])
def test_none_alone_is_a_run_without_faults(nemesis: object) -> None:
    assert load_config(nemesis=nemesis, duration=1).nemesis == ()


def test_each_fault_listed_is_kept() -> None:
    config = load_config(nemesis=" kill , pause:target=controller", duration=100)
    assert config.nemesis == ("kill", "pause:target=controller")


# --- 4. an empty run id is refused, not replaced by a generated one ----------------------------------------


def test_an_empty_run_id_is_refused(tmp_path: Path) -> None:
    assert refused(tmp_path, "--run-id", "")[:2] == [
        "kchaos: invalid configuration:",
        "  run_id (--run-id): an empty run id names no run directory; give one, e.g. nightly-acks-all, or "
        "leave --run-id out for a timestamped one",
    ]
    assert config_error(run_id="")[1].startswith("  run_id (--run-id): an empty run id names no run")


# --- 3. a named scenario refuses the flags it does not use, or would run differently with ----------------

KIP_101 = "kip-101-hw-truncation"


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (
            ["--nemesis", "kill"],
            f"--scenario {KIP_101}: it drives its own faults, so --nemesis would change nothing: leave "
            "--nemesis out",
        ),
        (
            ["--schedule", "random", "--fault-duration", "5"],
            f"--scenario {KIP_101}: it drives its own faults, so --schedule, --fault-duration would change "
            "nothing: leave --schedule, --fault-duration out",
        ),
        (
            ["--replication-factor", "2"],
            f"--scenario {KIP_101}: its steps are built on --replication-factor 3: leave "
            "--replication-factor out",
        ),
        (
            ["--fault-interval-max", "20", "--replication-factor", "2"],
            f"--scenario {KIP_101}: it drives its own faults, so --fault-interval-max would change nothing; "
            "its steps are built on --replication-factor 3: leave --fault-interval-max, --replication-factor "
            "out",
        ),
    ],
)
def test_a_scenario_refuses_flags_it_does_not_use_naming_those_it_takes(
    tmp_path: Path, args: list[str], line: str
) -> None:
    lines = refused(tmp_path, "--scenario", KIP_101, *args)
    assert lines[:2] == ["kchaos: invalid configuration:", f"  {line}"]
    assert lines[2].startswith("  the flags a scenario takes: --run-id, --runs-dir, --kafka-version, ")
    assert "--rate" in lines[2] and "--nemesis" not in lines[2] and "--replication-factor" not in lines[2]


def test_a_matrix_point_with_a_scenario_and_a_nemesis_is_refused_too() -> None:
    lines = config_error(scenario="kip-279-fast-failover", nemesis="kill")
    assert lines[1] == (
        "  --scenario kip-279-fast-failover: it drives its own faults, so --nemesis would change nothing: "
        "leave --nemesis out"
    )


def test_a_scenario_records_its_own_faults_and_takes_its_own_replication_factor_given_again() -> None:
    config = load_config(scenario=KIP_101, replication_factor=3, rate=300.0)
    assert config.nemesis == ("one-way", "kill")
    assert config.to_json_dict()["nemesis"] == ["one-way", "kill"]


# --- 5. what the cluster's shape, the release or the image rules out is refused up front --------------------


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (
            ["--nemesis", "kill:target=followers", "--replication-factor", "1", "--min-insync-replicas", "1"],
            "nemesis: kill:target=followers: target=followers are the partition's other replicas, and "
            "--replication-factor 1 has none; raise --replication-factor or use another target",
        ),
        (
            ["--nemesis", "one-way", "--replication-factor", "1", "--min-insync-replicas", "1"],
            "nemesis: one-way: to=followers are the partition's other replicas, and --replication-factor 1 "
            "has none; raise --replication-factor or use another to",
        ),
        (
            ["--nemesis", "isolate:target=minority", "--brokers", "1", "--replication-factor", "1",
             "--min-insync-replicas", "1"],
            "nemesis: isolate:target=minority: target=minority is fewer than half the nodes, and a cluster "
            "of 1 node(s) has no such group; use --brokers 3 or more, or name a node",
        ),
        (
            ["--nemesis", "ring", "--brokers", "2", "--replication-factor", "2",
             "--min-insync-replicas", "1"],
            "nemesis: ring: needs at least 3 nodes, the cluster has 2; use --brokers 3 or more, or another "
            "fault",
        ),
        (
            ["--kafka-image", "not a valid image ref!!"],
            "kafka_image (--kafka-image): 'not a valid image ref!!' is not an image reference; write "
            "[REGISTRY/]NAME[:TAG][@DIGEST] with a lowercase name, e.g. apache/kafka:4.1.1 or "
            "kchaos/kafka:4.3.1",
        ),
    ],
)  # fmt: skip
def test_what_the_cluster_or_image_rules_out_is_refused_before_anything_starts(
    tmp_path: Path, args: list[str], line: str
) -> None:
    assert refused(tmp_path, *args)[:2] == ["kchaos: invalid configuration:", f"  {line}"]


def test_a_release_kchaos_cannot_build_is_refused_naming_those_it_can(tmp_path: Path) -> None:
    [_, line] = refused(tmp_path, "--kafka-version", "9.9.9")
    assert line == (
        "  kafka_version (--kafka-version): kchaos builds no image of Kafka 9.9.9: it builds the release "
        "lines 0.10.2-0.11, 1.0-1.1, 2.0-2.8, 3.0-3.9, 4.0-4.3 (any release of them on Maven Central). For "
        "another release, pass an image of it with --kafka-image"
    )


@pytest.mark.parametrize("version", ["0.10.2.2", "2.8.2", "3.9.2", "4.0.2", "4.3.1", "4.3.9"])
def test_any_release_of_a_line_kchaos_builds_is_accepted(version: str) -> None:
    assert load_config(kafka_version=version, metadata=None, nemesis="none").kafka_version == version


@pytest.mark.parametrize("version", ["0.12.0.0", "1.2.0", "2.9.0", "3.10.0", "4.4.0", "5.0.0"])
def test_a_line_kchaos_does_not_build_is_refused(version: str) -> None:
    assert config_error(kafka_version=version, metadata=None)[1].startswith(
        f"  kafka_version (--kafka-version): kchaos builds no image of Kafka {version}:"
    )


def test_with_an_image_the_version_is_only_recorded_and_need_not_be_buildable() -> None:
    assert load_config(kafka_image="apache/kafka:9.9.9", kafka_version="9.9.9").kafka_version == "9.9.9"


@pytest.mark.parametrize(
    "image",
    [
        "apache/kafka:4.1.1",
        "kchaos/kafka:4.3.1",
        "localhost:5000/kchaos/kafka:4.3.1",
        "registry.example.com/team/kafka_build-2:v1.0",
        "apache/kafka@sha256:" + "0123456789abcdef" * 4,
        "[::1]:5000/kafka:latest",
    ],
)
def test_valid_image_references_pass(image: str) -> None:
    assert load_config(kafka_image=image, nemesis="kill", duration=60).kafka_image == image


@pytest.mark.parametrize(
    "image",
    ["", "Apache/Kafka:4", "apache/kafka:", "apache//kafka", "apache/kafka:tag with space", "a" * 256],
)
def test_invalid_image_references_are_refused(image: str) -> None:
    assert config_error(kafka_image=image)[1].startswith(
        f"  kafka_image (--kafka-image): {image!r} is not an image reference"
    )


def test_every_release_a_shipped_matrix_names_is_buildable() -> None:
    from kchaos.model.matrix import load_matrix, shipped_matrices

    for path in shipped_matrices().values():
        for version in load_matrix(path).axes.get("kafka_version", []):
            load_config(kafka_version=version, metadata=None, nemesis="none")
