"""The clients' own word on a run's `--producer-config` and `--consumer-config`, asked before any broker
starts, in a container of the client image with no network (kchaos/compose/client/KchaosConfigCheck.java;
the librdkafka worker's `settings` mode): a name it does not know, a value or combination it refuses.
Costs about 3 s once the 4.3.1 Java client's image and the librdkafka images are built (the cluster tests
build them anyway); the librdkafka threads' refusals are unit tests (tests/test_client_config.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from kchaos.harness.client_image import ensure_client_image
from kchaos.harness.rdkafka_image import ensure_rdkafka_image
from kchaos.model.config import load_config
from kchaos.runner.cli import main
from kchaos.workloads.client_settings_check import client_settings_refusal
from tests.cluster.conftest import assert_no_leftovers

pytestmark = pytest.mark.cluster


@pytest.mark.parametrize(
    ("values", "says"),
    [
        (
            {"producer_config": {"max.in.flight": "1"}},
            "producer_config (--producer-config): kafka-clients 4.3.1 has no setting 'max.in.flight'",
        ),
        (
            {"producer_config": {"max.in.flight.requests.per.connection": "6"}},
            "kafka-clients 4.3.1 refuses it: To use the idempotent producer, "
            "max.in.flight.requests.per.connection must be set to at most 5",
        ),
        (
            {
                "consumer_config": {"session.timeout.ms": "45000"},
                "workload": "group",
                "group_protocol": "consumer",
            },
            "consumer_config (--consumer-config): kafka-clients 4.3.1 refuses it: session.timeout.ms cannot "
            "be set when group.protocol=CONSUMER",
        ),
    ],
)
def test_the_java_client_refuses_in_its_own_words_before_the_cluster_starts(
    values: dict[str, object], says: str
) -> None:
    image = ensure_client_image("4.3.1")
    config = load_config(client="java", kafka_version="4.3.1", **values)
    refused = client_settings_refusal(config, image, "4.3.1")
    assert refused is not None and says in refused, refused
    assert_no_leftovers()


def test_settings_the_java_client_takes_pass_and_a_refused_run_leaves_nothing(tmp_path: Path) -> None:
    image = ensure_client_image("4.3.1")
    for workload in ("sends", "txn", "group", "eos"):
        config = load_config(
            client="java", kafka_version="4.3.1", workload=workload,
            producer_config={"linger.ms": "20", "compression.type": "lz4"},
            consumer_config={"max.poll.records": "100"},
        )  # fmt: skip
        assert client_settings_refusal(config, image, "4.3.1") is None, workload
    runs = tmp_path / "runs"
    result = CliRunner().invoke(
        main,
        ["run", "--client", "java", "--kafka-version", "4.3.1", "--producer-config", "lingr.ms=5",
         "--runs-dir", str(runs), "--run-id", "refused"],
    )  # fmt: skip
    assert result.exit_code != 0
    assert "kafka-clients 4.3.1 has no setting 'lingr.ms'" in result.output, result.output
    assert not (runs / "refused").exists()
    assert_no_leftovers()


def test_the_librdkafka_processes_are_asked_in_their_own_image_of_the_chosen_release() -> None:
    """`--client librdkafka-process` (the default) is asked in a container of its image, so a chosen
    `--librdkafka-version` answers for itself: 2.6.1 takes kchaos's settings and the user's, and refuses
    a name it does not have in its own words."""
    for release, values in (("2.16.1", {}), ("2.6.1", {"librdkafka_version": "2.6.1"})):
        image = ensure_rdkafka_image(release)
        refused = client_settings_refusal(
            load_config(producer_config={"bogus.key": "1"}, **values), image, release
        )
        assert refused == (
            f"producer_config (--producer-config): librdkafka (confluent-kafka {release}) refuses it: "
            'No such configuration property: "bogus.key"'
        ), refused
    chosen = load_config(
        librdkafka_version="2.6.1", workload="group", consumer_config={"fetch.min.bytes": "1"}
    )
    assert client_settings_refusal(chosen, ensure_rdkafka_image("2.6.1"), "2.6.1") is None
    assert_no_leftovers()
