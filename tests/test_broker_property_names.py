"""A `--broker-config` key Kafka does not know is caught before anything starts: a misspelling is refused with
the name meant, a key of other releases is refused naming them, and a key only a plugin may read passes with
a warning as the run starts (a broker ignores a property it does not know, without a word).

The names each release knows are read from its jars (`kchaos/model/broker_property_names.tsv`); the counts
and names asserted here are those the broker's ConfigDef of each release holds.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from unittest.mock import MagicMock

import pytest
from click.testing import CliRunner

from kchaos.harness.image import ResolvedImage
from kchaos.model.broker_property_names import broker_config_warnings, broker_names
from kchaos.model.config import ConfigError, load_config
from kchaos.model.releases import buildable_lines
from kchaos.runner.cli import main
from kchaos.runner.run_steps import ChaosRun
from tests.test_run_bad_input import NO_ENGINE, no_containers  # noqa: F401 (the autouse fixture)


def refusal(tmp_path: Path, *args: str) -> str:
    """The line naming the field that `kchaos run ARGS` is refused with, after checking it exited 2 and
    created no run directory."""
    runs = tmp_path / "runs"
    result = CliRunner().invoke(main, ["run", "--runs-dir", str(runs), *args], env=NO_ENGINE)
    assert result.exit_code == 2, result.output
    assert not runs.exists()
    lines = result.stderr.splitlines()
    assert lines[0] == "kchaos: invalid configuration:"
    return lines[1]


def accepted(key: str, version: str = "4.3.1", **values: Any) -> dict[str, str]:
    config = load_config(
        broker_config={key: "1"}, kafka_version=version, nemesis="none", duration=30, **values
    )
    return config.broker_config


# --- the names read from the releases ----------------------------------------------------------------------


def known_by(release: str) -> set[str]:
    names = broker_names()
    return {name for name in names.known if names.knows(name, release)}


def test_the_names_of_the_oldest_and_the_newest_release_are_those_their_config_defs_hold() -> None:
    names = broker_names()
    assert (names.releases[0], names.releases[-1]) == ("0.10.2.2", "4.3.1")
    assert (len(known_by("0.10.2.2")), len(known_by("4.3.1"))) == (141, 360)


def test_the_names_of_every_release_line_kchaos_builds_were_read() -> None:
    read = {tuple(int(part) for part in release.split(".")[:2]) for release in broker_names().releases}
    assert set(buildable_lines()) == read


@pytest.mark.parametrize(
    ("name", "first", "last"),
    [
        ("log.flush.interval.messages", "0.10.2.2", "4.3.1"),
        ("num.partitions", "0.10.2.2", "4.3.1"),
        ("inter.broker.protocol.version", "0.10.2.2", "3.9.2"),
        ("zookeeper.connect", "0.10.2.2", "3.9.2"),
        ("process.roles", "2.8.2", "4.3.1"),
        ("transaction.state.log.min.isr", "0.11.0.3", "4.3.1"),
    ],
)
def test_a_name_is_known_from_the_release_it_came_in_to_the_last_that_has_it(
    name: str, first: str, last: str
) -> None:
    assert broker_names().known[name] == (first, last)


def test_the_newest_releases_know_no_zookeeper_setting() -> None:
    assert not {name for name in known_by("4.0.2") if name.startswith("zookeeper.")}
    assert "zookeeper.session.timeout.ms" in known_by("3.9.2")


# --- refused before anything starts ------------------------------------------------------------------------


def test_a_misspelled_broker_property_is_refused_with_the_name_meant(tmp_path: Path) -> None:
    line = refusal(tmp_path, "--broker-config", "log.flush.intervl.messages=1")
    assert line == (
        "  broker_config (--broker-config): log.flush.intervl.messages: no Kafka release knows this broker "
        "property, and Kafka would ignore it (it hands unknown ones to plugins only); did you mean "
        "log.flush.interval.messages?"
    )


def test_a_misspelling_is_refused_on_a_release_kchaos_builds_from_a_matrix_file_too() -> None:
    with pytest.raises(ConfigError, match=r"num\.partiton: .*did you mean num\.partitions\?"):
        accepted("num.partiton", "2.8.2")


def test_a_property_of_later_releases_is_refused_on_an_older_one_naming_the_releases(tmp_path: Path) -> None:
    first, last = broker_names().known["transaction.partition.verification.enable"]
    line = refusal(
        tmp_path, "--kafka-version", "3.5.2",
        "--broker-config", "transaction.partition.verification.enable=true",
    )  # fmt: skip
    assert line == (
        "  broker_config (--broker-config): transaction.partition.verification.enable: Kafka 3.5.2 does not "
        f"know this broker property and would ignore it; Kafka {first} to {last} know it (of the releases "
        "0.10.2.2 to 4.3.1 kchaos read); remove it, or pick one of those with --kafka-version"
    )


def test_a_property_kafka_removed_is_refused_on_the_releases_after(tmp_path: Path) -> None:
    line = refusal(tmp_path, "--broker-config", "inter.broker.protocol.version=3.9")
    assert line.startswith(
        "  broker_config (--broker-config): inter.broker.protocol.version: Kafka 4.3.1 does not know this "
        "broker property and would ignore it; Kafka 0.10.2.2 to 3.9.2 know it"
    )


def test_a_release_is_judged_by_the_names_of_its_own_line() -> None:
    """4.3.0 was not read, 4.3.1 was: a release of a line read is judged by that line's names."""
    assert accepted("log.flush.interval.messages", "4.3.0")
    with pytest.raises(ConfigError, match=r"Kafka 4\.3\.0 does not know this broker property"):
        accepted("inter.broker.protocol.version", "4.3.0")


