"""The assigned readers of `--workload sends` and `txn` as librdkafka processes (`--client
librdkafka-process`): the reader worker (kchaos/compose/rdkafka/reader_worker.py, `kchaos.mode=reader` of the
image kchaos/rdkafka-client:<confluent-kafka version>) with the in-process reader's settings
(`consumer_settings`, the isolation level `RunConfig.reader_isolation` gives each). What every reader
process shares, its recorder, restart, hold and release, is kchaos/workloads/processes/reader_processes.py.
"""

from __future__ import annotations

from typing import cast

from kchaos.model.events import IsolationLevel
from kchaos.workloads.in_harness.consumer import consumer_settings, reader_group
from kchaos.workloads.processes.rdkafka.producer import rdkafka_arguments
from kchaos.workloads.processes.reader_processes import ReaderProcesses


class RdkafkaReaderWorkload(ReaderProcesses):
    """`consumers` librdkafka readers of the whole topic, each a process of its own (`consumer-N`)."""

    def _command(self, name: str, isolation: str) -> list[str]:
        settings = consumer_settings(
            self.cluster.client_bootstrap, name, reader_group(self.config.run_id, name),
            cast(IsolationLevel, isolation), self.config.consumer_config,
        )  # fmt: skip
        return [
            *(f"{key}={value}" for key, value in self._worker(name).items()),
            *rdkafka_arguments(settings),
        ]
