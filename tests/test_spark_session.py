"""The local Spark session's JVM settings that checking speed depends on."""

from __future__ import annotations

from pyspark.sql import SparkSession

from kchaos.checkers.spark import LOCAL_GC_OPTION


def test_local_session_runs_the_parallel_collector(spark: SparkSession) -> None:
    """The option is only a string in a config until the JVM honours it: ask the JVM which collectors run."""
    assert LOCAL_GC_OPTION in spark.conf.get("spark.driver.extraJavaOptions")
    beans = spark.sparkContext._jvm.java.lang.management.ManagementFactory.getGarbageCollectorMXBeans()  # type: ignore[union-attr]
    names = {bean.getName() for bean in beans}
    assert names == {"PS Scavenge", "PS MarkSweep"}, names
