"""kchaos harness: the ground floor. Configuration (and the fault specs and plan it validates), images, the
cluster's lifecycle, the history and the run directory's files; it imports no other kchaos package."""

import os

# Ryuk (testcontainers' reaper) would have to be pulled from a registry, which is not reachable where kchaos
# runs; kchaos removes what it creates itself, by label (see harness.sweep).
os.environ.setdefault("TESTCONTAINERS_RYUK_DISABLED", "true")
