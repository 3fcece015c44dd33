"""The kchaos pytest plugin as a user's suite sees it: options, the `chaos` marker, and failure messages.

Inner test files run in-process with `pytester`. Whole chaos runs against real Kafka are what
tests/chaos/ does with the same plugin; here the run's outcome comes from a synthetic history checked by
the real checker, and the settings test captures the configuration the fixture would run.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from harness.config import DEFAULT_SPARK_MASTER
from runner.run import check_and_report
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


def test_options_and_marker_are_registered(pytester: pytest.Pytester) -> None:
    help_text = pytester.runpytest("--help").stdout.str()
    for option in ("--kafka-version", "--kafka-image", "--brokers", "--keep-cluster"):
        assert option in help_text
    assert "@pytest.mark.chaos(**settings)" in pytester.runpytest("--markers").stdout.str()


def test_chaos_run_takes_settings_from_options_marker_and_call(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import pytest
        import runner.pytest_plugin as plugin

        seen = []

        @pytest.fixture(autouse=True)
        def capture(monkeypatch):
            monkeypatch.setattr(plugin, "execute", lambda config, **kw: seen.append((config, kw)))

        @pytest.mark.chaos(acks="1", duration=20, nemesis="none")
        def test_settings(chaos_run):
            chaos_run(duration=5)
            config, kw = seen[0]
            settings = (config.acks, config.duration, config.kafka_version, config.brokers)
            assert settings == ("1", 5, "9.9.9", 5)
            assert kw["keep_cluster"] is True

        def test_plain():
            pass
        """
    )
    result = pytester.runpytest("--kafka-version", "9.9.9", "--brokers", "5", "--keep-cluster", "-m", "chaos")
    result.assert_outcomes(passed=1, deselected=1)


def test_chaos_run_refuses_faults_that_do_not_fit_unless_a_scenario_drives_them(
    pytester: pytest.Pytester,
) -> None:
    """Asking for faults and getting none must not pass as an `ok` run; a crafted scenario plans none and
    drives its own, so its short run is validated without the plan."""
    pytester.makepyfile(
        """
        import pytest
        import runner.pytest_plugin as plugin
        from harness.config import ConfigError

        seen = []

        @pytest.fixture(autouse=True)
        def capture(monkeypatch):
            seen.clear()
            monkeypatch.setattr(plugin, "execute", lambda config, **kw: seen.append((config, kw)))

        @pytest.mark.chaos(nemesis="kill-leader,isolate-leader", duration=30)
        def test_planned_faults_that_do_not_fit(chaos_run):
            with pytest.raises(ConfigError, match="0 of 2 requested faults fit.*use --duration 60 or more"):
                chaos_run()
            assert seen == [], "refused before anything runs"

        @pytest.mark.chaos(nemesis="kill-leader,isolate-leader", duration=30)
        def test_a_scenario(chaos_run):
            def scenario(nemesis):
                pass

            chaos_run(scenario=scenario)
            config, kw = seen[0]
            assert config.for_scenario and kw["scenario"] is scenario
        """
    )
    pytester.runpytest().assert_outcomes(passed=2)


def test_a_kafka_version_that_is_no_release_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_nothing():\n    pass\n")
    result = pytester.runpytest("--kafka-version", "banana")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--kafka-version: 'banana' is not a Kafka release*e.g. 4.3.1*"])


def test_a_failing_chaos_test_names_the_anomalies_two_examples_and_the_report(
    pytester: pytest.Pytester, tmp_path: Path, spark: SparkSession
) -> None:
    outcome = check_and_report(make_run(tmp_path, three_lost_writes()), DEFAULT_SPARK_MASTER)
    assert outcome.count("lost-write") == 3, "the scenario needs more examples than the message shows"
    pytester.makepyfile(
        f"""
        import json
        from pathlib import Path
        from runner.pytest_plugin import record_outcome
        from runner.run import RunOutcome

        def test_durability(request):
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
    section = text[text.index("lost-write:") :].split("\n")
    assert [line.startswith("  e.g. ") for line in section[1:4]] == [True, True, False], "two examples"
