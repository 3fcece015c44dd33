"""Shared fixtures: one Spark session for the whole test run, since starting a JVM costs seconds; and the
`nightly` marker's switch."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pyspark.sql import SparkSession

from kchaos.checkers.runtime.session import spark_session

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
