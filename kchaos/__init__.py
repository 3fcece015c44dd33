"""kchaos: Jepsen-style chaos tests for real Apache Kafka.

Everything kchaos installs lives under this one name, so it never shadows another project's `harness`,
`runner` or `compose`. Two wings stand on one floor: the model (`kchaos.model`: configuration, the history's
vocabulary, the run directory, the fault and scenario tables) is read by both the run wing
(`kchaos.harness`, `kchaos.workloads`, `kchaos.nemesis`: a real cluster, its clients and its faults) and the
judge wing (`kchaos.checkers`, `kchaos.spark_analysis`: the checks, the oracle, the report), which meet only
in the run directory. `kchaos.runner` drives both.
"""
