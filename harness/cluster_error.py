"""The one error the cluster harness raises, in a module of its own so that both the cluster's lifecycle
(`harness.cluster`) and the questions asked of its metadata (`harness.metadata`) can raise it."""


class ClusterError(RuntimeError):
    """The cluster did not start or did not reach a waited-for state in time."""
