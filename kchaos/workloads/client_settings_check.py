"""Whether the run's client takes its settings, the user's own (`--producer-config`, `--consumer-config`)
among them, asked of the client itself before any container of the run starts.

kchaos refuses the keys it must own as the configuration is validated (kchaos.model.client_config); only
the client knows the rest: a name it has never heard of, a value out of range, a combination it refuses
(`max.in.flight.requests.per.connection=6` with idempotence), or, for a release the user chose
(`--java-client-version`, `--librdkafka-version`), a setting of kchaos's own that release lacks. Found
after the cluster booted, every worker would fail alike; found here, the run is refused in the client's own
words. The settings asked about are the ones the workload's first producer and first consumer would run
with.

The librdkafka threads are asked in this process (they are the harness's own confluent-kafka); the
librdkafka processes and the Java client in a container of their image with no network
(kchaos/harness/settings_check.py), since only it has their release. The Java client only warns of a name
it does not know, and would run without it; that is refused too.
"""

from __future__ import annotations

from collections.abc import Mapping

from confluent_kafka import Consumer, Producer

from kchaos.compose.rdkafka.settings_worker import verdict
from kchaos.harness.settings_check import settings_check_lines
from kchaos.model.client_names import JAVA, LIBRDKAFKA
from kchaos.model.config import RunConfig
from kchaos.model.events import READ_COMMITTED, transactional_name
from kchaos.model.releases import Release
from kchaos.model.workload_names import IN_A_GROUP, TRANSACTIONAL
from kchaos.workloads.in_harness.consumer import consumer_settings
from kchaos.workloads.in_harness.group_consumer import group_settings
from kchaos.workloads.in_harness.producer import producer_settings
from kchaos.workloads.in_harness.transactions import transactional_settings
from kchaos.workloads.processes.java.group import java_consumer_settings, java_member_settings
from kchaos.workloads.processes.java.producer import java_producer_settings
from kchaos.workloads.processes.java.transactions import java_transactional_settings
from kchaos.workloads.processes.rdkafka.producer import rdkafka_arguments

#: Where the clients checked are pointed: nothing listens there, and nothing is sent.
NOWHERE = "127.0.0.1:9"
#: The names the checked clients take: the workload's first producer and first consumer, and a group.
PRODUCER, CONSUMER, GROUP = "producer-0", "consumer-0", "kchaos-check"
#: The flag each side's settings come from.
FLAGS = {"producer": "producer_config (--producer-config)", "consumer": "consumer_config (--consumer-config)"}


def client_settings_refusal(config: RunConfig, client_image: str | None, release: str) -> str | None:
    """Why the run's client (of `release`, its image `client_image`) refuses its settings, in the client's
    words and naming the flag; None when it takes them, or when neither the settings nor the release were
    the user's choice (then nothing is asked)."""
    chosen = config.java_client_version or config.librdkafka_version
    if not config.producer_config and not config.consumer_config and chosen is None:
        return None
    producer, consumer = _settings(config, release)
    if config.client == LIBRDKAFKA:
        lines = _librdkafka_lines(producer, consumer)
    else:
        java = config.client == JAVA
        lines = settings_check_lines(
            str(client_image), config.run_id, _text(producer), _text(consumer), java=java
        )
    return _refusal(config, release, lines)


def _settings(config: RunConfig, release: str) -> tuple[dict[str, object], dict[str, object]]:
    """The settings of the workload's first producer, and of its first consumer when it has any."""
    grouped = config.workload in IN_A_GROUP
    readers = grouped or config.consumers > 0 or bool(config.consumer_config)
    if config.client == JAVA:
        java = Release.parse(release)
        build = java_transactional_settings if config.workload in TRANSACTIONAL else java_producer_settings
        producer: dict[str, object] = dict(build(config, NOWHERE, PRODUCER, java))
        if grouped:
            member = java_member_settings(config, NOWHERE, CONSUMER, GROUP, READ_COMMITTED)
            consumer: dict[str, object] = dict(member)
        else:
            reader = java_consumer_settings(NOWHERE, CONSUMER, GROUP, READ_COMMITTED, config.consumer_config)
            consumer = dict(reader)
        return producer, consumer if readers else {}
    if config.workload in TRANSACTIONAL:
        named = transactional_name(config.run_id, PRODUCER)
        producer = transactional_settings(config, NOWHERE, PRODUCER, named)
    else:
        producer = producer_settings(config, NOWHERE, PRODUCER)
    if grouped:
        consumer = group_settings(
            NOWHERE, CONSUMER, GROUP, config.group_commit, protocol=config.group_protocol,
            user=config.consumer_config,
        )  # fmt: skip
    else:
        consumer = consumer_settings(NOWHERE, CONSUMER, GROUP, user=config.consumer_config)
    return producer, consumer if readers else {}


def _text(settings: Mapping[str, object]) -> dict[str, str]:
    """Settings as a worker's arguments spell them (`rdkafka_arguments`: booleans as librdkafka does); the
    in-process logger stays behind."""
    return dict(argument.split("=", 1) for argument in rdkafka_arguments(dict(settings)))


def _librdkafka_lines(producer: Mapping[str, object], consumer: Mapping[str, object]) -> list[str]:
    """The check's lines from this process's librdkafka, in the words the workers' image prints
    (`settings_worker.verdict`)."""
    sides = (("producer", Producer, producer), ("consumer", Consumer, consumer))
    return [verdict(side, kind, settings) for side, kind, settings in sides if settings]


def _refusal(config: RunConfig, release: str, lines: list[str]) -> str | None:
    """The first refusal among the check's `lines`, naming what the user set that the client refused: their
    settings of that side, else the release they chose."""
    java = config.client == JAVA
    client = f"kafka-clients {release}" if java else f"librdkafka (confluent-kafka {release})"
    for line in lines:
        verdict, _, rest = line.partition(" ")
        side, _, said = rest.partition(" ")
        if verdict not in ("unknown", "refused") or side not in FLAGS:
            continue
        given = config.producer_config if side == "producer" else config.consumer_config
        if given:
            flag = FLAGS[side]
        elif java:
            flag = f"java_client_version (--java-client-version): the {side} settings kchaos runs with"
        else:
            flag = f"librdkafka_version (--librdkafka-version): the {side} settings kchaos runs with"
        if verdict == "unknown":
            return (
                f"{flag}: {client} has no setting {said!r} (the Java client would ignore it with a warning); "
                "check its spelling in that release's documentation, or leave it out"
            )
        return f"{flag}: {client} refuses it: {said}"
    return None
