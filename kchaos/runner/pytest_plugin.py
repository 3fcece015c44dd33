"""kchaos as a pytest plugin: chaos tests that read like the guarantee they check.

Registered through the `pytest11` entry point, so installing kchaos is enough. It gives a suite
- options `--kchaos-kafka-version`, `--kchaos-kafka-image`, `--kchaos-metadata`, `--kchaos-brokers` (what
  every cluster of the session runs) and `--kchaos-keep-cluster` (leave clusters running after their
  tests, to inspect them). Every option carries the prefix: a plugin loaded into every pytest session of
  the machine must not take a name (`--brokers`, ...) that the session's own suite may want;
- fixtures: `chaos_run` (a whole run: cluster, workload, faults, final read, check; returns the outcome),
  `kafka_cluster` (a started cluster with a topic, for tests that drive their own clients),
  `nemesis` (faults for that cluster, healed after the test) and `kafka_cluster_factory`;
- a `chaos` marker: `@pytest.mark.chaos(acks="1", nemesis="isolate:target=leader")` sets `chaos_run`'s
  defaults for a test; every test using `chaos_run` carries the marker, so `-m chaos` selects them.

When a test that made a chaos run fails, its report gains a `kchaos` section naming each anomaly found,
its verdict and rule, two examples, and the path of the run's `report.html`: the assertion says what
broke, the section says where to look.

Loading the plugin costs a suite that makes no chaos run next to nothing: Docker, Kafka clients, Arrow
and testcontainers are imported by the fixtures that use them, and nothing in the environment changes.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Generator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from kchaos.model.releases import DEFAULT_KAFKA_VERSION, MetadataMode, Release, check_kafka_version

if TYPE_CHECKING:
    from kchaos.runner.outcome import RunOutcome

ChaosRun = Callable[..., "RunOutcome"]

OUTCOMES: pytest.StashKey[list[RunOutcome]] = pytest.StashKey()
#: The topic `kafka_cluster` creates and `nemesis` targets.
TOPIC = "kchaos"
HEAL_TIMEOUT = 180.0
#: The marker's signature, as its registration and its refusal say it.
CHAOS_MARKER = "chaos(**settings)"

#: The plugin's options, each as `--kchaos-<name>`.
OPTIONS: dict[str, dict[str, Any]] = {
    "kafka-version": {
        "default": DEFAULT_KAFKA_VERSION,
        "metavar": "V",
        "help": f"Kafka release of the locally built image kchaos/kafka:<version> "
        f"(default {DEFAULT_KAFKA_VERSION}).",
    },
    "kafka-image": {
        "default": None,
        "metavar": "IMAGE",
        "help": "Run this Kafka image instead of building one.",
    },
    "metadata": {
        "default": None,
        "choices": ("kraft", "zookeeper"),
        "help": "Where clusters keep their metadata: kraft (3.3 and newer) or zookeeper (before 4.0) "
        "(default: kraft where the release has it, else zookeeper).",
    },
    "brokers": {"type": int, "default": 3, "metavar": "N", "help": "Kafka nodes per cluster (default 3)."},
    "keep-cluster": {
        "action": "store_true",
        "help": "Leave each cluster running after its test (remove with `kchaos clean --all`).",
    },
}


def option_dest(name: str) -> str:
    """Where option `--kchaos-<name>`'s value goes."""
    return "kchaos_" + name.replace("-", "_")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("kchaos", "kchaos chaos tests against real Kafka")
    for name, attrs in OPTIONS.items():
        group.addoption(f"--kchaos-{name}", dest=option_dest(name), **attrs)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{CHAOS_MARKER}: a test that makes whole chaos runs against real Kafka; settings are "
        "`kchaos run` options (underscores) that the chaos_run fixture uses as defaults",
    )
    # Refused before any test starts: the cluster fixtures would otherwise try to build an image for it.
    try:
        version = check_kafka_version(str(config.getoption(option_dest("kafka-version"))))
    except ValueError as exc:
        raise pytest.UsageError(f"--kchaos-kafka-version: {exc}") from None
    mode = config.getoption(option_dest("metadata"))
    try:
        if mode is not None:
            Release.parse(version).check_metadata_mode(str(mode))
    except ValueError as exc:
        raise pytest.UsageError(f"--kchaos-metadata: {exc}") from None


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Ends the process at once after the session if a chaos run left a hung librdkafka call behind
    (`kchaos.workloads.in_harness.eos.hung_offset_calls`): an ordinary exit would run OpenSSL's exit handler
    under that client's live threads, which can crash the process after every test passed. Registered last,
    the handler runs first among Python's exit handlers, after pytest has printed its summary."""
    import atexit
    import sys

    if "kchaos.workloads.in_harness.eos" not in sys.modules:
        return  # no eos run in this process

    def exit_if_hung(status: int = int(exitstatus)) -> None:
        from kchaos.workloads.in_harness.eos import hung_offset_calls

        if hung_offset_calls():
            _exit_now(status)

    atexit.register(exit_if_hung)


