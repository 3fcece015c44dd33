"""The assigned readers of `--workload sends` and `txn` as Java client processes (`--client java`):
`consumer-N`, each in a container of its own, so the nemesis can kill, freeze or cut off a reader of the
Java client (`target=consumer-N`) as it does its producers.

The worker (kchaos/compose/client/KchaosReader.java, `kchaos.mode=reader` of the client image) prints the
librdkafka reader worker's lines, so everything else is what every reader process shares
(kchaos/workloads/processes/reader_processes.py): the recorder and its rows, the restart of a reader that
died from the positions it recorded, holding and releasing by signal. Only the client's settings differ:
the in-process reader's (`consumer_settings`) in the Java client's words (`java_consumer_settings`).
"""

from __future__ import annotations

from kchaos.workloads.in_harness.consumer import reader_group
from kchaos.workloads.processes.java.group import java_consumer_settings
from kchaos.workloads.processes.reader_processes import ReaderProcesses


class JavaReaderWorkload(ReaderProcesses):
    """`consumers` Java client readers of the whole topic, each a process of its own (`consumer-N`)."""

    def _command(self, name: str, isolation: str) -> list[str]:
        settings = java_consumer_settings(
            self.cluster.client_bootstrap, name, reader_group(self.config.run_id, name), isolation,
            self.config.consumer_config,
        )  # fmt: skip
        return [f"{key}={value}" for key, value in {**self._worker(name), **settings}.items()]
