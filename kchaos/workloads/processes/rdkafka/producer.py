"""Producers that are librdkafka processes (`--client librdkafka-process`), each in a container of its own,
recorded from what the process prints exactly as the Java client's are.

The worker (kchaos/compose/rdkafka/worker.py, in image kchaos/rdkafka-client:<confluent-kafka version>)
speaks the Java worker's line protocol, so the Java workload's recorder, supervisor and shutdown are reused
whole: only the command (the in-process producer's librdkafka settings, `producer_settings`, as
`name=value` arguments) and the image differ. Each line carries the worker's monotonic clock as its second
field, which the recorder gives its rows as their `time_ns`.
"""

from __future__ import annotations

import logging

from kchaos.harness.client_cluster import ClientCluster
from kchaos.model.config import RunConfig
from kchaos.model.history import HistoryWriter
from kchaos.workloads.in_harness.producer import producer_settings
from kchaos.workloads.outcome import named_send_outcome
from kchaos.workloads.processes.java.producer import JavaProducerWorkload
from kchaos.workloads.processes.worker_recorder import SendRecorder, WorkerRecorder

#: The worker's arguments that are its own rather than the client's: the Java worker's names.
WORKER_PREFIX = "kchaos."


def rdkafka_arguments(settings: dict[str, object]) -> list[str]:
    """librdkafka properties as the worker's `name=value` arguments (booleans as librdkafka spells them);
    the in-process logger stays behind: the worker's client logs to its stderr."""
    spelled = {
        name: (str(value).lower() if isinstance(value, bool) else str(value))
        for name, value in settings.items()
        if name != "logger"
    }
    return [f"{name}={value}" for name, value in spelled.items()]


class RdkafkaProducerWorkload(JavaProducerWorkload):
    """`producers` librdkafka processes sharing the configured rate, as ProducerWorkload's threads do."""

    log = logging.getLogger(__name__)

    def __init__(
        self,
        config: RunConfig,
        cluster: ClientCluster,
        history: HistoryWriter,
        image: str,
        kafka_version: str,
        limit: int | None = None,
    ) -> None:
        """`image`: kchaos/harness/rdkafka_image.py's; `kafka_version`: the cluster's release."""
        super().__init__(config, cluster, history, image, kafka_version, limit)

    def _recorder(self, process: str) -> WorkerRecorder:
        """The shared recorder, judging a failed send by librdkafka's rule (`fail` only if never sent)."""
        return SendRecorder(process, self.topics[process], self.history, judge=named_send_outcome)

    def _command(self, n: int) -> list[str]:
        worker = [arg for arg in super()._command(n) if arg.startswith(WORKER_PREFIX)]
        process = next(arg.partition("=")[2] for arg in worker if arg.startswith("kchaos.process="))
        settings = producer_settings(self.config, self.cluster.client_bootstrap, process)
        return [*worker, *rdkafka_arguments(settings)]