def _exit_now(status: int) -> None:
    """Flushes what the process has to say, then leaves without the C library's exit handlers."""
    import logging
    import os
    import sys

    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        check_chaos_marker(item)
        if "chaos_run" in getattr(item, "fixturenames", ()) and item.get_closest_marker("chaos") is None:
            item.add_marker(pytest.mark.chaos)


def check_chaos_marker(item: pytest.Item) -> None:
    """Refuses `@pytest.mark.chaos("all")`: the marker takes settings by name only, and a positional
    value was silently dropped, so the test ran with settings its author never meant."""
    for marker in item.iter_markers("chaos"):
        if marker.args:
            given = ", ".join(repr(arg) for arg in marker.args)
            raise pytest.UsageError(
                f"{item.nodeid}: @pytest.mark.{CHAOS_MARKER} takes settings by name, e.g. "
                f'@pytest.mark.chaos(acks="all"); the positional {given} would be ignored'
            )


@dataclass(frozen=True)
class SessionOptions:
    """What the command line says every cluster of the session runs."""

    kafka_version: str
    kafka_image: str | None
    brokers: int
    keep_cluster: bool
    #: None: the release's own default (KRaft where it has it).
    metadata: MetadataMode | None = None

    @classmethod
    def of(cls, config: pytest.Config) -> SessionOptions:
        return cls(
            kafka_version=str(config.getoption(option_dest("kafka-version"))),
            kafka_image=config.getoption(option_dest("kafka-image")),
            brokers=int(config.getoption(option_dest("brokers"))),
            keep_cluster=bool(config.getoption(option_dest("keep-cluster"))),
            metadata=config.getoption(option_dest("metadata")),
        )

    def run_settings(self) -> dict[str, Any]:
        settings: dict[str, Any] = {
            "kafka_version": self.kafka_version,
            "brokers": self.brokers,
        }
        if self.metadata is not None:
            settings["metadata"] = self.metadata
        if self.kafka_image:
            settings["kafka_image"] = self.kafka_image
        return settings


@pytest.fixture(scope="session")
def kchaos_options(pytestconfig: pytest.Config) -> SessionOptions:
    return SessionOptions.of(pytestconfig)


def record_outcome(item: pytest.Item, outcome: RunOutcome) -> None:
    """Remembers a run for the failure section of `item`'s report."""
    item.stash.setdefault(OUTCOMES, []).append(outcome)


@pytest.fixture
def chaos_run(request: pytest.FixtureRequest, tmp_path: Path, kchaos_options: SessionOptions) -> ChaosRun:
    """Makes one whole chaos run and returns its outcome (`verdict`, `count(name)`, `results`, `report`).

    Settings, lowest priority first: the session's options, the test's `chaos` marker, the call's
    keyword arguments. A `scenario` keyword drives the faults step by step instead of a schedule: the
    name of one (`kchaos scenario list`), whose settings then come below all of those, or a function
    of the run's `Nemesis`. The settings are then validated for a scenario, so a short run is not refused
    for planning no fault it would not use anyway. Without one, a run whose plan misses a requested fault
    is refused (`ConfigError`) before any container starts.
    """
    from kchaos.checkers.runtime.session import spark_session
    from kchaos.model.config import load_config
    from kchaos.runner.run import execute

    marker = request.node.get_closest_marker("chaos")
    marked = dict(marker.kwargs) if marker is not None else {}

    def run(scenario: Any = None, **overrides: Any) -> RunOutcome:
        settings = {**kchaos_options.run_settings(), **marked, **overrides}
        settings.setdefault("runs_dir", tmp_path / "runs")
        if isinstance(scenario, str):
            settings["scenario"] = scenario
        elif scenario is not None:
            # A crafted scenario drives its own faults, so the fault plan's default would be recorded in
            # config.json as faults that never ran.
            settings.setdefault("nemesis", "none")
        config = load_config(**settings, for_scenario=scenario is not None)
        if config.spark_url.startswith("local"):
            # A suite checks every run in this one JVM, for minutes. Started here, not by the first run's
            # check (a small history, so the quick compiler alone:
            # `kchaos.checkers.runtime.session.SMALL_HISTORY_ROWS`), it keeps the optimizing one, which makes
            # each later check about a quarter faster.
            spark_session(config.spark_url, config.spark_driver_memory)
        with engine_failure_in_one_line():
            outcome = execute(
                config,
                progress=lambda message: print(f"* {message}"),
                scenario=None if isinstance(scenario, str) else scenario,
                keep_cluster=kchaos_options.keep_cluster,
            )
        record_outcome(request.node, outcome)
        return outcome

    return run


