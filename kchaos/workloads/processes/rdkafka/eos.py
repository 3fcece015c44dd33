"""Consume-transform-produce processors that are librdkafka processes (`--client librdkafka-process
--workload eos`), each in a container of its own, recorded from what the process prints exactly as the Java
client's are.

The worker (kchaos/compose/rdkafka/eos_worker.py, `kchaos.mode=eos` of the image
kchaos/rdkafka-client:<confluent-kafka version>) speaks the Java processor's line protocol, so the Java
workload's recorder, supervisor, crash, shutdown and catch-up wait are reused whole
(kchaos/workloads/processes/java/eos.py): only the image, the command (the mode, and the in-process
processor's two clients' librdkafka settings, `group_settings` and `transactional_settings`, as `consumer.X`
and `producer.X`) and the rule that judges a failed output record (by librdkafka's error name) differ.
"""

from __future__ import annotations

from kchaos.harness.client_cluster import ClientCluster
from kchaos.model.config import RunConfig
from kchaos.model.events import READ_COMMITTED, processor_process, transactional_name
from kchaos.model.history import HistoryWriter
from kchaos.workloads.in_harness.eos import TRANSACTION_MODE
from kchaos.workloads.in_harness.group_consumer import group_settings
from kchaos.workloads.in_harness.transactions import transactional_settings
from kchaos.workloads.outcome import named_commit_outcome, named_send_outcome
from kchaos.workloads.processes.java.eos import JavaEosWorkload, ProcessorRecorder
from kchaos.workloads.processes.member_processes import MemberProcesses
from kchaos.workloads.processes.member_recorder import MemberRecorder
from kchaos.workloads.processes.rdkafka.producer import rdkafka_arguments

#: The worker's mode (`kchaos.mode`) that is an eos processor.
EOS_MODE = "eos"


class RdkafkaEosWorkload(JavaEosWorkload):
    """`consumers` librdkafka processors reading the input topic in one group and writing its output topic
    in transactions, each a process of its own."""

    #: No Java main class: the image's entrypoint picks the worker by the `kchaos.mode` argument.
    main_class = None  # type: ignore[assignment]

    def __init__(self, config: RunConfig, cluster: ClientCluster, history: HistoryWriter, image: str) -> None:
        """No Java client release: the processors are the confluent-kafka this kchaos runs with."""
        MemberProcesses.__init__(
            self, config, cluster, history, image, [processor_process(i) for i in range(config.consumers)]
        )

    def _command(self, name: str, isolation: str) -> list[str]:
        config = self.config
        bootstrap = self.cluster.client_bootstrap
        consumer = group_settings(
            bootstrap, name, self.group, TRANSACTION_MODE, READ_COMMITTED, config.group_protocol,
            config.consumer_config,
        )  # fmt: skip
        producer = transactional_settings(config, bootstrap, name, transactional_name(config.run_id, name))
        return [
            *(f"{k}={v}" for k, v in {"kchaos.mode": EOS_MODE, **self._worker(name)}.items()),
            *(f"consumer.{arg}" for arg in rdkafka_arguments(consumer)),
            *(f"producer.{arg}" for arg in rdkafka_arguments(producer)),
        ]

    def _recorder(self, name: str, isolation: str) -> MemberRecorder:
        """The shared recorder, judging a failed output record and commit by librdkafka's rules."""
        recorder = super()._recorder(name, isolation)
        recorder.commit_judge = named_commit_outcome
        if isinstance(recorder, ProcessorRecorder) and recorder.transactions is not None:
            recorder.transactions.judge = named_send_outcome
        return recorder
