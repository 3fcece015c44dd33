"""KRaft voters taken out of the controller quorum and put in: `remove-voter` and `add-voter` (KIP-853).

Since Kafka 3.9 a quorum's voters can change while it runs: `kafka-metadata-quorum remove-controller` takes a
voter out (it goes on as an observer, replicating the metadata log without a vote), and `add-controller`, run
on the node with its own configuration, makes it a voter again. kchaos starts its quorums static (the voters
listed in `controller.quorum.voters`) unless `--quorum dynamic`, so the faults first make the quorum
dynamic, as an operator upgrading an older cluster does: `kafka-features upgrade --feature kraft.version=1`.
Kafka can from 4.1; on 3.9 and 4.0 the configuration refuses a static quorum with these faults
(`kchaos.model.quorum_mode`), and should a tool still refuse the upgrade, the fault is skipped in its words.

`remove-voter`'s effect is the quorum itself saying so: the node among the observers and not among the
voters in `describe --status`. A removed quorum leader resigns once the change is committed, so another
voter leads. On stop the node is added back; healed when the quorum lists it among the voters again.

`add-voter` grows the quorum the way an operator adds a controller: a spare controller
(`--spare-controllers`), which knows the quorum only by its bootstrap servers, starts and fetches the metadata
log as an observer; once the quorum lists it so, `add-controller` run on it makes it a voter (the effect). On
stop `remove-controller` takes it out again and it shuts down, a spare once more, so the fault repeats.
"""

from __future__ import annotations

import json
import re
from typing import Any

from kchaos.harness.cluster_error import ClusterError
from kchaos.harness.kafka_node import CONTROLLER_PORT, KafkaNode
from kchaos.harness.metadata import QUORUM_TOOL, quorum_status
from kchaos.model.fault_record import FaultRecord
from kchaos.model.faults.quorum import QuorumRecord
from kchaos.nemesis.fault import Carriers, Fault, FaultUnsupported, TargetUnresolved, describe_nodes

FEATURE_TOOL = "org.apache.kafka.tools.FeatureCommand"
#: The copy of the node's own configuration `add-controller` reads (under the node's state dir): with the
#: controller listener's address advertised, which the tool registers as the voter's endpoint.
ADD_CONFIG = "add-controller.properties"
#: Where the node's log dir (under its state dir) keeps its directory id, which `remove-controller` names
#: the voter by.
META_PROPERTIES = "data/meta.properties"


def quorum_members(status: str) -> tuple[set[int], set[int]]:
    """The voters' and the observers' ids in `describe --status` output (JSON lists after their labels);
    two empty sets when the output has neither."""
    found: dict[str, set[int]] = {"CurrentVoters": set(), "CurrentObservers": set()}
    for line in status.splitlines():
        label, _, rest = line.partition(":")
        if label.strip() in found:
            try:
                found[label.strip()] = {int(entry["id"]) for entry in json.loads(rest.strip())}
            except (ValueError, KeyError, TypeError):
                continue
    return found["CurrentVoters"], found["CurrentObservers"]


def advertised_with_controller(config: str, hostname: str) -> str:
    """`config` (server.properties text) advertising the controller listener at `hostname` too, appended to
    an `advertised.listeners` line that exists or as a line of its own."""
    endpoint = f"CONTROLLER://{hostname}:{CONTROLLER_PORT}"
    if re.search(r"^advertised\.listeners=", config, flags=re.MULTILINE):
        return re.sub(r"^(advertised\.listeners=.*)$", rf"\1,{endpoint}", config, count=1, flags=re.MULTILINE)
    return config.rstrip("\n") + f"\nadvertised.listeners={endpoint}\n"


