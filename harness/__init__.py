"""kchaos harness: configuration, images, cluster lifecycle and the run lifecycle."""

import os

# Ryuk (testcontainers' reaper) would have to be pulled from a registry, which is not reachable where kchaos
# runs; kchaos removes what it creates itself, by label (see harness.sweep).
os.environ.setdefault("TESTCONTAINERS_RYUK_DISABLED", "true")
