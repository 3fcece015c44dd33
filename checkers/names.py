"""The anomaly names: one spelling per concept, shared by checks, oracle, results and reports.

Kept apart from the Spark definitions so the oracle (pure Python) can name anomalies without importing
Spark.
"""

from __future__ import annotations

LOST_WRITE = "lost-write"
UNSEEN = "unseen"
DUPLICATE = "duplicate"
INCONSISTENT_OFFSET = "inconsistent-offset"
