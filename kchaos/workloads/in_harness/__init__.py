"""The clients that are threads of the harness process (`--client librdkafka`): confluent-kafka producers,
readers, group members and eos processors, recorded as they call the client."""
