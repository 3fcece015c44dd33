"""What the request proxy costs a producer on a real broker: the same writes with and without it.

    flock /tmp/kchaos-cluster.lock .venv/bin/python -m bench.proxy_writes --proxy [--records 200000]
    flock /tmp/kchaos-cluster.lock .venv/bin/python -m bench.proxy_writes [--records 200000]

Starts one 4.3.1 node (with `--proxy`, its request proxy in front of its listeners, as a run that plans a
request fault gets, with no rule set), writes `--records` records of 100 bytes with an idempotent acks=all
producer as fast as it takes them, and prints one JSON line: the seconds from the first send to the last
acknowledgement and the rate. Time two calls side by side (with and without `--proxy`, alternately) and
compare their `writes_per_s`: the issue's goal is 0.9x or better. `bench/request_proxy.py` measures the
proxy alone against a fake broker, where nothing else bounds it.
"""

from __future__ import annotations

import argparse
import json
import secrets
import time
from collections.abc import Mapping
from typing import Any

from confluent_kafka import Producer

from kchaos.harness.cluster import KafkaCluster
from kchaos.harness.image import ensure_kafka_image, sidecar_image

TOPIC = "bench"


def _ignore(node_id: int, event: Mapping[str, Any]) -> None:
    """No rule is set, so the proxy reports nothing that matters here."""


def write(cluster: KafkaCluster, records: int) -> float:
    """Seconds from the first send of `records` records to the last acknowledgement."""
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "enable.idempotence": True, "acks": "all",
                         "linger.ms": 5, "log_level": 0})  # fmt: skip
    value = b"x" * 100
    acknowledged = 0

    def delivered(error: object, message: object) -> None:
        nonlocal acknowledged
        acknowledged += error is None

    producer.produce(TOPIC, value)  # connect and learn the leader before the clock starts
    producer.flush(30)
    started = time.monotonic()
    for _ in range(records):
        while True:
            try:
                producer.produce(TOPIC, value, on_delivery=delivered)
                break
            except BufferError:
                producer.poll(0.05)
        producer.poll(0)
    producer.flush(120)
    took = time.monotonic() - started
    if acknowledged != records:
        raise SystemExit(f"only {acknowledged} of {records} writes were acknowledged")
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--proxy", action="store_true", help="write through the node's request proxy")
    parser.add_argument("--records", type=int, default=200_000)
    options = parser.parse_args()
    cluster = KafkaCluster(
        run_id=f"bench-proxy-{secrets.token_hex(3)}", image=ensure_kafka_image("4.3.1", log=False),
        sidecar_image=sidecar_image(), size=1, proxy_events=_ignore if options.proxy else None,
    )  # fmt: skip
    with cluster:
        cluster.create_topic(TOPIC, 1, 1, 1)
        took = write(cluster, options.records)
    print(json.dumps({"proxy": options.proxy, "records": options.records, "seconds": round(took, 3),
                      "writes_per_s": round(options.records / took)}))  # fmt: skip


if __name__ == "__main__":
    main()