class QuorumChange(Fault):
    """What both quorum faults do: make the static quorum dynamic, ask who votes and who observes, and add
    or remove a controller with the quorum tool, run on a voter that is not the fault's."""

    RECORD = QuorumRecord

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.directory_id = ""

    def _runner(self) -> KafkaNode:
        """A running voter other than this fault's, to run the quorum tools on."""
        for voter in self.cluster.voters:
            if voter not in self.nodes and self.cluster.node(voter).state == "running":
                return self.cluster.node(voter)
        raise TargetUnresolved(f"{self.key}: no other running voter to run the quorum tools on")

    def _tool(self, node: KafkaNode, tool: str, *args: str, unsupported: bool = False) -> str:
        """Runs a KRaft tool on `node` against its own controller listener; with `unsupported`, a refusal
        skips the fault (FaultUnsupported, in the tool's words) rather than failing the run."""
        try:
            return node.run_tool(tool, "--bootstrap-controller", node.controller_address, *args)
        except ClusterError as exc:
            if unsupported:
                raise FaultUnsupported(
                    f"{self.key}: this release cannot make its static quorum dynamic (kraft.version=1, "
                    f"KIP-853): {str(exc)[-300:]}"
                ) from None
            raise

    def _make_dynamic(self) -> str:
        """`kafka-features upgrade --feature kraft.version=1`: what the tool answered; nothing to do for a
        quorum formed dynamic."""
        if self.cluster.dynamic_quorum:
            return ""
        return self._tool(
            self._runner(), FEATURE_TOOL, "upgrade", "--feature", "kraft.version=1", unsupported=True
        ).strip()

    def _members(self) -> tuple[set[int], set[int]]:
        try:
            return quorum_members(quorum_status(self._runner()))
        except (ClusterError, TargetUnresolved):
            return set(), set()

    def _remove(self, node_id: int) -> str:
        """`remove-controller` of `node_id`, named by the directory id its log dir holds."""
        node = self.cluster.node(node_id)
        meta = str(node.state_dir / META_PROPERTIES)
        self.directory_id = node.kafka_exec(["sed", "-n", "s/^directory.id=//p", meta]).strip()
        return self._tool(
            self._runner(), QUORUM_TOOL, "remove-controller", "--controller-id", str(node_id),
            "--controller-directory-id", self.directory_id,
        ).strip()  # fmt: skip

    def _add(self, node_id: int) -> str:
        """`add-controller` run on `node_id` itself with its own configuration, its controller listener
        advertised (the endpoint the quorum registers for the new voter)."""
        node = self.cluster.node(node_id)
        config = node.kafka_exec(["cat", str(node.conf_file)])
        add_config = str(node.state_dir / ADD_CONFIG)
        node.kafka_exec(
            [
                "sh",
                "-c",
                f'printf "%s" "$1" > {add_config}',
                "sh",
                advertised_with_controller(config, node.hostname),
            ]
        )
        return node.run_tool(
            QUORUM_TOOL, "--bootstrap-controller", self._runner().controller_address, "--command-config",
            add_config, "add-controller",
        ).strip()  # fmt: skip


class RemoveVoter(QuorumChange):
    """Takes one voter out of the KRaft quorum (it stays up, an observer), adds it back on stop."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.added_back = ""

    def start(self) -> FaultRecord:
        self.remember_leader()
        target = self.choose(self.spec.option("target"))
        if target not in self.cluster.voters:
            raise TargetUnresolved(f"{self.key}: {describe_nodes([target])} is no voter of the KRaft quorum")
        self.nodes = (target,)
        upgraded = self._make_dynamic()
        self.active = True
        removed = self._remove(target)
        return self.record(directory_id=self.directory_id, upgraded=upgraded, removed=removed)

    def effect_reached(self) -> bool:
        voters, observers = self._members()
        return bool(voters) and self.nodes[0] not in voters and self.nodes[0] in observers

    def stop(self) -> FaultRecord:
        if not self.active:
            return self.record()
        self.added_back = self._add(self.nodes[0])
        self.active = False
        return self.record(added_back=self.added_back)

    def healed(self) -> bool:
        voters, _ = self._members()
        return bool(self.nodes) and self.nodes[0] in voters and super().healed()

    def describe(self) -> str:
        who = describe_nodes(self.nodes) if self.nodes else f"the {self.spec.option('target')}"
        return f"remove {who} from the KRaft quorum's voters (an observer meanwhile); add it back on stop"


class AddVoter(QuorumChange):
    """Starts a spare controller, an observer of the quorum, and makes it a voter; on stop takes it out of
    the voters and shuts it down, a spare again.

    `stage` says how far it got: `joining` (started, not yet listed as an observer), `adding` (add-controller
    sent, not yet a voter), `voter`, then `retired` once stopped."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.stage = ""
        self.added = ""

    def start(self) -> FaultRecord:
        self.remember_leader()
        spare = next((n for n in self.cluster.spare_controller_ids if n in self.cluster.spares), None)
        if spare is None:
            raise TargetUnresolved(
                f"{self.key}: no spare controller outside the quorum (--spare-controllers)"
            )
        upgraded = self._make_dynamic()
        self.nodes = (spare,)
        self.active = True
        self.cluster.join(spare)
        self.stage = "joining"
        return self.record(upgraded=upgraded)

    def effect_reached(self) -> bool:
        voters, observers = self._members()
        node = self.nodes[0]
        if self.stage == "joining" and node in observers:
            self.added = self._add(node)
            self.stage = "adding"
        if self.stage == "adding" and node in voters:
            self.stage = "voter"
        return self.stage == "voter"

    def stop(self) -> FaultRecord:
        if not self.active:
            return self.record()
        node = self.nodes[0]
        voters, _ = self._members()
        # Added, or perhaps added: the request may have been committed after the tool gave up waiting.
        removed = self._remove(node) if node in voters or self.stage != "joining" else ""
        self.cluster.leave(node)
        self.active = False
        self.stage = "retired"
        return self.record(added=self.added, directory_id=self.directory_id, removed=removed)

    def healed(self) -> bool:
        voters, _ = self._members()
        return bool(voters) and self.nodes[0] not in voters and super().healed()

    def describe(self) -> str:
        who = describe_nodes(self.nodes) if self.nodes else "a spare controller"
        return (
            f"start {who} as an observer of the KRaft quorum and add it to the voters (add-controller); take "
            "it out (remove-controller) and shut it down on stop"
        )


#: The faults this module carries out (`kchaos.model.faults`), by name and aim.
CARRIES_OUT: Carriers = {
    ("remove-voter", "nodes"): RemoveVoter,
    ("add-voter", "nodes"): AddVoter,
}
