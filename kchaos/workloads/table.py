"""Which classes drive a run: one row per (`--client`, `--workload`) pair the configuration accepts, each
building the run's writers and readers (`kchaos.workloads.roles`), and per client the image its processes
run. Adding a client or a workload is rows here (and its refusal in `kchaos.model.client_names` until every
pair has one); the runner only looks its pair up.

The three clients: `librdkafka`, threads of the harness (kchaos/workloads/in_harness/); `java` and
`librdkafka-process`, a process per client in a container of its own (kchaos/workloads/processes/), whose
assigned readers of `sends` and `txn` are processes too.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from kchaos.harness.client_cluster import ClientCluster
from kchaos.harness.client_image import ensure_client_image
from kchaos.harness.rdkafka_image import confluent_kafka_version, ensure_rdkafka_image
from kchaos.model.client_names import JAVA, LIBRDKAFKA, LIBRDKAFKA_PROCESS, Client, client_refusal
from kchaos.model.config import RunConfig
from kchaos.model.history import HistoryWriter
from kchaos.model.workload_names import EOS, GROUP, SENDS, TXN, Workload
from kchaos.workloads.in_harness.consumer import ConsumerWorkload
from kchaos.workloads.in_harness.eos import EosWorkload
from kchaos.workloads.in_harness.group_consumer import GroupWorkload
from kchaos.workloads.in_harness.producer import ProducerWorkload
from kchaos.workloads.in_harness.read_write import ReadWriteWorkload
from kchaos.workloads.in_harness.transactions import TransactionalWorkload
from kchaos.workloads.processes.java.eos import JavaEosWorkload
from kchaos.workloads.processes.java.group import JavaGroupWorkload
from kchaos.workloads.processes.java.producer import JavaProducerWorkload
from kchaos.workloads.processes.java.reader import JavaReaderWorkload
from kchaos.workloads.processes.java.transactions import JavaTransactionalWorkload
from kchaos.workloads.processes.rdkafka.eos import RdkafkaEosWorkload
from kchaos.workloads.processes.rdkafka.group import RdkafkaGroupWorkload
from kchaos.workloads.processes.rdkafka.producer import RdkafkaProducerWorkload
from kchaos.workloads.processes.rdkafka.reader import RdkafkaReaderWorkload
from kchaos.workloads.processes.rdkafka.transactions import RdkafkaTransactionalWorkload
from kchaos.workloads.roles import Readers, Writer


@dataclass(frozen=True)
class Setting:
    """What a row's factories build from: the run's configuration, its cluster and history, and for
    process-backed clients the image they run."""

    config: RunConfig
    cluster: ClientCluster
    history: HistoryWriter
    #: The client image (`CLIENT_IMAGES`); None for the in-harness client, which has none.
    client_image: str | None
    #: The Java client's release (`--java-client-version`, else the cluster's own).
    java_version: str
    #: The cluster's release, which librdkafka processes are told.
    kafka_version: str

    @property
    def image(self) -> str:
        """The client image of a process-backed client, as its workloads take it."""
        return str(self.client_image)


@dataclass(frozen=True)
class WorkloadRow:
    """How one client drives one workload: what builds its writers, and what its readers (built second)."""

    writer: Callable[[Setting], Writer]
    readers: Callable[[Setting], Readers]


def _threads_writing(s: Setting) -> Writer:
    return ProducerWorkload(s.config, s.cluster.bootstrap, s.history)


def _java_writing(s: Setting) -> Writer:
    return JavaProducerWorkload(s.config, s.cluster, s.history, s.image, s.java_version)


def _rdkafka_writing(s: Setting) -> Writer:
    return RdkafkaProducerWorkload(s.config, s.cluster, s.history, s.image, s.kafka_version)


def _java_readers(s: Setting) -> Readers:
    return JavaReaderWorkload(s.config, s.cluster, s.history, s.image)


def _rdkafka_readers(s: Setting) -> Readers:
    return RdkafkaReaderWorkload(s.config, s.cluster, s.history, s.image)


#: Every pair the configuration accepts (`kchaos.model.client_names.client_refusal`), and how it runs.
WORKLOADS: dict[tuple[Client, Workload], WorkloadRow] = {
    (LIBRDKAFKA, SENDS): WorkloadRow(
        _threads_writing, lambda s: ConsumerWorkload(s.config, s.cluster.bootstrap, s.history)
    ),
    (LIBRDKAFKA, TXN): WorkloadRow(
        lambda s: (ReadWriteWorkload if s.config.txn_polls else TransactionalWorkload)(
            s.config, s.cluster.bootstrap, s.history
        ),
        lambda s: ConsumerWorkload(s.config, s.cluster.bootstrap, s.history),
    ),
    (LIBRDKAFKA, GROUP): WorkloadRow(
        _threads_writing, lambda s: GroupWorkload(s.config, s.cluster.bootstrap, s.history)
    ),
    (LIBRDKAFKA, EOS): WorkloadRow(
        _threads_writing, lambda s: EosWorkload(s.config, s.cluster.bootstrap, s.history)
    ),
    (JAVA, SENDS): WorkloadRow(_java_writing, _java_readers),
    (JAVA, TXN): WorkloadRow(
        lambda s: JavaTransactionalWorkload(s.config, s.cluster, s.history, s.image, s.java_version),
        _java_readers,
    ),
    (JAVA, GROUP): WorkloadRow(
        _java_writing, lambda s: JavaGroupWorkload(s.config, s.cluster, s.history, s.image)
    ),
    (JAVA, EOS): WorkloadRow(
        _java_writing, lambda s: JavaEosWorkload(s.config, s.cluster, s.history, s.image, s.java_version)
    ),
    (LIBRDKAFKA_PROCESS, SENDS): WorkloadRow(_rdkafka_writing, _rdkafka_readers),
    (LIBRDKAFKA_PROCESS, TXN): WorkloadRow(
        lambda s: RdkafkaTransactionalWorkload(s.config, s.cluster, s.history, s.image, s.kafka_version),
        _rdkafka_readers,
    ),
    (LIBRDKAFKA_PROCESS, GROUP): WorkloadRow(
        _rdkafka_writing, lambda s: RdkafkaGroupWorkload(s.config, s.cluster, s.history, s.image)
    ),
    (LIBRDKAFKA_PROCESS, EOS): WorkloadRow(
        _rdkafka_writing, lambda s: RdkafkaEosWorkload(s.config, s.cluster, s.history, s.image)
    ),
}

#: What builds each client's image from the client's release (`client_release`), before any container
#: starts (so a failed build costs no cluster); None for the in-harness client.
CLIENT_IMAGES: dict[Client, Callable[[str], str] | None] = {
    LIBRDKAFKA: None,
    JAVA: ensure_client_image,
    LIBRDKAFKA_PROCESS: ensure_rdkafka_image,
}


def client_release(config: RunConfig, kafka_version: str) -> str:
    """The release of the run's client: the Java client's (`--java-client-version`, else `kafka_version`,
    the cluster's own), or confluent-kafka's (`--librdkafka-version` for the processes, else the one kchaos
    runs with, which the threads always are)."""
    if config.client == JAVA:
        return config.java_client_version or kafka_version
    return config.librdkafka_version or confluent_kafka_version()


def client_image(client: Client, release: str) -> str | None:
    """Builds `client`'s image of `release` (`client_release`) when it is missing or stale
    (`CLIENT_IMAGES`); returns its tag, or None for the in-harness client."""
    build = CLIENT_IMAGES[client]
    return build(release) if build is not None else None


def workload_row(client: Client, workload: Workload) -> WorkloadRow:
    """The row of `client` driving `workload`; a ValueError saying why (the configuration's own refusal)
    for a pair no row has."""
    row = WORKLOADS.get((client, workload))
    if row is None:
        raise ValueError(
            client_refusal(client, workload) or f"client: --client {client} has no --workload {workload}"
        )
    return row
