"""iptables rules inside nodes' network namespaces, removed exactly as they were added.

Rules are installed in each node's network namespace (through its sidecar in Docker, which has NET_ADMIN
and shares it; as root on an SSH node, whose namespace is the machine's), tagged with a comment naming the
run and the fault (`kchaos:<run id>:<fault key>`), and remembered; healing deletes precisely those rules,
so two faults on one node never undo each other, and removing a run's installation from a machine deletes
every rule the run left there by that comment (`kchaos.harness.ssh_install`), nobody else's.
"""

from __future__ import annotations

from kchaos.harness.cluster import KafkaCluster
from kchaos.harness.cluster_error import ClusterError
from kchaos.harness.kafka_node import KafkaNode


class NodeRules:
    """The rules one fault added to one node. `rules` is the explicit state healing works from."""

    def __init__(self, node: KafkaNode, tag: str) -> None:
        self.node = node
        self.tag = f"kchaos:{tag}"
        self.rules: list[list[str]] = []

    def add(self, chain: str, *match: str) -> None:
        rule = [chain, *match, "-m", "comment", "--comment", self.tag, "-j", "DROP"]
        self.node.network_exec(["iptables", "-w", "-A", *rule])
        self.rules.append(rule)

    def remove_all(self) -> None:
        """Deletes every rule this object added; a rule already gone (its node removed) is not an error."""
        while self.rules:
            rule = self.rules[-1]
            try:
                self.node.network_exec(["iptables", "-w", "-D", *rule])
            except ClusterError as exc:
                if "does a matching rule exist" not in str(exc) and "No such" not in str(exc):
                    raise
            self.rules.pop()


class Cuts:
    """Links one fault cut, across any number of nodes; each rule lives on the node whose traffic it drops."""

    def __init__(self, cluster: KafkaCluster, tag: str) -> None:
        self.cluster = cluster
        self.tag = tag
        self.by_node: dict[int, NodeRules] = {}
        self.links: list[tuple[int, int]] = []
        #: Brokers cut off from the ZooKeeper node (not links: ZooKeeper is no broker).
        self.off_zookeeper: list[int] = []

    def _rules(self, node_id: int) -> NodeRules:
        if node_id not in self.by_node:
            self.by_node[node_id] = NodeRules(self.cluster.node(node_id), f"{self.cluster.run_id}:{self.tag}")
        return self.by_node[node_id]

    def cut(self, a: int, b: int) -> None:
        """No packet between nodes a and b, either way (installed on a: what a sends and receives)."""
        ip = self.cluster.node(b).ip
        self._rules(a).add("INPUT", "-s", ip)
        self._rules(a).add("OUTPUT", "-d", ip)
        self.links += [(a, b), (b, a)]

    def drop(self, source: int, destination: int, source_port: int | None = None) -> None:
        """Packets from `source` to `destination` are lost (only those sent from `source_port`, if given:
        what `source` answers on that listener); the other direction still flows."""
        match = ["-d", self.cluster.node(destination).ip]
        if source_port is not None:
            match += ["-p", "tcp", "--sport", str(source_port)]
        self._rules(source).add("OUTPUT", *match)
        self.links.append((source, destination))

    def cut_port(self, server: int, client: int, port: int) -> None:
        """`client` can no longer talk to `server` on one TCP port; every other port still works."""
        ip = self.cluster.node(client).ip
        self._rules(server).add("INPUT", "-s", ip, "-p", "tcp", "--dport", str(port))
        self._rules(server).add("OUTPUT", "-d", ip, "-p", "tcp", "--sport", str(port))
        self.links.append((server, client))

    def block_port(self, server: int, port: int) -> None:
        """Nothing reaches `server` on this TCP port (used for the client listener)."""
        self._rules(server).add("INPUT", "-p", "tcp", "--dport", str(port))

    def cut_from_zookeeper(self, node_id: int) -> None:
        """No packet between node `node_id` and the cluster's ZooKeeper node, if it has one: the broker
        can no longer keep its session, as a broker cut off from the whole cluster could not."""
        zookeeper = self.cluster.zookeeper
        if zookeeper is None:
            return
        self._rules(node_id).add("INPUT", "-s", zookeeper.ip)
        self._rules(node_id).add("OUTPUT", "-d", zookeeper.ip)
        self.off_zookeeper.append(node_id)

    def cut_address(self, node_id: int, ip: str) -> None:
        """No packet between node `node_id` and the container at `ip` (a client process on the run's
        network), either way. Installed on the node, so the client's container needs no privilege."""
        self._rules(node_id).add("INPUT", "-s", ip)
        self._rules(node_id).add("OUTPUT", "-d", ip)

    def separate(self, side_a: list[int], side_b: list[int]) -> None:
        for a in side_a:
            for b in side_b:
                self.cut(a, b)

    def remove_all(self) -> None:
        for rules in self.by_node.values():
            rules.remove_all()
        self.by_node.clear()
        self.links.clear()
        self.off_zookeeper.clear()
