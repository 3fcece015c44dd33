"""The network sidecar every node of a cluster runs in: it owns the node's network namespace.

It sits on the run's Docker network under the node's name and has NET_ADMIN, so the nemesis can install
iptables rules there; the node's server (a Kafka broker, or ZooKeeper) joins that namespace. Killing and
restarting the server then keeps the node's address, any published port and any rules, as a process
crash on a real host would.
"""

from __future__ import annotations

from testcontainers.core.container import DockerContainer
from testcontainers.core.network import Network


def network_sidecar(
    image: str, name: str, network: Network, hostname: str, labels: dict[str, str]
) -> DockerContainer:
    """A sidecar for node `hostname`, not yet started; a port can still be published on it."""
    return (
        DockerContainer(image, command="sleep infinity")
        .with_name(name)
        .with_network(network)
        .with_network_aliases(hostname)
        .with_kwargs(labels=labels, hostname=hostname, cap_add=["NET_ADMIN"], init=True)
    )


def in_namespace_of(
    image: str, name: str, sidecar: DockerContainer, labels: dict[str, str]
) -> DockerContainer:
    """A container of `image` that shares the started `sidecar`'s network namespace."""
    return (
        DockerContainer(image)
        .with_name(name)
        .with_kwargs(labels=labels, network_mode=f"container:{sidecar.get_wrapped_container().id}")
    )


def sidecar_ip(sidecar: DockerContainer, network: Network) -> str:
    """The started sidecar's address on the run's network: what iptables rules name it by."""
    container = sidecar.get_wrapped_container()
    container.reload()
    return str(container.attrs["NetworkSettings"]["Networks"][network.name]["IPAddress"])