@contextmanager
def engine_failure_in_one_line() -> Iterator[None]:
    """Fails the test with the engine's message alone when no Docker engine answers.

    As an exception, it reached pytest with the HTTP client's errors chained under it: hundreds of lines
    of traceback per test, the one line that says what to do buried in the middle.
    """
    from kchaos.harness.engine import EngineError

    try:
        yield
    except EngineError as exc:
        # `from None`: pytest shows a failure's chain even without its traceback.
        raise pytest.fail.Exception(f"kchaos: {exc}", pytrace=False) from None


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    outcomes = item.stash.get(OUTCOMES, [])
    if report.when == "call" and report.failed and outcomes:
        # First, before what the run printed and logged on its way: the answer, not under 80 lines of it.
        report.sections.insert(
            0, ("kchaos", "\n\n".join(outcome.describe(examples=2) for outcome in outcomes))
        )
    return report


class ClusterFactory:
    """Starts clusters for tests that drive their own clients; each is removed when its block ends."""

    def __init__(self, options: SessionOptions) -> None:
        self.options = options

    @contextmanager
    def started(
        self,
        name: str,
        topic: str = TOPIC,
        partitions: int = 3,
        replication_factor: int | None = None,
        min_insync_replicas: int | None = None,
        broker_config: dict[str, str] | None = None,
        spare_brokers: int = 0,
        controllers: int = 0,
        spare_controllers: int = 0,
        dynamic_quorum: bool = False,
    ) -> Iterator[Any]:
        """A started cluster with `topic` created (replication factor up to 3, min ISR up to 2), and
        `spare_brokers` spare nodes for the membership faults to start, and `controllers` dedicated KRaft
        controllers (0: the brokers are the controllers), beside `spare_controllers` outside the quorum;
        `dynamic_quorum` formats the KRaft quorum dynamic (KIP-853) rather than static.

        The images are ensured first, as `kchaos run` ensures them: the Kafka image (built when missing,
        or the session's `--kchaos-kafka-image`) and the base image the sidecars run, which a Kafka image
        of someone else's does not bring along.
        """
        from kchaos.harness.cluster import KafkaCluster
        from kchaos.harness.engine import require_engine
        from kchaos.harness.image import resolve_image, sidecar_image
        from kchaos.harness.watchdog import guard
        from kchaos.runner.stop_request import stop_requests

        with engine_failure_in_one_line():
            require_engine()
        image = resolve_image(self.options.kafka_image, self.options.kafka_version)
        sidecar = sidecar_image()
        size = self.options.brokers
        rf = replication_factor or min(3, size)
        mode = self.options.metadata or Release.parse(self.options.kafka_version).default_metadata_mode
        cluster = KafkaCluster(
            run_id=f"{name}-{secrets.token_hex(3)}",
            image=image.ref,
            sidecar_image=sidecar,
            size=size,
            spare_size=spare_brokers,
            controller_size=controllers,
            spare_controller_size=spare_controllers,
            dynamic_quorum=dynamic_quorum,
            broker_config=dict(broker_config or {}),
            metadata_mode=mode,
        )
        # A session stopped with SIGTERM (CI cancelling) unwinds like Ctrl-C: pytest then tears the
        # fixtures down, and this block removes the cluster rather than leaving it to the next sweep.
        with stop_requests():
            try:
                cluster.start()
                cluster.create_topic(topic, partitions, rf, min_insync_replicas or min(2, rf))
                yield cluster
            finally:
                if self.options.keep_cluster:
                    guard.keep(cluster.run_id)  # the watchdog must not remove it when the session ends
                    print(
                        f"* kept cluster {cluster.run_id} ({cluster.bootstrap}); "
                        "`kchaos clean --all` removes it"
                    )
                else:
                    cluster.stop()


@pytest.fixture(scope="session")
def kafka_cluster_factory(kchaos_options: SessionOptions) -> ClusterFactory:
    return ClusterFactory(kchaos_options)


@pytest.fixture(scope="module")
def kafka_cluster(kafka_cluster_factory: ClusterFactory) -> Iterator[Any]:
    """A started cluster with the topic `kchaos` (3 partitions), shared by the tests of a module."""
    with kafka_cluster_factory.started("pytest") as cluster:
        yield cluster


@pytest.fixture
def nemesis(kafka_cluster: Any, tmp_path: Path) -> Iterator[Any]:
    """Faults for `kafka_cluster` (`begin("kill:target=leader")`, `end(fault)`), targeting partition 0 of
    the `kchaos` topic; everything is healed after the test, and the cluster waited for until whole."""
    from kchaos.model.history import HistoryWriter
    from kchaos.model.run_files import RunDir
    from kchaos.nemesis.schedule import Nemesis

    history = HistoryWriter(RunDir(tmp_path), kafka_cluster.run_id)
    faults = Nemesis(kafka_cluster, history, TOPIC, 0, [], seed=3)
    yield faults
    faults.heal_all()
    history.finish()
    kafka_cluster.metadata.await_recovery(TOPIC, HEAL_TIMEOUT, "the cluster to recover after the test")
