"""Whether the run's client takes the user's own settings (`--producer-config`, `--consumer-config`),
asked of the client itself before any container of the run starts.

kchaos refuses the keys it must own as the configuration is validated (kchaos.model.client_config); only
the client knows the rest: a name it has never heard of, a value out of range, a combination it refuses
(`max.in.flight.requests.per.connection=6` with idempotence). Found after the cluster booted, every worker
would fail alike; found here, the run is refused in the client's own words. The settings asked about are
the ones the workload's first producer and first consumer would run with, the user's among them.

librdkafka is asked in this process (the harness's confluent-kafka is the one the librdkafka process
image is built from); the Java client in a container of its image with no network
(kchaos/compose/client/KchaosConfigCheck.java), since the release's jar is only there. The Java client
only warns of a name it does not know, and would run without it; that is refused too.
"""

from __future__ import annotations

from collections.abc import Mapping

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer

from kchaos.harness.client_image import check_java_settings
from kchaos.model.client_names import JAVA
from kchaos.model.config import RunConfig
from kchaos.model.events import transactional_name
from kchaos.model.releases import Release
from kchaos.model.workload_names import IN_A_GROUP, TRANSACTIONAL
from kchaos.workloads.in_harness.consumer import consumer_settings
from kchaos.workloads.in_harness.group_consumer import group_settings
from kchaos.workloads.in_harness.producer import producer_settings
from kchaos.workloads.in_harness.transactions import transactional_settings
from kchaos.workloads.processes.java.group import java_consumer_settings, java_member_settings
from kchaos.workloads.processes.java.producer import java_producer_settings
from kchaos.workloads.processes.java.transactions import java_transactional_settings

#: Where the clients checked are pointed: nothing listens there, and nothing is sent.
NOWHERE = "127.0.0.1:9"
#: The names the checked clients take: the workload's first producer and first consumer.
PRODUCER, CONSUMER = "producer-0", "consumer-0"
#: The flag each side's settings come from.
FLAGS = {"producer": "producer_config (--producer-config)", "consumer": "consumer_config (--consumer-config)"}


def client_settings_refusal(config: RunConfig, client_image: str | None, java_version: str) -> str | None:
    """Why the run's client refuses its `--producer-config` or `--consumer-config`, in the client's words
    and naming the flag; None when it takes them, or none was given (then nothing is asked)."""
    if not config.producer_config and not config.consumer_config:
        return None
    if config.client == JAVA:
        return _java_refusal(config, str(client_image), java_version)
    return _librdkafka_refusal(config)


def _librdkafka_refusal(config: RunConfig) -> str | None:
    checks: list[tuple[str, type[Producer] | type[Consumer], Mapping[str, object]]] = []
    if config.producer_config:
        if config.workload in TRANSACTIONAL:
            named = transactional_name(config.run_id, PRODUCER)
            producer = transactional_settings(config, NOWHERE, PRODUCER, named)
        else:
            producer = producer_settings(config, NOWHERE, PRODUCER)
        checks.append(("producer", Producer, producer))
    if config.consumer_config:
        if config.workload in IN_A_GROUP:
            consumer = group_settings(
                NOWHERE, CONSUMER, "kchaos-check", config.group_commit, protocol=config.group_protocol,
                user=config.consumer_config,
            )  # fmt: skip
        else:
            consumer = consumer_settings(NOWHERE, CONSUMER, "kchaos-check", user=config.consumer_config)
        checks.append(("consumer", Consumer, consumer))
    for side, kind, settings in checks:
        try:
            client = kind({**settings, "log_level": 0})
        except (KafkaException, ValueError, TypeError) as exc:
            return f"{FLAGS[side]}: librdkafka refuses it: {_librdkafka_words(exc)}"
        if isinstance(client, Consumer):
            client.close()
        else:
            client.flush(0)
        del client
    return None


def _librdkafka_words(exc: Exception) -> str:
    """What librdkafka said, without confluent-kafka's wrapping (`KafkaError{code=...,str="..."}`)."""
    error = exc.args[0] if exc.args else None
    return error.str() if isinstance(error, KafkaError) else str(exc)


def _java_refusal(config: RunConfig, image: str, java_version: str) -> str | None:
    release = Release.parse(java_version)
    producer: dict[str, str] = {}
    consumer: dict[str, str] = {}
    if config.producer_config:
        build = java_transactional_settings if config.workload in TRANSACTIONAL else java_producer_settings
        producer = build(config, NOWHERE, PRODUCER, release)
    if config.consumer_config:
        if config.workload in IN_A_GROUP:
            consumer = java_member_settings(config, NOWHERE, CONSUMER, "kchaos-check", "read_committed")
        else:
            consumer = java_consumer_settings(
                NOWHERE, CONSUMER, "kchaos-check", "read_committed", config.consumer_config
            )
    for line in check_java_settings(image, config.run_id, producer, consumer):
        verdict, _, rest = line.partition(" ")
        side, _, said = rest.partition(" ")
        if side not in FLAGS:
            continue
        if verdict == "unknown":
            return (
                f"{FLAGS[side]}: kafka-clients {java_version} has no setting {said!r} (the Java client would "
                "ignore it with a warning); check its spelling in that release's documentation, or leave it "
                "out"
            )
        if verdict == "refused":
            return f"{FLAGS[side]}: kafka-clients {java_version} refuses it: {said}"
    return None
