"""The cluster: real Kafka brokers (and ZooKeeper) in Docker, their images, the metadata they report, their
replicas' logs and the power cut a node goes through. It stands on the model and is the run wing's floor."""
