"""Producers that are the release's Java client (`--client java`), each a process in a container of its
own, recorded from what the process prints.

The worker (kchaos/compose/client/KchaosProducer.java) makes the same sends as the librdkafka producers
(kchaos/workloads/in_harness/producer.py): values `<process>-<sequence>`, key the same, partition the sequence
modulo the partitions, at the run's rate, with the same producer settings in the Java client's words. It
prints a line per event (`invoke` before each send(), then the client's callback), and a thread per worker
records each line as it arrives, so the history holds what the process acknowledged even if it dies. A send
whose outcome the process never printed (it died, or was stopped before its callback) is recorded `info`,
indeterminate, with the reason: it may have been written or not.
"""

from __future__ import annotations

import logging
from typing import ClassVar

from kchaos.harness.client_cluster import ClientCluster
from kchaos.harness.client_container import start_client
from kchaos.model.config import RunConfig
from kchaos.model.events import producer_process
from kchaos.model.history import HistoryWriter
from kchaos.model.releases import Release
from kchaos.model.written_topics import topics_by_process
from kchaos.workloads.processes.client_process import (
    EXIT_SLACK_S,
    START_TIMEOUT_S,
    STOPPED_REASON,
    ClientProcess,
)
from kchaos.workloads.processes.client_supervisor import ClientSupervisor
from kchaos.workloads.processes.worker_recorder import SendRecorder, WorkerRecorder

log = logging.getLogger(__name__)

#: The Java client's batch.size: the most bytes of one partition's records in one request. Not librdkafka's
#: 1 MB: the Java client takes a whole batch.size from its 32 MiB buffer.memory for each batch it opens, so
#: 1 MB batches on more than 32 partitions, held up by a failover, would leave sends waiting for memory.
BATCH_BYTES = 256 * 1024


def java_producer_settings(
    config: RunConfig, bootstrap: str, client_id: str, release: Release
) -> dict[str, str]:
    """The librdkafka producer's settings (kchaos/workloads/in_harness/producer.py) as the Java client of
    `release` spells them: librdkafka's message.timeout.ms is delivery.timeout.ms (2.1+, KIP-91; at least
    linger plus the request timeout, as the client requires); librdkafka retries until that timeout, as Java
    does by default from 2.1, so older clients are told to; a full buffer blocks a send up to the message
    timeout, as the librdkafka producer waits for room in its queue; a batch holds up to `BATCH_BYTES`, where
    Java's own default, 16 KiB, held a worker's unpaced sends to about 30,000/s on a busy two-core machine
    while the librdkafka process, whose batches hold up to 1 MB, did three times that."""
    linger_ms = 5
    settings = {
        "bootstrap.servers": bootstrap,
        "client.id": client_id,
        "acks": config.acks,
        "request.timeout.ms": str(config.request_timeout_ms),
        "linger.ms": str(linger_ms),
        "batch.size": str(BATCH_BYTES),
        "retry.backoff.ms": "100",
        "max.block.ms": str(config.message_timeout_ms),
    }
    if release.idempotent_producer:
        settings["enable.idempotence"] = str(bool(config.idempotence)).lower()
    if release.delivery_timeout:
        delivery = max(config.message_timeout_ms, linger_ms + config.request_timeout_ms)
        settings["delivery.timeout.ms"] = str(delivery)
    else:
        settings["retries"] = str(2**31 - 1)
    # The user's own (--producer-config), last: none is a key kchaos sets for a reason of its own.
    return {**settings, **config.producer_config}


class JavaProducerWorkload:
    """`producers` Java client processes sharing the configured rate, as ProducerWorkload's threads do."""

    #: Each client's workload logs under its own module's name, so a librdkafka line never reads as Java's.
    log: ClassVar[logging.Logger] = log

    def __init__(
        self,
        config: RunConfig,
        cluster: ClientCluster,
        history: HistoryWriter,
        image: str,
        version: str,
        limit: int | None = None,
    ) -> None:
        """`image`: the client image (kchaos/harness/client_image.py) of kafka-clients `version`; `limit`:
        sends to make in all, split among the producers (a benchmark's record count)."""
        self.config = config
        self.cluster = cluster
        self.history = history
        self.image = image
        self.release = Release.parse(version)
        self.limit = limit
        self.producers: list[ClientProcess] = []
        #: The topic each producer writes (`--topics`).
        self.topics = topics_by_process(
            [producer_process(n) for n in range(config.producers)], config.topic, config.topics
        )
        #: Restarts a worker that dies while the run goes on, as an application's supervisor would.
        self.supervisor = ClientSupervisor(self, self._command, self._recorder)

    def _recorder(self, process: str) -> WorkerRecorder:
        """What records worker `process`'s lines (a transactional worker's differ)."""
        return SendRecorder(process, self.topics[process], self.history)

    def _exit_wait(self) -> float:
        """Seconds a stopped worker may take to exit: its drain (`kchaos.drain.ms`) and the slack."""
        return self.config.message_timeout_ms / 1000 + 2 + EXIT_SLACK_S

    def _command(self, n: int) -> list[str]:
        config = self.config
        process = producer_process(n)
        limit = self.limit
        share = None if limit is None else limit // config.producers + int(n < limit % config.producers)
        worker = {
            "kchaos.process": process,
            "kchaos.topic": self.topics[process],
            "kchaos.partitions": str(config.partitions),
            "kchaos.interval.us": str(round(config.producers / config.rate * 1e6) if config.rate > 0 else 0),
            "kchaos.drain.ms": str(config.message_timeout_ms + 2000),
            **({} if share is None else {"kchaos.limit": str(share)}),
        }
        settings = java_producer_settings(config, self.cluster.client_bootstrap, process, self.release)
        return [f"{name}={value}" for name, value in {**worker, **settings}.items()]

    def start(self) -> None:
        """Starts every worker and waits until each has its client (its `started` line)."""
        for n in range(self.config.producers):
            client = start_client(self.cluster, self.image, producer_process(n), self._command(n))
            self.producers.append(ClientProcess(self._recorder(producer_process(n)), client))
        for producer in self.producers:
            producer.await_start(START_TIMEOUT_S)
        self.supervisor.start()

    def stop(self) -> None:
        """Stops every worker (SIGTERM: it drains up to the message timeout), records what each left
        outstanding as indeterminate, keeps its stderr in the run's logs and removes its container."""
        self.supervisor.stop()  # no worker is restarted once they are being stopped
        for producer in self.producers:
            producer.stopping = True
            producer.client.terminate()
        wait = self._exit_wait()
        for producer in self.producers:
            producer.thread.join(wait)
            if producer.thread.is_alive():
                self.log.warning(
                    "%s still running %.0fs after SIGTERM; killing it", producer.recorder.process, wait
                )
                producer.client.kill()
                producer.thread.join(EXIT_SLACK_S)
                producer.client.close()
                producer.thread.join(EXIT_SLACK_S)
            producer.recorder.abandon(STOPPED_REASON)
            logs = self.history.files.logs
            logs.mkdir(parents=True, exist_ok=True)
            (logs / f"{producer.recorder.process}.log").write_bytes(producer.client.stderr())
            producer.client.remove()
        self.producers = []
