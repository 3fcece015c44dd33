"""A configuration fault is healed only once its old value is described again: the controller answers the
change before every broker has applied it, so a describe right after the fault ends can still show the
fault's value. Driven through scripted describes, without a cluster; the real-cluster counterpart is
`tests/cluster/test_fault_effects.py::test_min_isr_change_is_applied_and_restored`."""

from __future__ import annotations

import random
from types import SimpleNamespace
from typing import cast

from kchaos.harness.cluster import KafkaCluster
from kchaos.model.fault_spec import parse_spec
from kchaos.nemesis.reconfigure import MinInsyncReplicas


class ScriptedDescribes(MinInsyncReplicas):
    """A min-isr fault whose describes answer from a script, one answer each, and whose changes go nowhere."""

    def __init__(self, answers: list[list[str | None]], recovered: bool = True) -> None:
        cluster = SimpleNamespace(metadata=SimpleNamespace(is_recovered=lambda topic: recovered))
        super().__init__(
            cast(KafkaCluster, cluster), "t", 0, "min-isr#1", parse_spec("min-isr:value=3"), random.Random(0)
        )
        self.answers = answers
        self.changes: list[list[str | None]] = []

    def values(self) -> list[str | None]:
        return self.answers.pop(0)

    def set(self, values: list[str | None]) -> None:
        self.changes.append(values)


def test_a_restored_value_a_broker_does_not_describe_yet_is_not_healed() -> None:
    fault = ScriptedDescribes([["2"], ["3"], ["3"], ["2"]])
    fault.start()
    assert fault.previous == ["2"] and fault.changes == [["3"]]
    assert fault.effect_reached()
    fault.stop()
    assert fault.changes == [["3"], ["2"]]
    assert not fault.healed()  # the broker asked still has the fault's value
    assert fault.healed()
    assert fault.answers == []


def test_a_topic_default_is_restored_as_the_default() -> None:
    fault = ScriptedDescribes([[None], ["3"], [None]])
    fault.start()
    fault.stop()
    assert fault.changes == [["3"], [None]]  # None: the explicit value is deleted
    assert not fault.healed()
    assert fault.healed()


def test_a_restored_value_is_not_enough_while_the_cluster_is_not_whole() -> None:
    fault = ScriptedDescribes([["2"], ["2"]], recovered=False)
    fault.start()
    fault.stop()
    assert not fault.healed()


def test_a_fault_that_never_read_its_old_value_is_healed_by_the_cluster_alone() -> None:
    assert ScriptedDescribes([]).healed()
    assert not ScriptedDescribes([], recovered=False).healed()
