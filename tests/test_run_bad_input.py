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


# --- 6. what a hostile or careless hand types is refused before the cluster, naming the field -------------

SETTINGS_DELETE = (
    "deletes records on purpose, and kchaos would count the records Kafka deleted as lost writes"
)


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (
            ["--broker-config", "log.flush.interval.messages=1\nlog.retention.check.interval.ms=4242"],
            "broker_config (--broker-config): log.flush.interval.messages: the value "
            "'1\\nlog.retention.check.interval.ms=4242' holds a control character (a newline would write a "
            "second property line); give the value on its own",
        ),
        (
            ["--topic-config", "flush.messages=1\t2"],
            "topic_config (--topic-config): flush.messages: the value '1\\t2' holds a control character",
        ),
        (
            ["--broker-config", "node.id=7"],
            "broker_config (--broker-config): node.id is set by kchaos itself (each node's id, by which the "
            "faults and the history name it); remove it from --broker-config",
        ),
        (
            ["--broker-config", "process.roles=broker"],
            "broker_config (--broker-config): process.roles is set by kchaos itself",
        ),
        (
            ["--broker-config", "listeners=PLAINTEXT://:1"],
            "broker_config (--broker-config): listeners is set by kchaos itself",
        ),
        (
            ["--broker-config", "log.dirs=/tmp"],
            "broker_config (--broker-config): log.dirs is set by kchaos itself",
        ),
        (
            ["--broker-config", "unclean.leader.election.enable=true"],
            "broker_config (--broker-config): unclean.leader.election.enable is set by "
            "--unclean-leader-election; use that flag instead",
        ),
        (
            ["--broker-config", "Log.Flush.Interval.Messages=1"],
            "broker_config (--broker-config): 'Log.Flush.Interval.Messages' is no broker property kchaos can "
            "pass on: write it in lower case",
        ),
        (
            ["--topic-config", "Flush.Messages=1"],
            "topic_config (--topic-config): 'Flush.Messages' is no topic config Kafka knows (Kafka would "
            "refuse it only after the cluster started)",
        ),
        (
            ["--topic-config", "flush.mesages=1"],
            "topic_config (--topic-config): 'flush.mesages' is no topic config",
        ),
        (
            ["--topic-config", "retention.ms=1000"],
            f"topic_config (--topic-config): retention.ms=1000 {SETTINGS_DELETE}; remove the setting, or "
            "give -1 or at least 604800000 (7 days:",
        ),
        (
            ["--topic-config", "retention.bytes=1048576"],
            f"topic_config (--topic-config): retention.bytes=1048576 {SETTINGS_DELETE}; remove the setting",
        ),
        (
            ["--topic-config", "cleanup.policy=compact"],
            "topic_config (--topic-config): cleanup.policy=compact: compaction keeps only the last record of "
            f"each key, so it {SETTINGS_DELETE}; remove the setting",
        ),
        (
            ["--topic-config", "cleanup.policy=delete,compact"],
            "topic_config (--topic-config): cleanup.policy=delete,compact: compaction",
        ),
        (
            ["--topic-config", "delete.retention.ms=1"],
            "topic_config (--topic-config): delete.retention.ms holds a compacted topic's tombstones",
        ),
        (
            ["--broker-config", "log.retention.hours=1"],
            f"broker_config (--broker-config): log.retention.hours=1 {SETTINGS_DELETE}; remove the setting, "
            "or give -1 or at least 168",
        ),
        (
            ["--broker-config", "log.retention.minutes=60"],
            "broker_config (--broker-config): log.retention.minutes=60 deletes records",
        ),
        (
            ["--broker-config", "log.retention.bytes=100"],
            "broker_config (--broker-config): log.retention.bytes=100 deletes records",
        ),
        (
            ["--broker-config", "log.cleanup.policy=compact"],
            "broker_config (--broker-config): log.cleanup.policy=compact: compaction",
        ),
        (
            ["--broker-config", "log.retention.ms=soon"],
            "broker_config (--broker-config): log.retention.ms='soon': give a whole number",
        ),
        (
            ["--topic", ".."],
            "topic (--topic): '..' is no topic name Kafka takes; name the topic, e.g. kchaos",
        ),
        (["--topic", "."], "topic (--topic): '.' is no topic name Kafka takes"),
        (
            ["--topic", "__consumer_offsets"],
            "topic (--topic): '__consumer_offsets': a name starting with __ is Kafka's own "
            "(__consumer_offsets, __transaction_state); name a topic of the run's own, e.g. kchaos",
        ),
        (["--topic", "__mine"], "topic (--topic): '__mine': a name starting with __ is Kafka's own"),
        (
            ["--broker-config", "log.flush.intervl.messages=1"],
            "broker_config (--broker-config): log.flush.intervl.messages: no Kafka release knows this broker "
            "property, and Kafka would ignore it (it hands unknown ones to plugins only); did you mean "
            "log.flush.interval.messages?",
        ),
        (
            ["--broker-config", "inter.broker.protocol.version=3.9"],
            "broker_config (--broker-config): inter.broker.protocol.version: Kafka 4.3.1 does not know this "
            "broker property and would ignore it; Kafka 0.10.2.2 to 3.9.2 know it",
        ),
        (
            ["--broker-heap", "0m"],
            "broker_heap (--broker-heap): '0m': give a JVM size from 128m to 64g, e.g. 256m or 1g",
        ),
        (["--broker-heap", "127m"], "broker_heap (--broker-heap): '127m': give a JVM size from 128m to 64g"),
        (["--broker-heap", "65g"], "broker_heap (--broker-heap): '65g': give a JVM size from 128m to 64g"),
        (["--broker-heap", "\uff11g"], "broker_heap (--broker-heap): '\uff11g': give a JVM size from 128m"),
        (
            ["--rate", "1e-300"],
            "rate (--rate): 1e-300 sends per second make next to no sends in a run; give at least 0.1, or 0 "
            "for no limit",
        ),
        (
            ["--max-examples", "2147483648"],
            "max_examples (--max-examples): Input should be less than or equal to 10000, got 2147483648; "
            "give a value in 1<=x<=10000",
        ),
        (
            ["--spark-master", "local[0]"],
            "spark_master (--spark-master): 'local[0]' is not a Spark master URL; use local, local[N], "
            "local[*], local[N,F] (N from 1), spark://HOST:PORT, yarn, k8s://... or mesos://..., e.g. "
            "local[2]",
        ),
        (
            ["--nemesis", "one-way:from=1:to=1"],
            "nemesis (--nemesis): one-way: from=1 and to=1 name the same node (1), and a node has no link to "
            "itself to cut; name two different ones, e.g. one-way:from=leader:to=followers",
        ),
        (
            ["--nemesis", "one-way:from=1+2:to=2+3"],
            "nemesis (--nemesis): one-way: from=1+2 and to=2+3 name the same node (2)",
        ),
        (
            ["--nemesis", "one-way:from=followers:to=followers"],
            "nemesis (--nemesis): one-way: from=followers and to=followers name the same node (followers)",
        ),
        (
            ["--nemesis", "remove-voter", "--controllers", "1", "--kafka-version", "4.1.1"],
            "nemesis: remove-voter: takes a voter out of the KRaft quorum, and --controllers 1 is its only "
            "voter: the quorum would be left with none; use --controllers 2 or more (3 keeps a majority)",
        ),
        (
            ["--nemesis", "add-voter", "--controllers", "3", "--kafka-version", "4.1.1"],
            "nemesis: add-voter: makes a spare controller a voter of the KRaft quorum, and the run has none; "
            "pass --spare-controllers 1 (KRaft)",
        ),
        (
            ["--nemesis", "add-voter", "--kafka-version", "4.1.1"],
            "nemesis: add-voter: makes a spare controller a voter of the KRaft quorum, and the run has none; "
            "pass --controllers 3 --spare-controllers 1 (KRaft)",
        ),
        (
            ["--nemesis", "latency:ms=\uff1100"],
            "nemesis (--nemesis): latency: ms='\uff1100' holds a character outside ASCII (digits must be "
            "0-9); write it in plain ASCII, e.g. latency:ms=200",
        ),
        (
            ["--nemesis", "kill:target=\uff12"],
            "nemesis (--nemesis): kill: target='\uff12' holds a character outside ASCII",
        ),
        (
            ["--nemesis", "kill:target=1+\u0663"],
            "nemesis (--nemesis): kill: target='1+\u0663' holds a character outside ASCII",
        ),
        (
            ["--nemesis", "clock:offset=-\uff11000"],
            "nemesis (--nemesis): clock: offset='-\uff11000' holds a character outside",
        ),
        (
            [
                "--workload",
                "group",
                "--group-protocol",
                "consumer",
                "--client",
                "java",
                "--java-client-version",
                "3.6.2",
            ],
            "group_protocol: --group-protocol consumer needs a Java client that has group.protocol, which "
            "came in kafka-clients 3.7 (KIP-848 early access); --java-client-version 3.6.2 would run the "
            "classic protocol while the run recorded consumer: use --java-client-version 3.7.0 or later",
        ),
    ],
)
def test_hostile_input_is_refused_naming_the_field_before_anything_starts(
    tmp_path: Path, args: list[str], line: str
) -> None:
    lines = refused(tmp_path, *args)
    assert lines[0] == "kchaos: invalid configuration:"
    assert lines[1].startswith(f"  {line}"), lines[1]


