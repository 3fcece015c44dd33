"""Names of the files a run directory holds at its top, for everything that writes or reads them.

The harness writes `config.json` and `schedule.json` before the cluster starts; the checker writes
`results.json`. A run directory outlives the run (it is re-checked, reported, compared), so the writer and
every reader must spell these alike.
"""

from __future__ import annotations

CONFIG_NAME = "config.json"
SCHEDULE_NAME = "schedule.json"
RESULTS_NAME = "results.json"
