"""Bad input is refused before any container starts, with the field and the fix named."""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path

import pytest
from click.testing import CliRunner

from kchaos.model.config import ConfigError, load_config
from kchaos.model.releases import DEFAULT_KAFKA_VERSION
from kchaos.nemesis.schedule import plan
from kchaos.runner.cli import main


def test_defaults_are_the_safe_configuration() -> None:
    config = load_config()
    assert (config.acks, config.min_insync_replicas, config.replication_factor) == ("all", 2, 3)
    assert config.idempotence is True
    assert config.unclean_leader_election is False


def test_idempotence_follows_kafkas_default_for_acks_1() -> None:
    assert load_config(acks="1").idempotence is False


def test_idempotence_is_off_by_default_where_brokers_cannot_take_it() -> None:
    """0.10 brokers have no InitProducerId: acks=all alone does not turn idempotence on there."""
    assert load_config(kafka_version="0.10.2.2", metadata="zookeeper").idempotence is False
    assert load_config(kafka_version="0.11.0.3", metadata="zookeeper").idempotence is True


def test_the_metadata_mode_defaults_to_kraft_where_the_release_has_it_else_zookeeper() -> None:
    assert load_config(kafka_version="0.10.2.2").metadata == "zookeeper"
    assert load_config(kafka_version="3.9.2").metadata == "kraft"
    assert load_config(kafka_version="4.3.1").metadata == "kraft"


def test_the_metadata_mode_is_recorded_with_the_configuration() -> None:
    assert load_config().to_json_dict()["metadata"] == "kraft"
    assert load_config(kafka_version="3.9.2", metadata="zookeeper").to_json_dict()["metadata"] == "zookeeper"


