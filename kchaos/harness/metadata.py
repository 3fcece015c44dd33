"""The cluster's metadata as its brokers believe it: who leads each partition, who is in sync, which brokers
are registered and which node is the active controller (the KRaft quorum's leader, or in ZooKeeper mode the
broker ZooKeeper elected).

Every question is asked of the nodes themselves, each by a client of its own (side by side, since a node
that does not answer holds its client for the whole timeout), because under a fault they disagree: an
isolated broker still believes it leads while the majority has elected another. So each answer is a view
that says whose belief it is (`MetadataView.answered_by`), and the questions across nodes (`leader_of`,
`leaderless`, `is_recovered`) say what they make of silence and disagreement.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Protocol

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient
from confluent_kafka.admin import ClusterMetadata as ClientMetadata  # type: ignore[attr-defined]

from kchaos.harness.cluster_error import ClusterError
from kchaos.model.releases import MetadataMode
from kchaos.model.waiting import WaitTimeout, wait_until


@dataclass(frozen=True)
class PartitionState:
    partition: int
    leader: int  # -1 when the partition has no leader
    replicas: tuple[int, ...]
    isr: tuple[int, ...]


@dataclass(frozen=True)
class MetadataView:
    """One broker's view of the cluster: whom it knows and who leads what, as that broker believes it."""

    answered_by: int
    brokers: frozenset[int]
    partitions: dict[int, PartitionState]

    def leader_of(self, partition: int) -> int:
        return self.partitions[partition].leader if partition in self.partitions else -1


#: Kafka's internal topics whose partitions' leaders are the coordinators: of consumer groups (their
#: offsets and membership) and of transactions (their state).
GROUP_OFFSETS_TOPIC = "__consumer_offsets"
TRANSACTION_STATE_TOPIC = "__transaction_state"


def java_string_hash(text: str) -> int:
    """Java's `String.hashCode` of `text` (over UTF-16 code units, as a signed 32-bit int)."""
    h = 0
    encoded = text.encode("utf-16-be")
    for i in range(0, len(encoded), 2):
        h = (31 * h + int.from_bytes(encoded[i : i + 2], "big")) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def coordinator_partition(key: str, partitions: int) -> int:
    """The partition of an internal topic that owns a group id or transactional id, as brokers place it:
    `Utils.abs(key.hashCode) % partitions`, where `Utils.abs` maps the one int with no positive opposite
    to 0. Its leader is the key's coordinator."""
    h = java_string_hash(key)
    return (0 if h == -(1 << 31) else abs(h)) % partitions


#: How many fresh clients `answer_of` tries before it gives up on a node's own answer. A client
#: bootstrapped on one node sends its request to another node it has learned about about half the time
#: (541 of 1,125 requests on a 3-node 4.3.1 cluster): with 3 tries about one node in twelve went
#: unheard, and now and then all three, which reads as "no leader". Each try takes about 55 ms; a node
#: that does not answer at all ends the tries at once.
ANSWER_ATTEMPTS = 10


#: Where the quorum tool's client settings are written inside a node, and what they are: timeouts of
#: seconds rather than the admin client's minute (see `ClusterMetadata._quorum_leader`).
QUORUM_TOOL_CONFIG = "/tmp/kchaos-quorum-tool.properties"
#: Kafka's tool for the KRaft quorum (`kafka-metadata-quorum`).
QUORUM_TOOL = "org.apache.kafka.tools.MetadataQuorumCommand"
QUORUM_TOOL_TIMEOUTS = "request.timeout.ms=3000 default.api.timeout.ms=6000"


class MetadataNode(Protocol):
    """What the questions need of a node: its addresses, whether it runs, and its Kafka tools."""

    @property
    def bootstrap(self) -> str: ...

    @property
    def controller_address(self) -> str: ...

    @property
    def state(self) -> str: ...

    def run_tool(self, *args: str) -> str: ...

    def kafka_exec(self, command: Sequence[str]) -> str: ...


def quorum_status(node: MetadataNode) -> str:
    """What `kafka-metadata-quorum describe --status`, run on `node` against its own controller listener,
    says of the KRaft quorum (its leader, voters and observers); ClusterError if it cannot tell.

    The tool's admin client may send its request to any controller it learned of, a dead one too, and
    then waits out its API timeout (60 s) before it gives up: measured on 3.9.2, a killed quorum leader
    was replaced in 3 s by the controllers' own logs, and named by the tool 63 s later. Its timeouts are
    cut to seconds, so an answer that does not come is asked again, of a node that can give it.
    """
    node.kafka_exec(["sh", "-c", f"printf '%s\\n' {QUORUM_TOOL_TIMEOUTS} > {QUORUM_TOOL_CONFIG}"])
    return node.run_tool(
        QUORUM_TOOL, "--command-config", QUORUM_TOOL_CONFIG,
        "--bootstrap-controller", node.controller_address, "describe", "--status",
    )  # fmt: skip


