"""What a run's clients need of a cluster, whoever started it: where to bootstrap from, and for a client
that is a process in a container of its own, which network it joins and the addresses it dials there.

A cluster kchaos starts (`kchaos.harness.cluster.KafkaCluster`) puts its clients on the run's network and
names the brokers' internal listeners; one it did not start (`kchaos.harness.existing_cluster`) puts them
on the host's network, where the addresses the brokers advertise resolve as they do for kchaos. The
workloads are written against this, so either serves them.
"""

from __future__ import annotations

from typing import Protocol


class ClientCluster(Protocol):
    """The cluster as the run's clients see it."""

    @property
    def run_id(self) -> str: ...

    @property
    def bootstrap(self) -> str:
        """The addresses a client in kchaos's own process bootstraps from."""
        ...

    @property
    def name_prefix(self) -> str:
        """What the run's containers' names start with."""
        ...

    @property
    def client_network(self) -> str | None:
        """The Docker network a client container joins; None: the host's."""
        ...

    @property
    def client_bootstrap(self) -> str:
        """The addresses a client container bootstraps from, on `client_network`."""
        ...
