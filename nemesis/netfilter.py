"""iptables rules inside one node's network namespace, removed exactly as they were added.

Rules are installed through the node's sidecar (it has NET_ADMIN and shares the namespace), tagged with
the fault's key, and remembered; healing deletes precisely those rules, so two faults on one node never
undo each other and nothing outside the node's namespace is ever touched.
"""

from __future__ import annotations

from harness.cluster import ClusterError, KafkaNode


class NodeRules:
    """The rules one fault added to one node. `rules` is the explicit state healing works from."""

    def __init__(self, node: KafkaNode, tag: str) -> None:
        self.node = node
        self.tag = f"kchaos:{tag}"
        self.rules: list[list[str]] = []

    def add(self, chain: str, *match: str) -> None:
        rule = [chain, *match, "-m", "comment", "--comment", self.tag, "-j", "DROP"]
        self.node.sidecar_exec(["iptables", "-w", "-A", *rule])
        self.rules.append(rule)

    def drop_from(self, ip: str) -> None:
        self.add("INPUT", "-s", ip)

    def drop_to(self, ip: str) -> None:
        self.add("OUTPUT", "-d", ip)

    def remove_all(self) -> None:
        """Deletes every rule this object added; a rule already gone (its node removed) is not an error."""
        while self.rules:
            rule = self.rules[-1]
            try:
                self.node.sidecar_exec(["iptables", "-w", "-D", *rule])
            except ClusterError as exc:
                if "does a matching rule exist" not in str(exc) and "No such" not in str(exc):
                    raise
            self.rules.pop()
