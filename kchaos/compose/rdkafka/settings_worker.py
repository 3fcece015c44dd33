"""The check of a run's client settings as the librdkafka of this image takes them: `kchaos.mode=settings`
of the librdkafka worker (kchaos/compose/rdkafka/worker.py), run before any broker of the run starts
(kchaos/workloads/client_settings_check.py), since `--librdkafka-version` may name another librdkafka
than the harness's own.

Its arguments are `producer.NAME=VALUE` and `consumer.NAME=VALUE`, the settings the workload's first
producer and consumer would run with; for each side given it prints one line, as the Java client's check
(kchaos/compose/client/KchaosConfigCheck.java) does: `ok SIDE`, or `refused SIDE MESSAGE` with what
librdkafka said as the client was built. The container has no network; building a client connects to
nothing it could reach.
"""

from __future__ import annotations

from collections.abc import Mapping

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer

from kchaos.compose.rdkafka.eos_worker import split_clients


def verdict(side: str, build: type[Producer] | type[Consumer], settings: Mapping[str, object]) -> str:
    """`ok SIDE`, or `refused SIDE MESSAGE` in librdkafka's words, for a client of `settings`: the
    container's answer, and the harness's own for the librdkafka threads
    (kchaos/workloads/client_settings_check.py)."""
    try:
        client = build({**settings, "log_level": "0"})
    except (KafkaException, ValueError, TypeError) as exc:
        error = exc.args[0] if exc.args else None
        said = error.str() if isinstance(error, KafkaError) else str(exc)
        return f"refused {side} {' '.join(said.split())}"
    if isinstance(client, Consumer):
        client.close()
    return f"ok {side}"


def run(worker: dict[str, str], settings: dict[str, str]) -> int:  # pragma: no cover - in the container
    consumer, producer = split_clients(settings)
    if producer:
        print(verdict("producer", Producer, producer), flush=True)
    if consumer:
        print(verdict("consumer", Consumer, consumer), flush=True)
    return 0