def test_a_release_of_a_line_not_read_is_not_refused_a_name_it_may_know() -> None:
    """An image of a newer release may know a name kchaos did not read, or one near a name it read."""
    image = {"kafka_image": "apache/kafka:9.9.9"}
    assert accepted("inter.broker.protocol.version", "9.9.9", **image)
    assert accepted("log.flush.intervl.messages", "9.9.9", **image)
    assert broker_config_warnings(["log.flush.intervl.messages"], "9.9.9") == [
        "warning: no Kafka release kchaos read (0.10.2.2 to 4.3.1) knows the broker property "
        "log.flush.intervl.messages (did you mean log.flush.interval.messages?); if Kafka 9.9.9 does not "
        "either, it hands it to its plugins (authorizer, metric reporters, remote storage) only, and ignores "
        "it otherwise"
    ]


# --- passed on, with a warning ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "key",
    [
        "ssl.principal.mapping.ruls",  # near ssl.principal.mapping.rules, and a provider's to read
        "sasl.custom.login.setting",
        "remote.log.storage.s3.bucket",
        "remote.log.metadata.custom.setting",
        "rsm.config.bucket",
        "authorizer.ranger.url",
        "super.users",
        "allow.everyone.if.no.acl.found",
        "confluent.license",
        "cruise.control.metrics.topic",
        "metric.reporters.acme.endpoint",
    ],
)
def test_a_plugins_property_passes_with_a_warning(key: str) -> None:
    assert accepted(key) == {key: "1"}
    assert broker_config_warnings([key], "4.3.1") == [
        f"warning: Kafka 4.3.1 does not know the broker property {key}: it hands it to its plugins "
        "(authorizer, metric reporters, remote storage) only, and ignores it otherwise"
    ]


def test_a_property_near_no_known_name_passes_with_a_warning() -> None:
    key = "acme.audit.topic"
    assert accepted(key) == {key: "1"}
    (warning,) = broker_config_warnings([key, "log.flush.interval.messages"], "4.3.1")
    assert warning.startswith("warning: Kafka 4.3.1 does not know the broker property acme.audit.topic: ")


def test_a_listeners_own_override_passes_without_a_warning() -> None:
    key = "listener.name.internal.ssl.keystore.location"
    assert accepted(key) == {key: "1"}
    assert broker_config_warnings([key], "4.3.1") == []


def test_a_known_property_passes_without_a_warning() -> None:
    assert accepted("log.flush.interval.messages", "0.10.2.2", metadata=None) == {
        "log.flush.interval.messages": "1"
    }
    assert broker_config_warnings(["log.flush.interval.messages", "num.io.threads"], "0.10.2.2") == []


class _Started(Exception):
    """Raised by the test's progress at the line that starts the cluster: what came before is the run's
    start, and no container is touched."""


def test_the_run_prints_each_warning_before_it_starts_the_cluster(tmp_path: Path) -> None:
    config = load_config(
        broker_config={"acme.audit.topic": "x", "log.flush.interval.messages": "1"},
        nemesis="none",
        duration=30,
    )
    printed: list[str] = []

    def progress(message: str) -> None:
        printed.append(message)
        if message.startswith("starting "):
            raise _Started

    cluster = MagicMock()
    run = ChaosRun(
        config, tmp_path, progress, None, MagicMock(), MagicMock(),
        ResolvedImage("kchaos/kafka:4.3.1", "sha256:0", "4.3.1"), "4.3.1", None, [], MagicMock(), cluster,
        MagicMock(), MagicMock(),
    )  # fmt: skip
    with pytest.raises(_Started):
        run.start_cluster()

    assert printed[:-1] == [
        "warning: Kafka 4.3.1 does not know the broker property acme.audit.topic: it hands it to its plugins "
        "(authorizer, metric reporters, remote storage) only, and ignores it otherwise"
    ]
    assert printed[-1].startswith("starting 3 Kafka 4.3.1 nodes")
    cluster.start.assert_not_called()