class ClusterMetadata:
    """Answers metadata questions about the nodes it is given, asking them as they are at each call.

    `nodes` is the cluster's own mapping of brokers, shared rather than copied: nodes join it as they
    start, and a node's `state` says whether the harness has stopped it. `mode` says where the cluster keeps
    its metadata, which decides how the active controller is found; `controllers` are the dedicated KRaft
    controllers (none when the brokers are the controllers too), which only the quorum question asks.
    """

    def __init__(
        self,
        nodes: Mapping[int, MetadataNode],
        mode: MetadataMode = "kraft",
        controllers: Mapping[int, MetadataNode] | None = None,
    ) -> None:
        self.nodes = nodes
        self.mode = mode
        self.controllers: Mapping[int, MetadataNode] = controllers if controllers is not None else {}

    def answer_of(self, node_id: int, topic: str | None, timeout: float = 3.0) -> ClientMetadata | None:
        """The metadata answer `node_id` itself gives (about `topic`, or every topic), None if it gives none.

        A fresh client bootstrapped on that node alone asks it, and the answering address is checked:
        during a partition the isolated broker and the majority disagree, and a check must know
        whose belief it is reading.
        """
        address = self.nodes[node_id].bootstrap
        for _ in range(ANSWER_ATTEMPTS):
            client = AdminClient({"bootstrap.servers": address, "log_level": 0})
            try:
                metadata = client.list_topics(topic, timeout=timeout)
            except KafkaException:
                return None  # no answer in time: callers poll, so a slow broker is asked again later
            # A bootstrap connection reports id -1, so the answering address is what identifies the broker.
            if str(metadata.orig_broker_name).rsplit("/", 1)[0] == address:
                return metadata
        return None

    def view_from(self, node_id: int, topic: str, timeout: float = 3.0) -> MetadataView | None:
        """What `node_id` believes about `topic`, or None if it does not answer."""
        metadata = self.answer_of(node_id, topic, timeout)
        if metadata is None:
            return None
        topic_meta = metadata.topics.get(topic)
        partitions: dict[int, PartitionState] = {}
        if topic_meta is not None and topic_meta.error is None:
            for pid, part in topic_meta.partitions.items():
                partitions[pid] = PartitionState(pid, part.leader, tuple(part.replicas), tuple(part.isrs))
        return MetadataView(node_id, frozenset(metadata.brokers), partitions)

    def replica_assignment(self, topic: str) -> dict[int, tuple[int, ...]]:
        """Each partition of `topic`'s replicas, in the order Kafka lists them (the preferred leader first),
        as the first node that answers describes them; empty if none does."""
        views = self.views(topic)
        if not views:
            return {}
        return {partition: state.replicas for partition, state in sorted(views[0].partitions.items())}

    def placements(self) -> dict[tuple[str, int], PartitionState]:
        """Every partition of every topic (internal ones too) as the first running node that answers
        describes it; empty if none does. What a broker being drained holds is found here: the run's topic,
        the group and transaction state, any topic created meanwhile."""
        for node_id, node in self.nodes.items():
            if node.state != "running":
                continue
            metadata = self.answer_of(node_id, None)
            if metadata is None:
                continue
            return {
                (name, pid): PartitionState(pid, part.leader, tuple(part.replicas), tuple(part.isrs))
                for name, topic in metadata.topics.items()
                if topic.error is None
                for pid, part in topic.partitions.items()
            }
        return {}

    def views(
        self, topic: str, node_ids: Sequence[int] | None = None, timeout: float = 3.0
    ) -> list[MetadataView]:
        """The views of the nodes that answer within `timeout`, of `node_ids` or else of every running node,
        in that order. The nodes are asked side by side: one after another, each silent node added its
        whole timeout to every poll (a cluster still booting answered its readiness poll 6 s late)."""
        ids = (
            node_ids
            if node_ids is not None
            else [n for n, node in self.nodes.items() if node.state == "running"]
        )
        if len(ids) <= 1:
            answers = [self.view_from(n, topic, timeout) for n in ids]
        else:
            with ThreadPoolExecutor(max_workers=len(ids), thread_name_prefix="metadata") as pool:
                answers = list(pool.map(lambda n: self.view_from(n, topic, timeout), ids))
        return [view for view in answers if view is not None]

    def leader_of(self, topic: str, partition: int, among: Sequence[int] | None = None) -> int:
        """The leader that the answering nodes agree on, or -1 if none answered or they disagree."""
        leaders = {view.leader_of(partition) for view in self.views(topic, among)}
        return leaders.pop() if len(leaders) == 1 else -1

    def coordinator(self, internal_topic: str, key: str) -> int:
        """The coordinator of a group (`GROUP_OFFSETS_TOPIC`, its group id) or of a transactional producer
        (`TRANSACTION_STATE_TOPIC`, its transactional id): the leader of the internal topic's partition
        that owns the key; -1 while the topic does not exist yet (Kafka creates it on first use) or the
        answering nodes disagree on that leader."""
        views = [view for view in self.views(internal_topic) if view.partitions]
        counts = {len(view.partitions) for view in views}
        if len(counts) != 1:
            return -1
        return self.leader_of(internal_topic, coordinator_partition(key, counts.pop()))

    def leaderless(self, topic: str, partition: int, among: Sequence[int]) -> bool:
        """Every node in `among` answers, and each reports `partition` with no leader.

        Not `leader_of(...) == -1`, which also means "no answer" or "they disagree". Survivors busy
        electing the successor of a killed active controller may not answer at all, seconds before the
        dead leader's session expires and its partitions really lose their leader.
        """
        views = self.views(topic, among)
        return len(views) == len(among) and all(
            partition in view.partitions and view.partitions[partition].leader < 0 for view in views
        )

    def active_controller(self, exclude: Collection[int] = ()) -> int:
        """The active controller, as the first running node not in `exclude` that can tell names it (a node
        cut off may still believe it leads).

        With KRaft it is the quorum leader, asked of the quorum itself (of a dedicated controller when the
        cluster has them: brokers then have no controller listener): brokers hide it from ordinary clients.
        In ZooKeeper mode it is the broker ZooKeeper elected, which every metadata answer names
        (`kafka-metadata-quorum` has no quorum to ask there).
        """
        asked = self.controllers or self.nodes
        for node_id, node in asked.items():
            if node.state != "running" or node_id in exclude:
                continue
            found = self._elected(node_id) if self.mode == "zookeeper" else self._quorum_leader(node)
            if found is not None:
                return found
        raise ClusterError("no running node could name the active controller")

    def _elected(self, node_id: int) -> int | None:
        """The controller `node_id`'s metadata answer names, None without an answer or a controller."""
        metadata = self.answer_of(node_id, None)
        return metadata.controller_id if metadata is not None and metadata.controller_id >= 0 else None

    @staticmethod
    def _quorum_leader(node: MetadataNode) -> int | None:
        """The KRaft quorum leader the node's `MetadataQuorumCommand` names, None if it cannot tell."""
        try:
            output = quorum_status(node)
        except ClusterError:
            return None
        for line in output.splitlines():
            if line.startswith("LeaderId:"):
                return int(line.split(":", 1)[1])
        return None

    def is_recovered(self, topic: str) -> bool:
        """Every node answers, knows all N brokers, and sees each partition led with all replicas in sync."""
        return not self.recovery_gaps(topic)

    def await_recovery(self, topic: str, timeout: float, what: str) -> None:
        """Waits up to `timeout` seconds for `is_recovered`; a WaitTimeout that says what the nodes still
        missed when it gave up, since "timed out" alone leaves a failed run with nothing to go on."""
        try:
            wait_until(lambda: self.is_recovered(topic), timeout, what)
        except WaitTimeout as exc:
            gaps = "; ".join(self.recovery_gaps(topic)[:6]) or "none left by the last look"
            raise WaitTimeout(f"{exc} (still missing: {gaps})") from None

    def recovery_gaps(self, topic: str) -> list[str]:
        """What keeps the cluster from being recovered, as each node sees it; empty once it is."""
        views = self.views(topic, list(self.nodes))
        answered = {view.answered_by for view in views}
        gaps = [f"node {n} does not answer" for n in self.nodes if n not in answered]
        for view in views:
            seen_by = f"node {view.answered_by} sees"
            if view.brokers != frozenset(self.nodes):
                gaps.append(f"{seen_by} brokers {sorted(view.brokers)}")
            if not view.partitions:
                gaps.append(f"{seen_by} no partition of {topic}")
            for partition, state in sorted(view.partitions.items()):
                if state.leader < 0:
                    gaps.append(f"{seen_by} {topic}-{partition} without a leader")
                elif set(state.isr) != set(state.replicas):
                    gaps.append(
                        f"{seen_by} {topic}-{partition} ISR {list(state.isr)} of {list(state.replicas)}"
                    )
        return gaps
