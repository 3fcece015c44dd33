"""Shared fixtures: one Spark session for the whole test run, since starting a JVM costs seconds."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pyspark.sql import SparkSession

from checkers.spark import spark_session

#: `pytester` runs small test files in-process, to test the kchaos pytest plugin as a user's suite sees it.
pytest_plugins = ["pytester"]


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    session = spark_session()
    yield session
    session.stop()