@pytest.mark.parametrize(
    ("values", "field", "fix"),
    [
        ({"replication_factor": 4}, "replication_factor", "--brokers"),
        ({"min_insync_replicas": 4}, "min_insync_replicas", "lower --min-insync-replicas"),
        ({"acks": "1", "idempotence": True}, "idempotence", "--no-idempotence"),
        ({"nemesis": "kill:target=leader,explode"}, "nemesis", "choose from kill, power-loss, stop"),
        ({"nemesis": "isolate-leader"}, "nemesis", "write isolate:target=leader instead"),
        ({"nemesis": "pause:target=leaders"}, "nemesis", "use leader, followers"),
        ({"nemesis": "latency:ms=fast"}, "nemesis", "whole number"),
        ({"nemesis": "kill:who=leader"}, "nemesis", "kill takes target=..."),
        ({"fault_duration": 10, "fault_duration_max": 5}, "--fault-duration-max", "raise it"),
        ({"fault_partition": 3}, "fault_partition", "pick 0..2"),
        ({"acks": "0"}, "acks", "use all or 1"),
        ({"broker_heap": "lots"}, "broker_heap", "256m"),
        ({"topic": "no spaces"}, "topic", "letters, digits"),
        # Faults that do not fit the run: none would run, yet the run would say ok.
        ({"nemesis": "isolate:target=leader", "duration": 30}, "--duration 30", "use --duration 35 or more"),
        ({"nemesis": "pause", "duration": 30}, "0 of 1 requested faults", "shorten --fault-interval"),
        ({"nemesis": "kill:target=leader,pause", "duration": 50}, "1 of 2 requested faults", "fewer faults"),
        # Nodes the cluster does not have: they are numbered 1..brokers.
        ({"nemesis": "kill:target=7"}, "nemesis", "name nodes from 1 to 3 or raise --brokers"),
        ({"nemesis": "kill:target=1+7"}, "names node 7", "raise --brokers"),
        ({"nemesis": "one-way:from=1:to=2+4"}, "to=2+4", "name nodes from 1 to 3"),
        ({"brokers": 5, "replication_factor": 5, "nemesis": "pause:target=6"}, "nemesis", "from 1 to 5"),
        ({"nemesis": "kill:target=1+1"}, "nemesis", "name each node once"),
        # ZooKeeper's faults: only the process faults can hit the node itself, and only ZooKeeper mode has it.
        ({"nemesis": "kill:target=zookeeper"}, "nemesis", "pass --metadata zookeeper"),
        ({"nemesis": "cut-zookeeper"}, "a KRaft cluster has no ZooKeeper", "kill:target=controller"),
        (
            {"kafka_version": "2.8.2", "nemesis": "latency:target=zookeeper"},
            "target=zookeeper not understood",
            "kill, stop, pause",
        ),
        (
            {"kafka_version": "2.8.2", "nemesis": "isolate:target=zookeeper"},
            "nemesis",
            "cut-zookeeper:target=all is ZooKeeper isolated",
        ),
        ({"kafka_version": "2.8.2", "nemesis": "one-way:from=zookeeper"}, "from=zookeeper", "cut-zookeeper"),
        # Fault options out of their range.
        ({"nemesis": "min-isr:value=0"}, "nemesis", "value must be at least 1"),
        ({"nemesis": "min-isr:value=4"}, "nemesis", "use value=1 to value=3"),
        ({"nemesis": "loss:percent=500"}, "nemesis", "percent must be from 1 to 100"),
        ({"nemesis": "loss:percent=0"}, "nemesis", "e.g. loss:percent=20"),
        ({"nemesis": "latency:ms=0"}, "nemesis", "ms must be from 1 to 60000"),
        ({"nemesis": "latency:ms=100:jitter=150"}, "nemesis", "use jitter=100 or less, or raise ms"),
        ({"nemesis": "bandwidth:kbit=0"}, "nemesis", "kbit must be at least 1"),
        ({"nemesis": "unclean-election:trigger=yes"}, "nemesis", "true or false"),
        # Power loss needs the sync journal only images kchaos builds carry.
        (
            {"nemesis": "power-loss", "kafka_image": "apache/kafka:4.1.1"},
            "nemesis: power-loss",
            "leave --kafka-image out",
        ),
        # Names and URLs.
        ({"run_id": "../escape"}, "run_id (--run-id)", "letters, digits, '.', '_' and '-'"),
        ({"run_id": ".hidden"}, "run_id", "starting with a letter or digit"),
        ({"run_id": "a" * 101}, "run_id", "1-100 characters"),
        ({"kafka_version": "banana"}, "kafka_version (--kafka-version)", f"e.g. {DEFAULT_KAFKA_VERSION}"),
        ({"kafka_version": "4.1"}, "kafka_version", "digits.digits.digits"),
        ({"kafka_image": "apache/kafka:4.1.1", "kafka_version": "latest"}, "kafka_version", "digits."),
        # Releases that need ZooKeeper (KRaft is the default mode), those without it, and those older
        # than any kchaos runs.
        (
            {"kafka_version": "0.10.2.1", "metadata": "kraft"},
            "metadata (--metadata)",
            "pass --metadata zookeeper",
        ),
        ({"kafka_version": "3.2.3", "metadata": "kraft"}, "metadata", "runs only with ZooKeeper"),
        ({"kafka_version": "4.3.1", "metadata": "zookeeper"}, "metadata (--metadata)", "removed ZooKeeper"),
        ({"kafka_version": "4.0.0", "metadata": "zookeeper"}, "metadata", "use --metadata kraft"),
        ({"metadata": "etcd"}, "metadata (--metadata)", "use kraft or zookeeper"),
        # Only images kchaos builds can run the ZooKeeper node.
        (
            {"kafka_version": "3.9.2", "metadata": "zookeeper", "kafka_image": "apache/kafka:3.9.1"},
            "metadata: zookeeper runs the ZooKeeper node from an image kchaos builds",
            "leave --kafka-image out",
        ),
        # Before 0.11 brokers take no idempotent producer: asked for, it is refused.
        (
            {"kafka_version": "0.10.2.2", "metadata": "zookeeper", "idempotence": True},
            "idempotence: 0.10.2.2 has no idempotent producer",
            "use --no-idempotence",
        ),
        ({"kafka_version": "0.9.0.1"}, "kafka_version", "use 0.10.2.2 or newer"),
        ({"spark_master": "bogus://x"}, "spark_master (--spark-master)", "local[N]"),
        ({"spark_master": "local[0]"}, "spark_master", "spark://HOST:PORT"),
        ({"workload": "group", "consumers": 0}, "--workload group", "give --consumers 1 or more"),
        ({"commit": "auto"}, "--commit", "use --workload group"),
        ({"workload": "streams"}, "workload", "'sends', 'group', 'txn' or 'eos'"),
        ({"txn_records": 3}, "--txn-records shapes transactions", "use --workload txn"),
        ({"topics": 3}, "--topics 3 needs a producer for each topic", "give --producers 3 or more"),
        ({"topics": 2}, "--topics 2 needs a reader for each topic", "give --consumers 2 or more, or 0"),
        ({"topics": 2, "workload": "eos"}, "--workload eos reads one input topic", "--workload txn"),
        (
            {"topics": 2, "workload": "txn", "consumers": 3},
            "two readers for each topic, one of each isolation level",
            "give --consumers 4 or more, or 0",
        ),
        (
            {"topics": 2, "consumers": 2, "nemesis": "power-loss:target=leader"},
            "--topics 2 with power-loss",
            "leave --topics out",
        ),
        ({"topics": 9}, "topics (--topics)", "less than or equal to 8"),
        ({"abort_ratio": 0.5, "workload": "group"}, "--abort-ratio", "use --workload txn"),
        ({"workload": "txn", "acks": "1"}, "transactional producers need acks=all", "use --acks all"),
        ({"workload": "txn", "idempotence": False}, "are idempotent", "leave --no-idempotence out"),
        (
            {"workload": "txn", "kafka_version": "0.10.2.2", "metadata": "zookeeper", "idempotence": None},
            "0.10.2.2 has no transactions",
            "from 0.11 on",
        ),
        ({"workload": "txn", "abort_ratio": 1.5}, "abort_ratio (--abort-ratio)", "less than or equal to 1"),
        ({"isolation": "serializable"}, "isolation (--isolation)", "'read_committed'"),
        (
            {"nemesis": "kill:target=txn-coordinator", "duration": 60},
            "target=txn-coordinator is the coordinator of the clients of --workload txn or eos",
            "use --workload txn or eos or another target",
        ),
        (
            {"nemesis": "pause:target=group-coordinator", "workload": "txn", "duration": 60},
            "--workload txn has none",
            "use --workload group or eos",
        ),
    ],
)
def test_bad_values_name_the_field_and_the_fix(values: dict[str, object], field: str, fix: str) -> None:
    with pytest.raises(ConfigError) as error:
        load_config(**values)
    message = str(error.value)
    assert field in message
    assert fix in message


