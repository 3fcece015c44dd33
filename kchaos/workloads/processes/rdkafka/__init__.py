"""librdkafka as processes (kchaos/compose/rdkafka/*_worker.py): each workload's command line and settings,
and librdkafka's outcome rules for what its workers print."""
