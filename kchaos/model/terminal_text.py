"""Text from a run's data made safe to print on a terminal: every control character shown as an escape.

Record values, process names and broker log lines can come from imported logs, that is from anyone: a
value `producer-0-44\\x1b]0;PWNED\\x07\\x1b[2J` printed raw by `kchaos explain` retitled the terminal and
cleared it.
Whatever a command prints from data goes through `printable`, which writes each character of Unicode's
category C (controls, formats such as bidirectional overrides, surrogates, private use, unassigned) the way
Python writes it in a string literal, so the text is still all there to read.
"""

from __future__ import annotations

import unicodedata


def _escaped(char: str) -> str:
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def printable(text: str, newlines: bool = False) -> str:
    """`text` with every character of category C escaped (`\\x1b`, `\\u202e`); with `newlines`, line breaks
    are kept (a message of several lines), else they are escaped too (one line of a story)."""
    if text.isprintable():  # the common case, at C speed
        return text
    return "".join(
        char
        if (newlines and char == "\n") or not unicodedata.category(char).startswith("C")
        else _escaped(char)
        for char in text
    )
