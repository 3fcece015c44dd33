"""The librdkafka workers, which run inside the `kchaos/rdkafka-client` image
(kchaos/harness/rdkafka_image.py) at these dotted names: Python's standard library and confluent-kafka only.
The harness imports the line formats they print from here, so each is defined once."""
