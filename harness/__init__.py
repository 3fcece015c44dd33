"""kchaos harness: the ground floor. Configuration (and the fault specs and plan it validates), images, the
cluster's lifecycle, the history and the run directory's files; it imports no other kchaos package."""
