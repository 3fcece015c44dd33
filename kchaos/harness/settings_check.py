"""A client image's own check of a run's producer and consumer settings, before any broker of the run
starts: the Java client's (kchaos/compose/client/KchaosConfigCheck.java, its image's other main class) or
the librdkafka worker's (`kchaos.mode=settings`, kchaos/compose/rdkafka/settings_worker.py).

Either prints a line per side it was given: `ok SIDE`, `unknown SIDE NAME` (Java only: a name the client
would ignore) or `refused SIDE MESSAGE`. The container has no network, so nothing it builds reaches
anything, and carries the run's labels, so a harness killed while it runs leaves nothing a sweep misses.
"""

from __future__ import annotations

from collections.abc import Mapping

import docker

from kchaos.harness.labels import labels_for

#: The Java check's main class, in place of the client image's entrypoint's.
JAVA_CHECK_CLASS = "KchaosConfigCheck"
#: The librdkafka worker's mode that checks instead of working.
RDKAFKA_CHECK_MODE = "kchaos.mode=settings"


def settings_check_lines(
    image: str, run_id: str, producer: Mapping[str, str], consumer: Mapping[str, str], *, java: bool
) -> list[str]:
    """What the client of `image` says of `producer` and `consumer`: one line per side given."""
    engine = docker.from_env()
    entrypoint = list(engine.images.get(image).attrs["Config"]["Entrypoint"])
    if java:
        entrypoint[-1] = JAVA_CHECK_CLASS
    arguments = [
        *([] if java else [RDKAFKA_CHECK_MODE]),
        *(f"producer.{key}={value}" for key, value in producer.items()),
        *(f"consumer.{key}={value}" for key, value in consumer.items()),
    ]
    output = engine.containers.run(
        image, arguments, entrypoint=entrypoint, network_mode="none", labels=labels_for(run_id),
        remove=True, stdout=True, stderr=False,
    )  # fmt: skip
    return [line.strip() for line in bytes(output).decode("utf-8", "replace").splitlines() if line.strip()]
