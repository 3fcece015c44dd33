"""Transactional producers that are librdkafka processes (`--client librdkafka-process --workload txn`), each
in a container of its own, recorded from what the process prints exactly as the Java client's are.

The worker (kchaos/compose/rdkafka/txn_worker.py, `kchaos.mode=txn` of image
kchaos/rdkafka-client:<confluent-kafka version>) writes the in-process transactional workload's plan with
its error handling and speaks the Java transactional worker's line protocol, so the Java workload's
recorder, supervisor and shutdown are reused whole: only the client's settings (the in-process
transactional producer's, `transactional_settings`, as `name=value` arguments), the image and the rule that
judges a failed send (librdkafka's, `named_send_outcome`) differ. With `--txn-polls N` its transactions
poll too, with the in-process read-write transactions' consumer settings and plan
(kchaos/compose/rdkafka/transaction_polls.py).
"""

from __future__ import annotations

import logging

from kchaos.compose.rdkafka.transaction_polls import (
    POLLS_ARGUMENT,
    READ_SETTING_PREFIX,
    SUBSCRIBE,
    VIA_ARGUMENT,
)
from kchaos.harness.client_cluster import ClientCluster
from kchaos.model.config import RunConfig
from kchaos.model.events import transactional_name
from kchaos.model.history import HistoryWriter
from kchaos.workloads.in_harness.consumer import isolation_of
from kchaos.workloads.in_harness.read_write import read_write_settings
from kchaos.workloads.in_harness.transactions import transactional_settings
from kchaos.workloads.outcome import named_send_outcome
from kchaos.workloads.processes.java.transactions import JavaTransactionalWorkload, TransactionRecorder
from kchaos.workloads.processes.rdkafka.producer import WORKER_PREFIX, rdkafka_arguments
from kchaos.workloads.processes.worker_recorder import WorkerRecorder


class RdkafkaTransactionalWorkload(JavaTransactionalWorkload):
    """`producers` librdkafka transactional processes, each running its own seeded plan, together writing
    about `rate` records a second, as TransactionalWorkload's threads do."""

    log = logging.getLogger(__name__)

    def __init__(
        self,
        config: RunConfig,
        cluster: ClientCluster,
        history: HistoryWriter,
        image: str,
        kafka_version: str,
    ) -> None:
        """`image`: kchaos/harness/rdkafka_image.py's; `kafka_version`: the cluster's release."""
        super().__init__(config, cluster, history, image, kafka_version)

    def _recorder(self, process: str) -> WorkerRecorder:
        """The Java workload's recorder, judging a failed send by librdkafka's rule (`fail` only if never
        sent)."""
        reads = self._read_settings(process)
        return TransactionRecorder(
            process, self.topics[process], self.history, judge=named_send_outcome,
            isolation=isolation_of(reads),
            group=str(reads["group.id"]) if self.config.txn_polls_via == SUBSCRIBE else None,
        )  # fmt: skip

    def _read_settings(self, process: str) -> dict[str, object]:
        """The consumer settings of its read-write transactions' polls, the in-process ones'."""
        return read_write_settings(self.config, self.cluster.client_bootstrap, process)

    def _poll_arguments(self, process: str) -> list[str]:
        """The Java worker's, its consumer's settings spelled as librdkafka takes them."""
        if not self.config.txn_polls:
            return []
        reads = rdkafka_arguments(self._read_settings(process))
        return [
            f"{POLLS_ARGUMENT}={self.config.txn_polls}",
            f"{VIA_ARGUMENT}={self.config.txn_polls_via}",
            *(READ_SETTING_PREFIX + r for r in reads),
        ]

    def _command(self, n: int) -> list[str]:
        """The Java worker's own arguments (plan, pacing, drain, commit attempts) and the in-process
        transactional producer's librdkafka settings, its `transactional.id` the process's first name, kept
        by every restarted process so the new one fences the old."""
        worker = [arg for arg in super()._command(n) if arg.startswith(WORKER_PREFIX)]
        process = next(arg.partition("=")[2] for arg in worker if arg.startswith("kchaos.process="))
        settings = transactional_settings(
            self.config,
            self.cluster.client_bootstrap,
            process,
            transactional_name(self.config.run_id, process),
        )
        return [*worker, *rdkafka_arguments(settings)]
