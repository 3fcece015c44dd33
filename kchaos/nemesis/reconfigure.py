"""Configuration faults: what an operator changes on a live cluster, at the worst moment.

Dynamic changes go through the Admin API, as an operator's tooling would. Each fault remembers the value
it replaced and restores it on stop. The API (IncrementalAlterConfigs) came in Kafka 2.3: on older brokers
the fault is skipped with that reason.
"""

from __future__ import annotations

from abc import abstractmethod
from concurrent.futures import Future
from dataclasses import replace
from typing import TypeVar

from confluent_kafka import ElectionType, KafkaError, KafkaException, TopicPartition

# The public names; the package does not mark them as re-exported for type checkers.
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
)

from kchaos.model.fault_record import FaultRecord
from kchaos.model.faults.reconfigure import SettingRecord
from kchaos.nemesis.fault import Carriers, Fault, FaultUnsupported

T = TypeVar("T")

#: What the client answers when the brokers do not have the API a request needs.
UNSUPPORTED = (KafkaError._UNSUPPORTED_FEATURE, KafkaError.UNSUPPORTED_VERSION)


class ConfigFault(Fault):
    """Sets one config on the topic (or on every broker) and puts each old value back on stop."""

    RECORD = SettingRecord

    config_name = ""
    #: Each resource's explicit value before the fault (None: the default), once `start` has read them.
    previous: list[str | None] | None = None

    def answer(self, future: Future[T]) -> T:
        """The future's result; FaultUnsupported if the brokers lack the API (before Kafka 2.3)."""
        try:
            return future.result(30)
        except KafkaException as exc:
            if exc.args and isinstance(exc.args[0], KafkaError) and exc.args[0].code() in UNSUPPORTED:
                raise FaultUnsupported(
                    f"{self.key}: the brokers cannot describe or change {self.config_name} at run time "
                    f"(IncrementalAlterConfigs came in Kafka 2.3): {exc.args[0].str()}; the fault is skipped"
                ) from None
            raise

    def resources(self) -> list[ConfigResource]:
        return [ConfigResource(ConfigResource.Type.TOPIC, self.topic)]

    def values(self) -> list[str | None]:
        """The explicitly set value on each resource (None where the default applies)."""
        admin = self.cluster.admin()  # held until the futures resolve: a collected client cancels them
        found: list[str | None] = []
        for resource in self.resources():  # one per call: Kafka takes a single broker resource per request
            entry = self.answer(admin.describe_configs([resource])[resource]).get(self.config_name)
            found.append(None if entry is None or entry.is_default else entry.value)
        return found

    def current(self) -> str | None:
        """The value, if every resource has the same one; None when they differ or use the default."""
        values = set(self.values())
        return values.pop() if len(values) == 1 else None

    def set(self, values: list[str | None]) -> None:
        admin = self.cluster.admin()
        for resource, value in zip(self.resources(), values, strict=True):
            operation = AlterConfigOpType.SET if value is not None else AlterConfigOpType.DELETE
            resource.add_incremental_config(
                ConfigEntry(self.config_name, value, incremental_operation=operation)
            )
            self.answer(admin.incremental_alter_configs([resource])[resource])

    def describe(self) -> str:
        return f"set {self.config_name}={self.target_value()} on {self.scope_text()}"

    def scope_text(self) -> str:
        return f"topic {self.topic}"

    @abstractmethod
    def target_value(self) -> str: ...

    def start(self) -> FaultRecord:
        self.previous = self.values()
        self.set([self.target_value()] * len(self.previous))
        self.active = True
        return self.record(previous=self.previous)

    def stop(self) -> FaultRecord:
        if self.active and self.previous is not None:  # start read them before it changed anything
            self.set(self.previous)
            self.active = False
        return self.record()

    def effect_reached(self) -> bool:
        return self.current() == self.target_value()

    def healed(self) -> bool:
        """The old values are described again, and the cluster is whole. The controller answers a change
        before every broker has applied it, and a broker describes a topic from its own copy of the
        metadata: right after `stop` one can still show the fault's value (a CI run read min.insync.replicas
        3 after it had been set back to 2)."""
        restored = self.previous is None or self.values() == self.previous
        return restored and super().healed()


class UncleanElection(ConfigFault):
    """Switches unclean leader election on and, by default, triggers an unclean election at once.

    KRaft acts on a dynamically enabled unclean election only on its periodic check (five minutes) or a
    broker fence/unfence, so the fault asks the controller through the Admin API (electLeaders, type
    UNCLEAN) to act now: a partition with no in-sync replica alive gets an out-of-sync leader. A ZooKeeper
    controller (from 2.1) elects on the change by itself, and then answers the request that nothing needs
    electing.
    """

    config_name = "unclean.leader.election.enable"

    def resources(self) -> list[ConfigResource]:
        if self.spec.option("scope") == "cluster":
            # Every broker's own dynamic setting: this client cannot address the cluster-wide default.
            return [
                ConfigResource(ConfigResource.Type.BROKER, str(node)) for node in sorted(self.cluster.nodes)
            ]
        return super().resources()

    def scope_text(self) -> str:
        return "every broker" if self.spec.option("scope") == "cluster" else super().scope_text()

    def target_value(self) -> str:
        return "true"

    def start(self) -> FaultRecord:
        started = super().start()
        if self.spec.option("trigger") == "true" and isinstance(started, SettingRecord):
            return replace(started, elected=self.trigger())
        return started

    def trigger(self) -> dict[str, str]:
        """Asks for an unclean election on every partition of the topic; returns each partition's answer."""
        partitions = [TopicPartition(self.topic, p) for p in sorted(self.partitions_of_topic())]
        admin = self.cluster.admin()
        answers: dict[str, str] = {}
        try:
            result = admin.elect_leaders(ElectionType.UNCLEAN, partitions).result(30)
        except KafkaException as exc:
            return {"error": str(exc)}
        for tp, error in result.items():
            answers[str(tp.partition)] = "elected" if error is None else error.name()
        return answers

    def partitions_of_topic(self) -> list[int]:
        views = self.cluster.metadata.views(self.topic)
        return sorted(views[0].partitions) if views else [self.partition]

    def effect_reached(self) -> bool:
        if not super().effect_reached():
            return False
        views = self.cluster.metadata.views(self.topic)
        return bool(views) and all(state.leader >= 0 for state in views[0].partitions.values())


class MinInsyncReplicas(ConfigFault):
    """Changes the topic's min.insync.replicas: what an acks=all write needs to be acknowledged."""

    config_name = "min.insync.replicas"

    def target_value(self) -> str:
        return self.spec.option("value")


#: The faults this module carries out (`kchaos.model.faults`), by name and aim.
CARRIES_OUT: Carriers = {
    ("unclean-election", "nodes"): UncleanElection,
    ("min-isr", "nodes"): MinInsyncReplicas,
}