@pytest.mark.parametrize(
    "values",
    [
        {"nemesis": "isolate:target=leader", "duration": 35},
        {"nemesis": "none", "duration": 1},
        {"brokers": 5, "nemesis": "kill:target=5,one-way:from=1+2:to=4", "duration": 100},
        {"nemesis": "min-isr:value=3,loss:percent=100,latency:ms=100:jitter=100,bandwidth:kbit=1"
         ",unclean-election:trigger=false", "duration": 200},
        {"run_id": "acks-1_rf-3.r2"},
        {"nemesis": "power-loss:target=leader", "kafka_image": "kchaos/kafka:4.1.1"},
        {"run_id": "20261121-150112-3fa2c1"},
        {"kafka_version": "3.9.0"},
        {"kafka_version": "3.3.2"},
        {"kafka_version": "3.9.2", "metadata": "zookeeper"},
        {"kafka_version": "3.9.2", "metadata": "zookeeper", "kafka_image": "kchaos/kafka:3.9.2"},
        {"kafka_version": "0.11.0.3", "metadata": "zookeeper", "idempotence": True},
        {"kafka_version": "0.10.2.2", "metadata": "zookeeper", "idempotence": False},
        *({"spark_master": m} for m in ("local", "local[4]", "local[*]", "local[2,3]", "local[*,2]",
                                        "spark://spark-1:7077", "spark://a:7077,b:7077", "yarn",
                                        "k8s://https://kube:6443", "mesos://zk://zk:2181/mesos")),
    ],
)  # fmt: skip
def test_good_values_are_accepted(values: dict[str, object]) -> None:
    load_config(**values)


