"""Counts in words: `1 fault`, `2 faults`. The one place a message puts a noun after a number, so no line
reads "with 1 faults" or "1 Kafka nodes".

Pure: every layer's messages use it.
"""

from __future__ import annotations


def plural(count: int, noun: str, many: str | None = None) -> str:
    """`noun` for a count of one, else its plural (`many`, or `noun` with an s)."""
    return noun if count == 1 else many or f"{noun}s"


def counted(count: int, noun: str, many: str | None = None) -> str:
    """`1 fault`, `0 faults`, `3 nodes`: the count and the noun as that count takes it."""
    return f"{count} {plural(count, noun, many)}"
