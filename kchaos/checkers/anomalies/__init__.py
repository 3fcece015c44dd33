"""The anomaly families, each cut from the passes' flagged rows as occurrences with an `id`, their
registry in report order, the examples completed from the history, and the findings (a count and the
first occurrences per anomaly).

Separate from the passes, which say how rows are grouped, because an anomaly is a definition (the same
one the pandas reference in `tests.reference` holds) and reads best beside its siblings of one family.
"""
