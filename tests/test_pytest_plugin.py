"""The kchaos pytest plugin as a user's suite sees it: options, the `chaos` marker, failure messages, and
a plugin that stays out of the way of suites that make no chaos run.

Inner test files run in-process with `pytester`. Whole chaos runs against real Kafka are what
tests/chaos/ does with the same plugin; here the run's outcome comes from a synthetic history checked by
the real checker, and the settings test captures the configuration the fixture would run.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

import kchaos.harness.cluster
import kchaos.harness.engine
import kchaos.harness.image
import kchaos.runner.run
from kchaos.harness.image import ResolvedImage
from kchaos.model.config import DEFAULT_SPARK_MASTER
from kchaos.runner.outcome import check_and_report
from kchaos.runner.pytest_plugin import ClusterFactory, SessionOptions
from tests.histories import HistoryBuilder
from tests.test_report import make_run


def three_lost_writes() -> HistoryBuilder:
    """acks=1 and a leader crash: three acknowledged writes below the read horizon are never read."""
    h = HistoryBuilder()
    written = h.sends(10)
    h.fault("kill", "kill#1", "start", kind="crash", nodes=[1])
    h.fault("kill", "kill#1", "stop", kind="crash", nodes=[1])
    h.final_reads(pair for pair in written if pair[1] not in (2, 4, 6))
    return h


#: What a suite that loads the plugin must not get from it: the reaper switched off for its own
#: testcontainers, and seconds of imports it does not use.
LOADING_THE_PLUGIN = """
import os
import sys

HEAVY = {"docker", "confluent_kafka", "pyarrow", "pyspark", "testcontainers"}

def test_loading_the_plugin(pytestconfig):
    assert pytestconfig.pluginmanager.hasplugin("kchaos")
    assert "TESTCONTAINERS_RYUK_DISABLED" not in os.environ
    assert sorted(HEAVY & {name.split(".")[0] for name in sys.modules}) == []
"""


def test_options_and_marker_are_registered(pytester: pytest.Pytester) -> None:
    help_text = pytester.runpytest("--help").stdout.str()
    for option in (
        "--kchaos-kafka-version",
        "--kchaos-kafka-image",
        "--kchaos-metadata",
        "--kchaos-brokers",
        "--kchaos-keep-cluster",
    ):
        assert option in help_text
    assert "@pytest.mark.chaos(**settings)" in pytester.runpytest("--markers").stdout.str()


def test_every_option_the_plugin_adds_carries_its_prefix(pytester: pytest.Pytester) -> None:
    """In a project that is not kchaos's, `pytest --help` lists kchaos's options in their own group, every
    one named `--kchaos-...`, and the names they had before the prefix are nobody's."""
    help_text = pytester.runpytest_subprocess("--help").stdout.str()
    group = help_text.split("kchaos chaos tests against real Kafka:", 1)[1].split("\n\n", 1)[0]
    options = re.findall(r"^\s+(--[\w-]+)", group, flags=re.MULTILINE)

    assert options, help_text
    assert [option for option in options if not option.startswith("--kchaos-")] == []
    pytester.makepyfile("def test_nothing():\n    pass\n")
    assert pytester.runpytest_subprocess("--brokers", "5").ret == pytest.ExitCode.USAGE_ERROR


#: A project of someone else's whose own modules have names kchaos's packages had before their namespace.
OUTSIDE_PROJECT = {
    "harness/__init__.py": "def helper() -> str:\n    return 'their harness'\n",
    "runner.py": "def run() -> str:\n    return 'their runner'\n",
    "tests/test_theirs.py": """
from harness import helper
from runner import run


def test_their_own_modules_are_theirs(pytestconfig):
    assert pytestconfig.pluginmanager.hasplugin("kchaos")
    assert helper() == "their harness"
    assert run() == "their runner"
""",
}


def test_a_project_with_its_own_harness_and_runner_runs_green_beside_kchaos(
    pytester: pytest.Pytester,
) -> None:
    """kchaos installed beside a project that has a `harness` package and a `runner.py` module: the
    project's suite runs with the plugin loaded, and its imports find its own modules."""
    for name, text in OUTSIDE_PROJECT.items():
        (pytester.path / name).parent.mkdir(parents=True, exist_ok=True)
        (pytester.path / name).write_text(text, encoding="utf-8")

    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "tests")

    result.assert_outcomes(passed=1)


