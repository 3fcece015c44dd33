"""The bounds of the run's numeric settings that are not plain numbers in a field: each says why it lies
where it does, so a bound is changed knowing what it protects."""

from __future__ import annotations

#: The longest run: a day of writing. Every time is bounded and finite (no inf, no nan) because the fault
#: planner walks the run's timeline fault by fault: `--duration inf` planned forever before any container
#: started, and a day is already more than any chaos run needs.
MAX_DURATION_S = 24 * 3600
#: The longest any one wait, fault or quiet period may last: an hour, longer than any Kafka failover or
#: recovery; a larger value is a typo (`1e300`) that would hang the run instead of failing it.
MAX_TIMEOUT_S = 3600
#: The most examples of each anomaly a check keeps: more than anyone reads, and few enough that the
#: results and the report stay small (2^31 was taken, then failed in Spark).
MAX_EXAMPLES = 10_000
#: The lowest send rate other than 0 (no limit): below it a run makes next to no sends (1e-300 made none).
MIN_RATE = 0.1
#: A broker's heap bounds in MiB: Kafka does not start in less than 128m; more than 64g is a typo on a
#: machine that runs three brokers and the clients.
BROKER_HEAP_MB = (128, 64 * 1024)
#: librdkafka's own ceiling on `request.timeout.ms` (15 minutes): above it the producer refuses to start.
MAX_REQUEST_TIMEOUT_MS = 900_000
