"""Bad input is refused before any container starts, with the field and the fix named."""

from __future__ import annotations

from itertools import pairwise

import pytest
from click.testing import CliRunner

from harness.cli import main
from harness.config import ConfigError, load_config
from nemesis.schedule import FAULTS, plan
from nemesis.spec import FAULT_OPTIONS


def test_defaults_are_the_safe_configuration() -> None:
    config = load_config()
    assert (config.acks, config.min_insync_replicas, config.replication_factor) == ("all", 2, 3)
    assert config.idempotence is True
    assert config.unclean_leader_election is False


def test_idempotence_follows_kafkas_default_for_acks_1() -> None:
    assert load_config(acks="1").idempotence is False


@pytest.mark.parametrize(
    ("values", "field", "fix"),
    [
        ({"replication_factor": 4}, "replication_factor", "--brokers"),
        ({"min_insync_replicas": 4}, "min_insync_replicas", "lower --min-insync-replicas"),
        ({"acks": "1", "idempotence": True}, "idempotence", "--no-idempotence"),
        ({"nemesis": "kill-leader,explode"}, "nemesis", "choose from kill, stop"),
        ({"nemesis": "pause:target=leaders"}, "nemesis", "use leader, followers"),
        ({"nemesis": "latency:ms=fast"}, "nemesis", "whole number"),
        ({"nemesis": "kill:who=leader"}, "nemesis", "kill takes target=..."),
        ({"fault_duration": 10, "fault_duration_max": 5}, "--fault-duration-max", "raise it"),
        ({"fault_partition": 3}, "fault_partition", "pick 0..2"),
        ({"acks": "0"}, "acks", "'all' or '1'"),
        ({"broker_heap": "lots"}, "broker_heap", "256m"),
        ({"topic": "no spaces"}, "topic", "letters, digits"),
    ],
)
def test_bad_values_name_the_field_and_the_fix(values: dict[str, object], field: str, fix: str) -> None:
    with pytest.raises(ConfigError) as error:
        load_config(**values)
    message = str(error.value)
    assert field in message
    assert fix in message


def test_cli_refuses_bad_flags_with_exit_2_before_starting_anything() -> None:
    result = CliRunner().invoke(main, ["run", "--replication-factor", "5"])
    assert result.exit_code == 2
    assert "replication_factor (5) exceeds brokers (3)" in result.output
    assert "raise --brokers" in result.output


def test_cli_refuses_malformed_broker_config() -> None:
    result = CliRunner().invoke(main, ["run", "--broker-config", "log.flush.interval.messages"])
    assert result.exit_code == 2
    assert "KEY=VALUE" in result.output


def test_same_seed_same_schedule_and_faults_end_before_the_tail() -> None:
    config = load_config(
        nemesis="kill-leader,isolate-leader", duration=120, fault_interval=5, fault_duration=10
    )
    first, second = plan(config), plan(config)
    assert first == second
    assert len(first) >= 2 and {p.fault for p in first} == {"kill-leader", "isolate-leader"}
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


def test_every_fault_the_cli_accepts_has_an_implementation() -> None:
    assert set(FAULT_OPTIONS) == set(FAULTS)