@pytest.mark.parametrize(
    ("args", "starts", "fix"),
    [
        (
            ["--workload", "txn", "--client", "java", "--txn-on-timeout", "abort"],
            "txn_on_timeout: --txn-on-timeout abort is not something --client java allows: the Java "
            "client's KafkaProducer.commitTransaction javadoc",
            "use --txn-on-timeout retry or restart with --client java",
        ),
        (
            ["--workload", "eos", "--client", "java", "--txn-on-timeout", "abort"],
            "txn_on_timeout: --txn-on-timeout abort is not something --client java allows",
            "use --txn-on-timeout retry or restart with --client java",
        ),
        (
            ["--workload", "txn", "--txn-on-timeout", "abort"],
            "txn_on_timeout: --txn-on-timeout abort is not something --client librdkafka-process allows: "
            "librdkafka's rd_kafka_commit_transaction (rdkafka.h)",
            "use --txn-on-timeout retry or restart with --client librdkafka-process",
        ),
        (
            ["--workload", "eos", "--client", "librdkafka", "--txn-on-timeout", "abort"],
            "txn_on_timeout: --txn-on-timeout abort is not something --client librdkafka allows",
            "use --txn-on-timeout retry or restart with --client librdkafka",
        ),
        (
            ["--txn-on-timeout", "restart"],
            "txn_on_timeout: --txn-on-timeout is what a transactional application does when its commit "
            "times out; --workload sends commits no transactions",
            "leave --txn-on-timeout out or use --workload txn or eos",
        ),
        (
            ["--workload", "group", "--txn-on-timeout", "retry"],
            "txn_on_timeout: --txn-on-timeout is what a transactional application does when its commit "
            "times out; --workload group commits no transactions",
            "leave --txn-on-timeout out or use --workload txn or eos",
        ),
        (
            ["--workload", "txn", "--txn-on-timeout", "later"],
            "Invalid value for '--txn-on-timeout'",
            "restart",
        ),
    ],
)
def test_a_txn_on_timeout_a_client_or_workload_does_not_allow_is_refused_before_anything_starts(
    tmp_path: Path, args: list[str], starts: str, fix: str
) -> None:
    said = "\n".join(refused(tmp_path, *args))
    assert starts in said and fix in said, said


