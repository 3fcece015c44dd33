"""Named scenarios as a user meets them: listed, chosen by name, their settings under the user's own, a
wrong name refused before anything starts. (Their fault sequences run against real Kafka in tests/chaos.)"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import kchaos.harness.engine
import kchaos.runner.run
from kchaos.model.config import ConfigError, RunConfig, load_config
from kchaos.model.fault_plan import PlannedFault
from kchaos.model.scenario_table import SCENARIOS
from kchaos.nemesis.scenarios import SEQUENCES
from kchaos.runner.cli import main
from kchaos.runner.run_cluster import needs_request_proxies


def test_every_named_scenario_has_a_sequence_and_valid_settings() -> None:
    assert set(SEQUENCES) == set(SCENARIOS)
    for name in SCENARIOS:
        config = load_config(scenario=name)
        assert config.scenario == name and config.for_scenario, name


def test_a_scenarios_settings_are_the_defaults_and_given_values_override_them() -> None:
    config = load_config(scenario="kip-101-hw-truncation")
    assert (config.acks, config.min_insync_replicas, config.consumers) == ("all", 2, 0)
    assert config.broker_config["replica.lag.time.max.ms"] == "60000"
    assert config.nemesis == ("one-way", "kill")
    assert load_config(scenario="kip-101-hw-truncation", min_insync_replicas=1).min_insync_replicas == 1


def test_a_scenario_on_an_old_release_runs_in_its_only_metadata_mode() -> None:
    config = load_config(scenario="kip-101-hw-truncation", kafka_version="0.10.2.2")
    assert (config.metadata, config.idempotence) == ("zookeeper", False)


def test_an_unknown_scenario_is_refused_with_the_names_there_are() -> None:
    with pytest.raises(
        ConfigError, match=r"scenario \(--scenario\): no scenario 'kip-102'; choose from acks-1"
    ):
        load_config(scenario="kip-102")


def test_scenario_list_has_one_line_per_scenario_with_its_kip() -> None:
    result = CliRunner().invoke(main, ["scenario", "list"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert [line.split()[0] for line in lines] == list(SCENARIOS)
    assert "KIP-101" in next(line for line in lines if line.startswith("kip-101-hw-truncation"))


def test_run_refuses_an_unknown_scenario_before_anything_starts() -> None:
    result = CliRunner().invoke(main, ["run", "--scenario", "nope"])
    assert result.exit_code == 2
    assert "no scenario 'nope'" in result.output


def test_run_takes_the_scenarios_settings_under_the_flags_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Flags left at their defaults do not override the scenario's settings; flags given do."""
    seen: list[RunConfig] = []

    def execute(config: RunConfig, **_: Any) -> None:
        seen.append(config)
        raise KeyboardInterrupt

    monkeypatch.setattr(kchaos.harness.engine, "require_engine", lambda timeout=0.0: None)
    monkeypatch.setattr(kchaos.runner.run, "execute", execute)
    args = ["run", "--scenario", "kip-101-hw-truncation", "--runs-dir", str(tmp_path), "--rate", "300"]
    CliRunner().invoke(main, [*args, "--broker-config", "log.flush.interval.messages=1"])
    [config] = seen
    assert (config.scenario, config.consumers, config.min_insync_replicas) == ("kip-101-hw-truncation", 0, 2)
    assert config.nemesis == ("one-way", "kill") and config.rate == 300
    assert config.broker_config == {
        "replica.lag.time.max.ms": "60000",
        "replica.fetch.wait.max.ms": "5000",
        "replica.socket.timeout.ms": "8000",
        "request.timeout.ms": "8000",
        "controller.socket.timeout.ms": "5000",
        "log.flush.interval.messages": "1",
    }


@pytest.mark.parametrize("client", ["java", "librdkafka-process"])
@pytest.mark.parametrize("workload", ["group", "eos"])
def test_a_scenario_that_holds_its_readers_is_refused_for_group_members_that_are_processes(
    workload: str, client: str
) -> None:
    """`unclean-after-isr-shrink` holds its readers back mid-run, which a member that is a process of its
    own (Java's or librdkafka's) cannot be yet: refused before anything starts, not when the hold comes."""
    with pytest.raises(ConfigError) as refused:
        load_config(scenario="unclean-after-isr-shrink", client=client, workload=workload)
    message = str(refused.value)
    assert "holds its readers back" in message and "add --client librdkafka (threads" in message
    assert load_config(scenario="unclean-after-isr-shrink", client=client).workload == "sends"
    # Not told which client, such a run takes the one that can be held back: librdkafka's threads.
    assert load_config(scenario="unclean-after-isr-shrink", workload=workload).client == "librdkafka"
    assert load_config(scenario="unclean-after-isr-shrink").client == "librdkafka-process"


def test_the_docs_table_of_scenarios_names_every_one_once() -> None:
    """docs/scenarios.md's first table is what a user reads before `kchaos scenario list`: one row per
    named scenario, none it no longer has."""
    text = (Path(__file__).parent.parent / "docs" / "scenarios.md").read_text(encoding="utf-8")
    table = text.split("| scenario | provokes |", 1)[1].split("\n\n", 1)[0]
    rows = [line.split("|")[1].strip().strip("`") for line in table.splitlines()[2:] if line.startswith("|")]
    assert rows == list(SCENARIOS)


def test_a_request_attack_starts_the_request_proxies_and_the_other_scenarios_do_not() -> None:
    """The nodes need the proxy before their first connection, so the run decides before its cluster
    starts, from the plan or the scenario itself: the request attacks and a plan with a request fault."""
    proxied = {name for name, sequence in SEQUENCES.items() if needs_request_proxies([], sequence)}
    assert proxied == {"txn-endtxn-held", "txn-add-partitions-held", "txn-produce-held", "txn-markers-held"}
    assert not needs_request_proxies([], None)
    hold = PlannedFault("hold#1", "hold:api=EndTxn", 0.0, 5.0)
    assert needs_request_proxies([hold], None)
    assert not needs_request_proxies([PlannedFault("kill#1", "kill", 0.0, 5.0)], None)