def test_loading_the_plugin_changes_no_environment_and_imports_no_engine(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fresh interpreter, as every pytest run of a user's suite is, with the plugin loaded from its entry
    point and a test collected and run."""
    monkeypatch.delenv("TESTCONTAINERS_RYUK_DISABLED", raising=False)
    pytester.makepyfile(LOADING_THE_PLUGIN)
    pytester.runpytest_subprocess().assert_outcomes(passed=1)


OPTION_VALUES = ("--kchaos-kafka-version", "3.9.2", "--kchaos-brokers", "5", "--kchaos-keep-cluster")


def test_chaos_run_takes_settings_from_options_marker_and_call(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import pytest
        import kchaos.runner.run

        seen = []

        @pytest.fixture(autouse=True)
        def capture(monkeypatch):
            monkeypatch.setattr(kchaos.runner.run, "execute", lambda config, **kw: seen.append((config, kw)))

        @pytest.mark.chaos(acks="1", duration=20, nemesis="none")
        def test_settings(chaos_run):
            chaos_run(duration=5)
            config, kw = seen[0]
            settings = (config.acks, config.duration, config.kafka_version, config.brokers)
            assert settings == ("1", 5, "3.9.2", 5)
            assert kw["keep_cluster"] is True

        def test_plain():
            pass
        """
    )
    result = pytester.runpytest(*OPTION_VALUES, "-m", "chaos")
    result.assert_outcomes(passed=1, deselected=1)


def test_a_suites_own_brokers_option_is_its_own(pytester: pytest.Pytester) -> None:
    """`--brokers` is a natural name for a Kafka suite's own option: owning it must not clash with kchaos,
    and kchaos's own option keeps its prefixed name."""
    pytester.makeconftest(
        """
        def pytest_addoption(parser):
            parser.addoption("--brokers", default="localhost:9092")
        """
    )
    pytester.makepyfile(
        """
        from kchaos.runner.pytest_plugin import SessionOptions

        def test_both(pytestconfig):
            assert pytestconfig.getoption("--brokers") == "broker-a:9092"
            assert SessionOptions.of(pytestconfig).brokers == 5
        """
    )
    pytester.runpytest("--brokers", "broker-a:9092", "--kchaos-brokers", "5").assert_outcomes(passed=1)


def test_chaos_run_refuses_faults_that_do_not_fit_unless_a_scenario_drives_them(
    pytester: pytest.Pytester,
) -> None:
    """Asking for faults and getting none must not pass as an `ok` run; a crafted scenario plans none and
    drives its own, so its short run is validated without the plan."""
    pytester.makepyfile(
        """
        import pytest
        import kchaos.runner.run
        from kchaos.model.config import ConfigError

        seen = []

        @pytest.fixture(autouse=True)
        def capture(monkeypatch):
            seen.clear()
            monkeypatch.setattr(kchaos.runner.run, "execute", lambda config, **kw: seen.append((config, kw)))

        @pytest.mark.chaos(nemesis="kill:target=leader,isolate:target=leader", duration=30)
        def test_planned_faults_that_do_not_fit(chaos_run):
            with pytest.raises(ConfigError, match="0 of 2 requested faults fit.*use --duration 60 or more"):
                chaos_run()
            assert seen == [], "refused before anything runs"

        @pytest.mark.chaos(nemesis="kill:target=leader,isolate:target=leader", duration=30)
        def test_a_scenario(chaos_run):
            def scenario(nemesis):
                pass

            chaos_run(scenario=scenario)
            config, kw = seen[0]
            assert config.for_scenario and kw["scenario"] is scenario

        def test_a_crafted_scenario_records_no_fault_of_the_plan(chaos_run):
            chaos_run(scenario=lambda nemesis: None)
            config, _ = seen[0]
            assert config.to_json_dict()["nemesis"] == [], "config.json must not name faults that never ran"
        """
    )
    pytester.runpytest().assert_outcomes(passed=3)


def test_a_kafka_version_that_is_no_release_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_nothing():\n    pass\n")
    result = pytester.runpytest("--kchaos-kafka-version", "banana")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--kchaos-kafka-version: 'banana' is not a Kafka release*e.g. 4.3.1*"])


def test_a_metadata_mode_the_release_lacks_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_nothing():\n    pass\n")
    result = pytester.runpytest("--kchaos-kafka-version", "0.11.0.3", "--kchaos-metadata", "kraft")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--kchaos-metadata: 0.11.0.3 runs only with ZooKeeper*"])


