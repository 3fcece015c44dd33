"""Shared fixtures: one Spark session for the whole test run, since starting a JVM costs seconds; the
`nightly` marker's switch; and Hypothesis without its per-example deadline."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import settings
from pyspark.sql import SparkSession

from kchaos.checkers.runtime.session import spark_session

# No property test is timed: on two cores shared with a cluster, one example of a history-writing property
# stalled a second behind its 200 ms deadline (test_record_rows) and failed a run that judged nothing wrong.
# Speed is measured in bench/, side by side.
settings.register_profile("kchaos", deadline=None)
settings.load_profile("kchaos")

#: `pytester` runs small test files in-process, to test the kchaos pytest plugin as a user's suite sees it.
pytest_plugins = ["pytester"]


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--run-nightly",
        action="store_true",
        help="also run the tests marked nightly (the nightly workflow does: pytest -m nightly --run-nightly)",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests marked `nightly` are skipped, with the way to run them, unless --run-nightly is given: the
    README's test command (and so CI) stays within its time, the nightly workflow runs them."""
    if config.getoption("--run-nightly"):
        return
    skip = pytest.mark.skip(reason="nightly: run with --run-nightly (the nightly workflow does)")
    for item in items:
        if item.get_closest_marker("nightly") is not None:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    session = spark_session()
    yield session
    session.stop()
