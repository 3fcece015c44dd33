"""A stop request is never lost: one the signal handler's raise did not deliver (a finalizer swallowed it)
stops the run at its next phase boundary, never reaching the check; one that arrives while the run cleans up
lets the cleanup finish and stops the run right after. The run's collaborators are stand-ins here (no Docker,
no Kafka, no Spark): what is tested is where `kchaos.runner.run.execute` acts on a request, at every phase.
`tests/cluster/test_honest_runs.py` stops a real run with SIGTERM during a fault."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import kchaos.runner.run
import kchaos.runner.run_cluster
import kchaos.runner.run_steps
from kchaos.model.config import load_config
from kchaos.model.history_files import history_path
from kchaos.model.run_files import RunDir
from kchaos.model.topic_assignment import read_assignment
from kchaos.runner.stop_request import StopRequest, stop_requests
from kchaos.workloads import table
from kchaos.workloads.table import WorkloadRow

#: Where the stand-ins deliver a SIGTERM, one phase at a time, by the name of the phase it lands in.
PHASES = ("cluster-up", "workload", "heal", "recovery", "read-to-end", "replica-dump")


def swallowed_sigterm() -> None:
    """SIGTERM, its KeyboardInterrupt dropped as a finalizer or GC callback drops it."""
    with contextlib.suppress(KeyboardInterrupt):
        signal.raise_signal(signal.SIGTERM)


def test_the_handler_records_and_raises() -> None:
    stop = StopRequest()
    with pytest.raises(KeyboardInterrupt, match="signal 15"):
        stop.handle(signal.SIGTERM, None)
    assert stop.signal == signal.SIGTERM


def test_a_swallowed_request_is_raised_where_the_run_acts() -> None:
    with stop_requests() as stop:
        stop.act()  # nothing asked yet
        swallowed_sigterm()
        with pytest.raises(KeyboardInterrupt, match="signal 15"):
            stop.act()


def test_a_request_during_cleanup_waits_for_its_end() -> None:
    with stop_requests() as stop:
        with stop.deferred():
            signal.raise_signal(signal.SIGINT)  # recorded, not raised: the block goes on
            finished = True
        assert finished
        with pytest.raises(KeyboardInterrupt, match="signal 2"):
            stop.act()


def test_the_handlers_found_are_given_back() -> None:
    before = {signum: signal.getsignal(signum) for signum in (signal.SIGINT, signal.SIGTERM)}
    with stop_requests():
        pass
    assert {signum: signal.getsignal(signum) for signum in before} == before


@dataclass
class StandIns:
    """The run's collaborators, each delivering the SIGTERM if it is the one of phase `at`."""

    at: str
    checked: list[Path]
    stopped: list[str]
    frozen: bool = False

    def maybe(self, phase: str) -> None:
        if phase == self.at:
            swallowed_sigterm()


