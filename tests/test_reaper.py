"""Testcontainers' reaper is off while kchaos starts its containers, and as the process had it otherwise:
a suite that loads the kchaos plugin keeps the reaper for its own testcontainers."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from testcontainers.core.config import testcontainers_config

import kchaos.harness.cluster
from kchaos.harness.cluster import KafkaCluster
from kchaos.harness.reaper import ReaperOff


@pytest.fixture
def found(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> bool:
    """The process's own setting (from its environment or the code that runs it) before kchaos starts."""
    monkeypatch.delenv("TESTCONTAINERS_RYUK_DISABLED", raising=False)
    monkeypatch.setattr(testcontainers_config, "ryuk_disabled", request.param)
    return bool(request.param)


@pytest.mark.parametrize("found", [False, True], indirect=True)
def test_off_inside_and_as_found_outside_even_when_starts_overlap(found: bool) -> None:
    reaper_off = ReaperOff()
    with reaper_off:
        assert testcontainers_config.ryuk_disabled
        with reaper_off:  # a second cluster starting meanwhile, in another thread
            pass
        assert testcontainers_config.ryuk_disabled, "still off while the first start goes on"
    assert testcontainers_config.ryuk_disabled is found


@pytest.mark.parametrize("found", [False], indirect=True)
def test_a_cluster_starts_its_nodes_without_a_reaper(found: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """The nodes' containers are what testcontainers starts; the network and the cleanup sweep are not."""

    class FakeNetwork:
        def __init__(self, **kwargs: object) -> None:
            self.name = ""

        def create(self) -> None:
            pass

    reaper_off_at_start: list[bool] = []

    def start_node(*args: object) -> SimpleNamespace:
        reaper_off_at_start.append(testcontainers_config.ryuk_disabled)
        return SimpleNamespace(state="running")

    monkeypatch.setattr(kchaos.harness.cluster, "sweep", lambda **kwargs: None)
    monkeypatch.setattr(kchaos.harness.cluster, "Network", FakeNetwork)
    monkeypatch.setattr(KafkaCluster, "_start_node", start_node)
    monkeypatch.setattr(KafkaCluster, "wait_ready", lambda self, timeout: None)

    KafkaCluster("reaper", image="kafka", sidecar_image="base", size=3).start()

    assert reaper_off_at_start == [True, True, True]
    assert testcontainers_config.ryuk_disabled is False