def test_cli_refuses_a_run_whose_faults_do_not_fit_with_exit_2_and_no_run_directory(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    result = CliRunner().invoke(
        main, ["run", "--duration", "30", "--nemesis", "pause", "--runs-dir", str(runs)]
    )
    assert result.exit_code == 2, result.output
    assert "0 of 1 requested faults fit in --duration 30" in result.output
    assert "use --duration 35 or more" in result.output
    assert not runs.exists()


def test_cli_refuses_bad_flags_with_exit_2_before_starting_anything() -> None:
    result = CliRunner().invoke(main, ["run", "--replication-factor", "5"])
    assert result.exit_code == 2
    assert "replication_factor (5) exceeds brokers (3)" in result.output
    assert "raise --brokers" in result.output


def test_cli_refuses_malformed_broker_config() -> None:
    result = CliRunner().invoke(main, ["run", "--broker-config", "log.flush.interval.messages"])
    assert result.exit_code == 2
    assert "KEY=VALUE" in result.output


def test_cli_refuses_malformed_topic_config() -> None:
    result = CliRunner().invoke(main, ["run", "--topic-config", "flush.messages"])
    assert result.exit_code == 2
    assert "--topic-config 'flush.messages': write it as KEY=VALUE" in result.output


def test_topic_config_is_recorded_and_may_not_override_a_flag_the_oracle_reads() -> None:
    config = load_config(topic_config={"flush.messages": "1"})
    assert config.to_json_dict()["topic_config"] == {"flush.messages": "1"}
    assert load_config().topic_config == {}
    with pytest.raises(ConfigError, match=r"min\.insync\.replicas is set by --min-insync-replicas"):
        load_config(topic_config={"min.insync.replicas": "1"})
    with pytest.raises(ConfigError, match="--unclean-leader-election"):
        load_config(topic_config={"unclean.leader.election.enable": "true"})


def test_same_seed_same_schedule_and_faults_end_before_the_tail() -> None:
    config = load_config(
        nemesis="kill:target=leader,isolate:target=leader", duration=120, fault_interval=5, fault_duration=10
    )
    first, second = plan(config), plan(config)
    assert first == second
    assert len(first) >= 2 and {p.fault for p in first} == {"kill:target=leader", "isolate:target=leader"}
    assert all(p.at + p.duration <= config.duration - 10 for p in first)


def test_random_schedule_draws_faults_and_times_from_the_seed() -> None:
    values = {
        "nemesis": "kill,pause,isolate:target=minority", "schedule": "random", "duration": 300,
        "fault_duration": 5, "fault_duration_max": 20, "fault_interval": 2, "fault_interval_max": 8,
    }  # fmt: skip
    first = plan(load_config(**values))
    assert first == plan(load_config(**values))
    assert first != plan(load_config(**values, seed=7))
    assert all(5 <= p.duration <= 20 for p in first)
    assert len({p.duration for p in first}) > 1
    assert all(b.at - (a.at + a.duration) >= 2 for a, b in pairwise(first))


def test_zookeeper_faults_are_accepted_in_zookeeper_mode() -> None:
    nemesis = ("kill:target=zookeeper", "pause:target=zookeeper", "cut-zookeeper:target=leader")
    config = load_config(kafka_version="2.8.2", nemesis=",".join(nemesis), duration=200)
    assert config.metadata == "zookeeper"
    assert config.nemesis == nemesis


def test_a_txn_workload_mixes_isolation_levels_unless_told() -> None:
    txn = load_config(workload="txn", consumers=3)
    assert [txn.reader_isolation(i) for i in range(3)] == [
        "read_committed",
        "read_uncommitted",
        "read_committed",
    ]
    assert (txn.transaction_records, txn.transaction_abort_ratio) == (4, 0.25)
    assert load_config(workload="txn", txn_records=1, abort_ratio=0).transaction_abort_ratio == 0
    assert load_config(consumers=2).reader_isolation(1) == "read_committed"
    assert load_config(isolation="read_uncommitted").reader_isolation(0) == "read_uncommitted"
    assert load_config(workload="txn", nemesis="kill:target=txn-coordinator", duration=60).workload == "txn"
    for target in ("txn-coordinator", "group-coordinator"):  # an eos processor has both
        assert load_config(workload="eos", nemesis=f"kill:target={target}", duration=60).workload == "eos"


def test_a_group_workload_takes_either_commit_mode() -> None:
    assert load_config(workload="group").group_commit == "sync"
    assert load_config(workload="group", commit="auto", consumers=2).group_commit == "auto"
    assert load_config().workload == "sends"


def test_a_default_txn_run_starts_one_reader_of_each_level_so_mixed_checks_both() -> None:
    """The docs say the default `mixed` isolation checks both levels; with one reader it checked one."""
    txn = load_config(workload="txn")
    assert txn.consumers == 2
    assert [txn.reader_isolation(i) for i in range(2)] == ["read_committed", "read_uncommitted"]
    assert load_config(workload="txn", isolation="read_committed").consumers == 1
    assert load_config(consumers=1).consumers == 1 and load_config().consumers == 1


def test_a_txn_run_given_one_reader_reads_read_committed_and_mixed_with_one_is_refused() -> None:
    one = load_config(workload="txn", consumers=1)
    assert one.reader_isolation(0) == "read_committed"
    for consumers in (0, 1):
        wanted = rf"--isolation mixed .* --consumers {consumers} runs"
        with pytest.raises(ConfigError, match=wanted) as refused:
            load_config(workload="txn", consumers=consumers, isolation="mixed")
        assert "use --consumers 2 or more, or name one level" in str(refused.value)
