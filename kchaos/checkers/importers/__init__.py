"""Importers of other tools' output: Kafka's own VerifiableProducer and VerifiableConsumer logs turned
into a kchaos run directory, so the same checks judge them.

Separate because they write a run directory rather than read one: they stand where the run wing would,
using only the model's vocabulary, and nothing else in the judge depends on them.
"""
