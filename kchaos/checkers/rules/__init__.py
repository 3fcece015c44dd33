"""The oracle's rules and the names they speak in: what Kafka promises under each configuration and fault,
the verdict each anomaly count earns, and what a run must have done before an anomaly can be judged.

Kept apart from everything that computes (no pyspark here, directly or through an import): the rules are
read by `kchaos rules`, the terminal's verdict, the report and the pandas reference, none of which needs a
JVM, and a rule can be read and tested without starting one. `tests/test_layers.py` holds it to that.
"""