@pytest.mark.parametrize(
    ("flag", "value"),
    [("--partitions", "\uff13"), ("--brokers", "\u0663"), ("--rate", "\uff1100"), ("--duration", "\uff160")],
)
def test_a_number_flag_refuses_digits_outside_ascii_naming_the_flag(
    tmp_path: Path, flag: str, value: str
) -> None:
    lines = refused(tmp_path, flag, value)
    assert lines[-1] == (
        f"Error: Invalid value for '{flag}': {value!r} holds a character outside ASCII; write it with the "
        "digits 0-9"
    )


@pytest.mark.parametrize(
    ("broker", "topic"),
    [
        (
            {"log.flush.interval.messages": "1", "log.retention.check.interval.ms": "1000"},
            {"segment.ms": "2000"},
        ),
        ({"log.retention.hours": "168", "log.retention.bytes": "-1"}, {"retention.ms": "-1"}),
        ({"log.retention.ms": "604800000", "log.cleanup.policy": "delete"}, {"retention.ms": "604800000"}),
        (
            {"num.io.threads": "4"},
            {"cleanup.policy": "delete", "local.retention.ms": "-2", "retention.bytes": "-1"},
        ),
    ],
)
def test_settings_that_delete_nothing_within_a_run_are_accepted(
    broker: dict[str, str], topic: dict[str, str]
) -> None:
    config = load_config(broker_config=broker, topic_config=topic, nemesis="none", duration=30)
    assert (config.broker_config, config.topic_config) == (broker, topic)


@pytest.mark.parametrize(
    ("values", "accepted"),
    [
        ({"broker_heap": "128m"}, True),
        ({"broker_heap": "64g"}, True),
        ({"broker_heap": "65536m"}, True),
        ({"rate": 0.1}, True),
        ({"rate": 0.0}, True),
        ({"rate": 0.09}, False),
        ({"max_examples": 10000}, True),
        ({"max_examples": 10001}, False),
        ({"topic": "_kchaos"}, True),
        ({"topic": ".kchaos"}, True),
        ({"topic": "..."}, True),
        ({"nemesis": "one-way:from=1:to=2+3"}, True),
        ({"nemesis": "one-way:from=random:to=random"}, True),
        (
            {
                "workload": "group",
                "group_protocol": "consumer",
                "client": "java",
                "java_client_version": "3.7.2",
            },
            True,
        ),
        ({"workload": "group", "group_protocol": "consumer", "client": "java"}, True),
    ],
)
def test_the_bounds_of_the_new_refusals_are_where_they_say(values: dict[str, object], accepted: bool) -> None:
    settings = {"nemesis": "none", "duration": 40, **values}
    if accepted:
        assert load_config(**settings)
    else:
        with pytest.raises(ConfigError):
            load_config(**settings)


def test_a_matrix_files_properties_are_held_to_the_same_rules() -> None:
    values = yaml.safe_load("broker_config: {node.id: '1'}\ntopic_config: {retention.ms: '1000'}\n")
    lines = config_error(**values)
    assert lines[1].startswith("  broker_config (--broker-config): node.id is set by kchaos itself")
    assert lines[2].startswith(
        "  topic_config (--topic-config): retention.ms=1000 deletes records on purpose"
    )