def test_the_metadata_mode_reaches_chaos_runs_and_clusters(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import pytest
        import kchaos.runner.run

        seen = []

        @pytest.fixture(autouse=True)
        def capture(monkeypatch):
            monkeypatch.setattr(kchaos.runner.run, "execute", lambda config, **kw: seen.append(config))

        def test_mode(chaos_run, kafka_cluster_factory):
            chaos_run(nemesis="none")
            assert seen[0].metadata == "zookeeper"
            assert kafka_cluster_factory.options.metadata == "zookeeper"
        """
    )
    options = ("--kchaos-kafka-version", "3.9.2", "--kchaos-metadata", "zookeeper")
    pytester.runpytest(*options).assert_outcomes(passed=1)


class FakeCluster:
    """Records what a cluster was built from and when it started, in the order of `events`."""

    def __init__(self, events: list[str], **settings: Any) -> None:
        self.events = events
        self.settings = settings
        self.run_id = settings["run_id"]
        self.bootstrap = "127.0.0.1:1"

    def start(self) -> None:
        self.events.append(
            f"start {self.settings['image']} with sidecars on {self.settings['sidecar_image']}"
        )

    def create_topic(self, *args: Any) -> None:
        self.events.append("topic")

    def stop(self) -> None:
        self.events.append("stop")


def fake_engine(monkeypatch: pytest.MonkeyPatch, events: list[str]) -> None:
    """The factory's Docker-facing steps, recorded in `events` instead of done."""

    def resolve(kafka_image: str | None, kafka_version: str) -> ResolvedImage:
        events.append(f"resolve {kafka_image}")
        return ResolvedImage(kafka_image or f"kchaos/kafka:{kafka_version}", "sha256:1", kafka_version)

    def ensure_base() -> str:
        events.append("ensure base")
        return "kchaos/base:bookworm"

    monkeypatch.setattr(kchaos.harness.engine, "require_engine", lambda: events.append("engine"))
    monkeypatch.setattr(kchaos.harness.image, "resolve_image", resolve)
    monkeypatch.setattr(kchaos.harness.image, "sidecar_image", ensure_base)
    monkeypatch.setattr(
        kchaos.harness.cluster, "KafkaCluster", lambda **settings: FakeCluster(events, **settings)
    )


def test_the_cluster_factory_ensures_the_kafka_and_sidecar_images_before_it_starts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With someone else's Kafka image nothing builds our base image on the way, yet every sidecar runs it."""
    events: list[str] = []
    factory = ClusterFactory(SessionOptions("4.1.1", "apache/kafka:4.1.1", brokers=3, keep_cluster=False))
    fake_engine(monkeypatch, events)
    with factory.started("t"):
        pass
    assert events == [
        "engine",
        "resolve apache/kafka:4.1.1",
        "ensure base",
        "start apache/kafka:4.1.1 with sidecars on kchaos/base:bookworm",
        "topic",
        "stop",
    ]


def test_the_cluster_factory_starts_clusters_in_the_sessions_metadata_mode(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    events: list[str] = []
    built: list[FakeCluster] = []
    factory = ClusterFactory(
        SessionOptions("3.9.2", None, brokers=3, keep_cluster=False, metadata="zookeeper")
    )
    fake_engine(monkeypatch, events)

    def cluster(**settings: Any) -> FakeCluster:
        built.append(FakeCluster(events, **settings))
        return built[-1]

    monkeypatch.setattr(kchaos.harness.cluster, "KafkaCluster", cluster)
    with factory.started("t"):
        pass
    assert [fake.settings["metadata_mode"] for fake in built] == ["zookeeper"]


def test_a_failing_chaos_test_names_the_anomalies_two_examples_and_the_report(
    pytester: pytest.Pytester, tmp_path: Path, spark: SparkSession
) -> None:
    outcome = check_and_report(make_run(tmp_path, three_lost_writes()), DEFAULT_SPARK_MASTER)
    assert outcome.count("lost-write") == 3, "the scenario needs more examples than the message shows"
    pytester.makepyfile(
        f"""
        import json
        from pathlib import Path
        from kchaos.runner.pytest_plugin import record_outcome
        from kchaos.runner.outcome import RunOutcome

        def test_durability(request):
            for second in range(80):  # what a run prints and logs on its way: captured, shown after
                print(f"* [00:{{second:02d}} workload]; 200 acks/s")
            run_dir = Path({str(outcome.run_dir)!r})
            results = json.loads((run_dir / "results.json").read_text())
            outcome = RunOutcome(run_dir, results, run_dir / "report.html")
            record_outcome(request.node, outcome)
            assert outcome.count("lost-write") == 0
        """
    )
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*- kchaos -*",
            f"report: {outcome.report}",
            f"lost-write: {outcome.count('lost-write')} -> permitted (rule acks-1-failover*",
            "  e.g. {*",
            "  e.g. {*",
        ]
    )
    text = result.stdout.str()
    assert text.index("- kchaos -") < text.index("Captured stdout call"), "the answer comes first"
    section = text[text.index("lost-write:") :].split("\n")
    assert [line.startswith("  e.g. ") for line in section[1:4]] == [True, True, False], "two examples"


def test_the_docs_example_of_the_section_shows_keys_a_lost_write_example_has() -> None:
    """docs/pytest.md once showed `acked_offset`, a key no example has."""
    docs = (Path(__file__).parents[1] / "docs" / "pytest.md").read_text(encoding="utf-8")
    shown = {
        key
        for line in docs.splitlines()
        if line.startswith("  e.g. {")
        for key in re.findall(r'"(\w+)":', line)
    }
    kip101 = Path(__file__).parent / "run_dirs" / "kip101-0.10.2.2" / "results.json"
    example = json.loads(kip101.read_text(encoding="utf-8"))["anomalies"]["lost-write"]["examples"][0]
    assert shown and shown <= set(example), shown - set(example)
