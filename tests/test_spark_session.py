"""The local Spark session's settings: those checking speed depends on, and where its driver listens."""

from __future__ import annotations

import os

import pytest
from pyspark.errors.utils import is_debugging_enabled
from pyspark.sql import SparkSession

from kchaos.checkers.runtime.session import (
    LOCAL_GC_OPTION,
    LOOPBACK,
    SHUFFLE_PARTITIONS,
    SMALL_HISTORY_ROWS,
    SQL_CONF,
    sized,
    spark_session,
)
from kchaos.model.config import DEFAULT_SPARK_MASTER


def test_local_session_runs_the_parallel_collector(spark: SparkSession) -> None:
    """The option is only a string in a config until the JVM honours it: ask the JVM which collectors run."""
    assert LOCAL_GC_OPTION in spark.conf.get("spark.driver.extraJavaOptions")
    beans = spark.sparkContext._jvm.java.lang.management.ManagementFactory.getGarbageCollectorMXBeans()  # type: ignore[union-attr]
    names = {bean.getName() for bean in beans}
    assert names == {"PS Scavenge", "PS MarkSweep"}, names


def test_a_small_historys_check_shuffles_into_one_partition_and_a_large_ones_into_the_usual(
    spark: SparkSession,
) -> None:
    """What the size decides is the partitions a shuffle really makes, asked of a planned shuffle."""

    def shuffled() -> int:
        return int(spark.range(100).repartition("id").rdd.getNumPartitions())

    try:  # the session is the suite's: an earlier test's check has sized it already
        sized(spark, SMALL_HISTORY_ROWS + 1)
        assert shuffled() == int(SQL_CONF[SHUFFLE_PARTITIONS]) == 4
        sized(spark, SMALL_HISTORY_ROWS)
        assert shuffled() == 1
        sized(spark, None)  # a report after the check: the check's setting stays
        assert shuffled() == 1
    finally:
        spark.conf.set(SHUFFLE_PARTITIONS, SQL_CONF[SHUFFLE_PARTITIONS])


def test_column_functions_do_not_send_their_call_site_to_the_jvm(spark: SparkSession) -> None:
    """PySpark's call-site capture costs five JVM calls per function; the session turns it off, and PySpark
    reads the switch from the session."""
    assert is_debugging_enabled() is False


def test_a_local_session_binds_its_driver_to_loopback_and_leaves_the_environment_alone(
    spark: SparkSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A suite hosting the plugin inherits whatever the check's process sets in its environment."""
    monkeypatch.delenv("SPARK_LOCAL_IP", raising=False)
    before = dict(os.environ)
    session = spark_session(DEFAULT_SPARK_MASTER)
    assert dict(os.environ) == before
    conf = session.sparkContext.getConf()
    assert conf.get("spark.driver.host") == conf.get("spark.driver.bindAddress") == LOOPBACK