def install(monkeypatch: pytest.MonkeyPatch, stand_ins: StandIns) -> None:
    maybe = stand_ins.maybe

    class Metadata:
        def await_recovery(self, *args: Any) -> None:
            maybe("recovery")

    class Cluster:
        def __init__(self, **settings: Any) -> None:
            self.run_id = settings["run_id"]
            self.bootstrap = "127.0.0.1:1"
            self.network = None
            self.metadata = Metadata()

        def start(self) -> None:
            maybe("cluster-up")

        def create_topic(self, *args: Any, **kwargs: Any) -> None:
            pass

        def replica_assignment(self, topic: str) -> dict[int, tuple[int, ...]]:
            return {0: (1,)}

        def save_logs(self, logs: Path) -> None:
            if stand_ins.at == "cleanup":  # delivered, not swallowed: only deferral keeps the cleanup going
                signal.raise_signal(signal.SIGTERM)

        def freeze(self) -> None:  # only once dumped, on the way to the check
            stand_ins.frozen = True

        def stop_proxies(self) -> None:  # a run that planned no request fault has none to stop
            pass

        def stop(self) -> None:
            stand_ins.stopped.append("cluster")

    class Client:
        def __init__(self, *args: Any) -> None:
            pass

        def start(self, *args: Any, **kwargs: Any) -> None:
            maybe("workload")

        def stop(self) -> None:
            pass

    class Nemesis:
        planned: list[str] = []  # noqa: RUF012 - read only
        error = None
        active_keys: tuple[str, ...] = ()

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            self.finished = threading.Event()
            self.finished.set()
            self.faults_ended = self.finished
            self.last_end = None
            self.healed = False

        def start(self, *args: Any, **kwargs: Any) -> None:
            pass

        def stop(self) -> None:
            if not self.healed:
                self.healed = True
                maybe("heal")

    @dataclass(frozen=True)
    class Image:
        ref: str = "kchaos/kafka:4.3.1"
        kafka_version: str = "4.3.1"
        image_id: str = "sha256:0"

    def check(run_dir: Path, *args: Any) -> Any:
        stand_ins.checked.append(run_dir)
        return "checked"

    run: dict[str, Callable[..., Any] | type] = {
        "require_engine": lambda: None, "check_and_report": check, "needs_warming": lambda url: False,
    }  # fmt: skip
    steps: dict[str, Callable[..., Any] | type] = {
        "LeaderWatcher": Client, "Nemesis": Nemesis, "final_read": lambda *args: maybe("read-to-end"),
        "dump_replicas": lambda *args: maybe("replica-dump"),
    }  # fmt: skip
    cluster: dict[str, Callable[..., Any] | type] = {
        "resolve_image": lambda *args: Image(), "sidecar_image": lambda: "base", "KafkaCluster": Cluster,
    }  # fmt: skip
    modules = (
        (kchaos.runner.run, run),
        (kchaos.runner.run_steps, steps),
        (kchaos.runner.run_cluster, cluster),
    )
    for module, names in modules:
        for name, value in names.items():
            monkeypatch.setattr(module, name, value)
    # Every client's writers and readers, and its image, are stand-ins alike.
    rows = {pair: WorkloadRow(Client, Client) for pair in table.WORKLOADS}
    monkeypatch.setattr(table, "WORKLOADS", rows)
    monkeypatch.setattr(
        table, "CLIENT_IMAGES", dict.fromkeys(table.CLIENT_IMAGES, lambda version: "client:0")
    )


@pytest.mark.parametrize("at", PHASES)
def test_a_swallowed_sigterm_stops_the_run_at_the_end_of_its_phase_never_reaching_the_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, at: str
) -> None:
    stand_ins = StandIns(at, checked=[], stopped=[])
    install(monkeypatch, stand_ins)
    config = load_config(runs_dir=tmp_path, run_id="stopped", nemesis="none", duration=0.1)

    with pytest.raises(KeyboardInterrupt, match="signal 15"):
        kchaos.runner.run.execute(config, progress=lambda message: None, status_interval=3600)

    assert stand_ins.checked == [], "a run asked to stop must not go on to judge itself"
    assert stand_ins.stopped == ["cluster"], "the cleanup still ran to its end"
    history = pd.read_parquet(history_path(config.run_dir))
    stops = history[(history["f"] == "phase") & (history["value"] == "stopped")]
    assert len(stops) == 1, history[history["f"] == "phase"]


def test_a_sigterm_during_cleanup_lets_it_finish_then_stops_the_run_before_the_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stand_ins = StandIns("cleanup", checked=[], stopped=[])
    install(monkeypatch, stand_ins)
    config = load_config(runs_dir=tmp_path, run_id="cleaning", nemesis="none", duration=0.1)

    with pytest.raises(KeyboardInterrupt, match="signal 15"):
        kchaos.runner.run.execute(config, progress=lambda message: None, status_interval=3600)

    assert stand_ins.stopped == ["cluster"], "the containers were removed after the request"
    assert stand_ins.checked == []


def test_without_a_request_the_run_goes_on_to_its_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The stand-ins themselves: with no signal the same run reaches the check."""
    stand_ins = StandIns("nowhere", checked=[], stopped=[])
    install(monkeypatch, stand_ins)
    config = load_config(runs_dir=tmp_path, run_id="whole", nemesis="none", duration=0.1)

    outcome: Any = kchaos.runner.run.execute(config, progress=lambda message: None, status_interval=3600)
    assert outcome == "checked"
    assert stand_ins.checked == [config.run_dir]
    assert stand_ins.frozen, "the brokers were left running beside the check"
    # Where the cluster placed the topic's replicas is recorded, for a replay to place them so again.
    assert read_assignment(RunDir(config.run_dir).assignment) == {config.topic: {0: (1,)}}
