"""The one error the cluster harness raises, in a module of its own so that both the cluster's lifecycle
(`kchaos.harness.cluster`) and the questions asked of its metadata (`kchaos.harness.metadata`) can raise
it."""


class ClusterError(RuntimeError):
    """The cluster did not start or did not reach a waited-for state in time."""
