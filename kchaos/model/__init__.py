"""The model both wings read: configuration (with the fault table, specs and plan it validates), the
scenario table, what each Kafka release needs, the history and its vocabulary, the run directory's files,
phases, progress and matrices. It imports no other kchaos package and loads no cluster library (docker,
testcontainers, confluent_kafka), so the judge can read a run directory on a machine without them."""
