"""Kafka's own VerifiableProducer and VerifiableConsumer, run on a real cluster, checked by kchaos.

The tools run inside a broker container (our image ships the kafka-tools jar), talk to the cluster over
its internal listener, and their stdout is converted and checked exactly as `kchaos check --format
verifiable` does. A healthy cluster with acks=all must lose nothing, and the converted history must count
what the tools themselves printed.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kchaos.checkers.importers.verifiable import convert, verifiable_inputs
from kchaos.harness.cluster import KafkaCluster
from kchaos.harness.kafka_node import INTERNAL_PORT
from kchaos.model.config import DEFAULT_SPARK_MASTER
from kchaos.runner.outcome import check_and_report
from kchaos.runner.pytest_plugin import ClusterFactory

pytestmark = pytest.mark.cluster

TOPIC = "verifiable"
PARTITIONS = 3
PRODUCERS = 2
MESSAGES_PER_PRODUCER = 1000
#: VerifiableConsumer stops only after --max-messages records; if something is wrong it would wait forever.
CONSUMER_TIMEOUT_S = 240


@pytest.fixture(scope="module")
def cluster(kafka_cluster_factory: ClusterFactory) -> Iterator[KafkaCluster]:
    with kafka_cluster_factory.started("verifiable", topic=TOPIC, partitions=PARTITIONS) as cluster:
        yield cluster


def events(output: str) -> list[dict[str, Any]]:
    """The tool's JSON events, read independently of the converter (which must agree with this)."""
    return [json.loads(line) for line in output.splitlines() if line.startswith("{")]


def test_verifiable_tools_on_a_healthy_cluster_lose_nothing(cluster: KafkaCluster, tmp_path: Path) -> None:
    node = cluster.nodes[1]
    bootstrap = ",".join(f"{n.hostname}:{INTERNAL_PORT}" for n in cluster.nodes.values())
    producer_logs = []
    acked_lines = 0
    for prefix in range(1, PRODUCERS + 1):
        output = node.run_tool(
            "org.apache.kafka.tools.VerifiableProducer", "--bootstrap-server", bootstrap, "--topic", TOPIC,
            "--max-messages", str(MESSAGES_PER_PRODUCER), "--acks", "-1", "--value-prefix", str(prefix),
            # Keyed records spread over every partition; unkeyed ones stick to one partition per batch.
            "--repeating-keys", "30",
        )  # fmt: skip
        printed = events(output)
        acked = [e for e in printed if e["name"] == "producer_send_success"]
        assert len(acked) == MESSAGES_PER_PRODUCER, output[-2000:]
        tool_data = [e for e in printed if e["name"] == "tool_data"]
        assert tool_data and tool_data[-1]["acked"] == len(acked)
        acked_lines += len(acked)
        path = tmp_path / f"producer-{prefix}.out"
        path.write_text(output, encoding="utf-8")
        producer_logs.append(path)

    # `timeout` (its own child, by pid) stops the consumer if it never reaches --max-messages; SIGTERM runs
    # the tool's shutdown hook, so its output stays whole. stderr (the tool's logging) is left out.
    consumer_output = node.kafka_exec(
        ["sh", "-c", 'exec timeout "$0" kafka-class "$@" 2>/dev/null', str(CONSUMER_TIMEOUT_S),
         "org.apache.kafka.tools.VerifiableConsumer", "--bootstrap-server", bootstrap, "--topic", TOPIC,
         "--group-id", "kchaos-verifiable", "--max-messages", str(acked_lines), "--verbose",
         "--reset-policy", "earliest"]
    )  # fmt: skip
    consumer_log = tmp_path / "consumer-1.out"
    consumer_log.write_text(consumer_output, encoding="utf-8")
    printed = events(consumer_output)
    consumed = sum(
        int(p["count"]) for e in printed if e["name"] == "records_consumed" for p in e["partitions"]
    )
    assert consumed == acked_lines
    assert any(e["name"] == "partitions_assigned" for e in printed)

    run_dir = tmp_path / "runs" / "verifiable-tools"
    conversion = convert(
        producer_logs, [consumer_log], run_dir, verifiable_inputs(acks="all", min_insync_replicas=2,
                                                                  replication_factor=3)
    )  # fmt: skip
    assert conversion.total("sends_acknowledged") == acked_lines
    assert conversion.total("records") == conversion.total("records_consumed") == consumed
    assert conversion.total("sends_indeterminate") == conversion.total("sends_failed") == 0
    assert conversion.total("unknown_events") == 0

    outcome = check_and_report(run_dir, DEFAULT_SPARK_MASTER)
    summary = outcome.results["summary"]
    assert summary["sends_acknowledged"] == acked_lines == PRODUCERS * MESSAGES_PER_PRODUCER
    assert summary["records_read_poll"] == consumed
    assert summary["partitions_read"] == PARTITIONS
    assert outcome.count("lost-write") == 0
    assert outcome.count("unseen") == 0
    assert outcome.verdict == "ok", json.dumps(outcome.results["anomalies"], indent=1)[:4000]
    assert outcome.report.exists()
