"""The clients that are processes, each in a container of its own (`--client java` and
`--client librdkafka-process`): what starts, records, supervises and stops them, whichever client library
the process runs (`java/`, `rdkafka/`)."""
