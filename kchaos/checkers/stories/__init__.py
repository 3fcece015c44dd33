"""The stories a violation tells (`kchaos explain` and the report's "What happened"): a lost record's, a
replica divergence's, a transaction's, each told from everything the run directory kept.

Separate from the anomalies because a story reads the run directory directly (history rows through
pyarrow, replica dumps, brokers' logs) rather than through Spark, and answers *how* where a finding
answers *that*.
"""
