"""`--producer-config` and `--consumer-config`: the keys kchaos owns refused before anything starts, the
rest passed to every client of every workload, librdkafka's own refusals in its words, and the oracle
reading the requests in flight the run set (no cluster: the Java client's own check is in
tests/cluster/test_client_settings.py)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from kchaos.checkers.delivery_timeout import delivery_timeout
from kchaos.checkers.faults import FaultInterval
from kchaos.checkers.results import guarantee_context
from kchaos.checkers.rules.anomaly_names import DUPLICATE, NONMONOTONIC_SEND
from kchaos.checkers.rules.oracle import GuaranteeContext
from kchaos.checkers.rules.verdicts import judge
from kchaos.harness.rdkafka_image import confluent_kafka_version
from kchaos.model.config import ConfigError, load_config
from kchaos.model.oracle_inputs import OracleInputError, OracleInputs
from kchaos.model.releases import Release
from kchaos.runner.cli import main
from kchaos.workloads.client_settings_check import client_settings_refusal
from kchaos.workloads.in_harness.consumer import consumer_settings
from kchaos.workloads.in_harness.group_consumer import group_settings
from kchaos.workloads.in_harness.producer import producer_settings
from kchaos.workloads.in_harness.transactions import transactional_settings
from kchaos.workloads.processes.java.group import java_consumer_settings, java_member_settings
from kchaos.workloads.processes.java.producer import java_producer_settings
from kchaos.workloads.processes.java.transactions import java_transactional_settings

#: The confluent-kafka the harness runs: the librdkafka threads' release.
HERE = confluent_kafka_version()

NO_IDEMPOTENCE = GuaranteeContext(
    acks="all",
    replication_factor=3,
    unclean_leader_election=False,
    idempotence=False,
    fault_kinds=frozenset({"crash"}),
    max_concurrent_crashed=1,
)


@pytest.mark.parametrize(
    ("producer", "values", "says"),
    [
        (True, {"acks": "1"}, "acks is set by --acks; use that flag instead of --producer-config"),
        (True, {"enable.idempotence": "false"}, "set by --idempotence / --no-idempotence"),
        (True, {"delivery.timeout.ms": "1000"}, "set by --message-timeout-ms"),
        (True, {"message.timeout.ms": "1000"}, "set by --message-timeout-ms"),
        (True, {"transactional.id": "mine"}, "transactional.id is set by kchaos itself (--workload txn"),
        (True, {"bootstrap.servers": "elsewhere:9092"}, "the run's own brokers"),
        (True, {"Linger.ms": "5"}, "'Linger.ms' is no client property: write it in lower case"),
        (True, {"linger.ms": ""}, "linger.ms: give it a value on one line"),
        (True, {"linger.ms": "5\nacks=0"}, "linger.ms: give it a value on one line"),
        (True, {"max.in.flight": "0"}, "max.in.flight='0': give a whole number of at least 1"),
        (True, {"max.in.flight": "1", "max.in.flight.requests.per.connection": "1"}, "are one setting"),
        (False, {"isolation.level": "read_uncommitted"}, "set by --isolation"),
        (False, {"enable.auto.commit": "true"}, "set by --commit"),
        (False, {"group.protocol": "consumer"}, "set by --group-protocol"),
        (False, {"group.id": "mine"}, "group.id is set by kchaos itself"),
        (False, {"auto.offset.reset": "latest"}, "a truncated log is read over, not skipped"),
    ],
)
def test_a_key_kchaos_owns_or_cannot_pass_on_is_refused_naming_it_and_the_fix(
    producer: bool, values: dict[str, str], says: str
) -> None:
    field = "producer_config" if producer else "consumer_config"
    with pytest.raises(ConfigError) as refused:
        load_config(**{field: values})
    assert f"{field} (--{field.replace('_', '-')}):" in str(refused.value)
    assert says in str(refused.value)


def test_the_cli_refuses_an_owned_key_and_a_malformed_item_before_anything_starts(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    for item, says in (("acks=1", "use that flag instead"), ("linger.ms", "write it as KEY=VALUE")):
        result = CliRunner().invoke(main, ["run", "--producer-config", item, "--runs-dir", str(runs)])
        assert result.exit_code != 0
        assert says in result.output, result.output
    assert not runs.exists()


def test_a_matrix_file_s_numbers_and_flags_are_read_as_the_text_the_clients_take() -> None:
    config = load_config(producer_config={"linger.ms": 50, "enable.gapless.guarantee": True})
    assert config.producer_config == {"linger.ms": "50", "enable.gapless.guarantee": "true"}
    assert json.loads(json.dumps(config.to_json_dict()))["producer_config"] == config.producer_config


def test_the_user_s_settings_reach_every_producer_and_consumer_of_both_clients() -> None:
    producer_extra = {"linger.ms": "50", "compression.type": "lz4"}
    consumer_extra = {"max.poll.records": "100"}
    config = load_config(producer_config=producer_extra, consumer_config=consumer_extra)
    release = Release.parse("4.3.1")
    producers = [
        producer_settings(config, "b:1", "producer-0"),
        transactional_settings(config, "b:1", "producer-0", "t"),
        java_producer_settings(config, "b:1", "producer-0", release),
        java_transactional_settings(config, "b:1", "producer-0", release),
    ]
    for settings in producers:
        assert {key: str(settings[key]) for key in producer_extra} == producer_extra
    consumers = [
        consumer_settings("b:1", "consumer-0", "g", user=config.consumer_config),
        group_settings("b:1", "member-0", "g", "sync", user=config.consumer_config),
        group_settings("b:1", "member-0", "g", "sync", protocol="consumer", user=config.consumer_config),
        java_consumer_settings("b:1", "consumer-0", "g", "read_committed", config.consumer_config),
        java_member_settings(config, "b:1", "member-0", "g", "read_committed"),
    ]
    for settings in consumers:
        assert {key: str(settings[key]) for key in consumer_extra} == consumer_extra
    # The user's own value wins over one kchaos only chose as a default (the classic session, linger).
    session = load_config(consumer_config={"session.timeout.ms": "45000"}, producer_config={"linger.ms": "0"})
    assert (
        group_settings("b:1", "m", "g", "sync", user=session.consumer_config)["session.timeout.ms"] == "45000"
    )
    assert producer_settings(session, "b:1", "p")["linger.ms"] == "0"
    # Nothing given, nothing added: the settings are what they always were.
    plain = load_config()
    assert "compression.type" not in producer_settings(plain, "b:1", "p")


@pytest.mark.parametrize(
    ("producer", "consumer", "says"),
    [
        ({"bogus.key": "1"}, {}, 'refuses it: No such configuration property: "bogus.key"'),
        ({"compression.type": "lz5"}, {}, 'Invalid value "lz5" for configuration property'),
        ({"max.in.flight.requests.per.connection": "6"}, {}, "`max.in.flight` must be set <= 5"),
        ({}, {"fetch.max.bytes": "many"}, 'Invalid value for configuration property "fetch.max.bytes"'),
    ],
)
def test_librdkafka_s_own_refusal_is_the_run_s_in_its_words(
    producer: dict[str, str], consumer: dict[str, str], says: str
) -> None:
    config = load_config(client="librdkafka", producer_config=producer, consumer_config=consumer)
    refused = client_settings_refusal(config, None, HERE)
    assert refused is not None and says in refused
    assert f"librdkafka (confluent-kafka {HERE}) refuses it" in refused
    assert refused.startswith("producer_config (--producer-config)" if producer else "consumer_config")


def test_settings_librdkafka_takes_are_not_refused_for_any_workload() -> None:
    for workload in ("sends", "txn", "group", "eos"):
        config = load_config(
            client="librdkafka", workload=workload, producer_config={"linger.ms": "20"},
            consumer_config={"fetch.min.bytes": "1"},
        )  # fmt: skip
        assert client_settings_refusal(config, None, HERE) is None, workload
    # Nothing the user chose, nothing asked: not even an image (None here) is needed.
    assert client_settings_refusal(load_config(), None, HERE) is None


def test_one_request_in_flight_without_idempotence_promises_order() -> None:
    """The producer documents order when at most one request is in flight, so a reordering is then a
    violation; with more in flight (either client's default) it is permitted; the rule says which."""
    several = judge(NONMONOTONIC_SEND, 1, NO_IDEMPOTENCE)
    assert (several.verdict, several.rule_id) == ("permitted", "retries-reorder")
    one = judge(NONMONOTONIC_SEND, 1, replace(NO_IDEMPOTENCE, max_in_flight=1))
    assert (one.verdict, one.rule_id) == ("violation", "one-in-flight-order")
    assert "max.in.flight.requests.per.connection" in one.source
    assert judge(NONMONOTONIC_SEND, 1, replace(NO_IDEMPOTENCE, max_in_flight=2)).verdict == "permitted"
    # Duplicates stay at-least-once without idempotence, whatever is in flight.
    assert judge(DUPLICATE, 1, replace(NO_IDEMPOTENCE, max_in_flight=1)).verdict == "permitted"


def test_the_oracle_reads_the_requests_in_flight_from_config_json_and_old_runs_still_check() -> None:
    config = load_config(acks="1", producer_config={"max.in.flight.requests.per.connection": "1"})
    written = json.loads(json.dumps(config.to_json_dict()))
    context = guarantee_context(written, [])
    assert (context.idempotence, context.max_in_flight) == (False, 1)
    assert judge(NONMONOTONIC_SEND, 1, context).rule_id == "one-in-flight-order"
    librdkafka_alias = {**written, "producer_config": {"max.in.flight": "3"}}
    assert guarantee_context(librdkafka_alias, []).max_in_flight == 3
    old = {key: value for key, value in written.items() if key != "producer_config"}
    assert guarantee_context(old, []).max_in_flight is None
    with pytest.raises(OracleInputError) as refused:
        OracleInputs.from_config({**written, "producer_config": {"max.in.flight": "x"}})
    assert "producer_config in config.json: max.in.flight='x'" in str(refused.value)


@pytest.mark.parametrize(
    ("values", "says"),
    [
        (
            {"librdkafka_version": "2.6"},
            "librdkafka_version (--librdkafka-version): '2.6': give a confluent-kafka",
        ),
        ({"librdkafka_version": "1.9.2"}, "from 2.0.2 (the first with a wheel for the worker image's Python"),
        ({"librdkafka_version": "2.6.1", "client": "java"}, "--client is java (the librdkafka threads run"),
        ({"librdkafka_version": "2.6.1", "client": "librdkafka"}, "use --client librdkafka-process"),
        (
            {"librdkafka_version": "2.3.0", "workload": "group", "group_protocol": "consumer"},
            "came in confluent-kafka 2.4.0 (KIP-848 early access); --librdkafka-version 2.3.0 has none",
        ),
    ],
)
def test_a_librdkafka_version_kchaos_cannot_run_is_refused_naming_why(
    values: dict[str, str], says: str
) -> None:
    with pytest.raises(ConfigError) as refused:
        load_config(**values)
    assert says in str(refused.value)


def test_a_chosen_librdkafka_version_is_recorded_for_its_processes() -> None:
    config = load_config(librdkafka_version="2.6.1", workload="group", group_protocol="consumer")
    assert config.to_json_dict()["librdkafka_version"] == "2.6.1"
    assert load_config().librdkafka_version is None


def test_a_delivery_timeout_shorter_than_a_fault_is_said_next_to_the_verdict() -> None:
    fault = FaultInterval("kill#1", "kill", "crash", (2,), None, 10, 100.0, 20, 115.0)
    short = delivery_timeout({"message_timeout_ms": 10_000}, [fault])
    assert short is not None and (short["ms"], short["longest_fault_s"], short["shorter"]) == (
        10_000,
        15.0,
        True,
    )
    assert (
        "is shorter than the longest fault (15 s)" in short["line"]
        and "idempotent-epoch-bump" in short["line"]
    )
    long = delivery_timeout({"message_timeout_ms": 30_000}, [fault])
    assert long is not None and not long["shorter"] and "longer than the longest fault (15 s)" in long["line"]
    unstopped = FaultInterval("kill#2", "kill", "crash", (1,), None, 30, 200.0)
    calm = delivery_timeout({"message_timeout_ms": 30_000}, [unstopped])
    assert calm is not None and calm["longest_fault_s"] is None and "no fault held" in calm["line"]
    assert delivery_timeout({}, [fault]) is None  # converted tool output records none
