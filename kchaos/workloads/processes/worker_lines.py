"""The one reader of the client workers' line protocols: a line's kind, its clock and its fields by the names
a format table gives them (kchaos/compose/rdkafka/line_formats.py, where each format is defined)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


class LineError(ValueError):
    """A worker line that is not in the protocol: the worker and this reader disagree."""


def named_fields(line: str, fields: Mapping[str, tuple[str, ...]], protocol: str) -> dict[str, Any]:
    """A worker line's kind, its `time_ns` (every line's second field: the worker's monotonic clock as it
    printed, `kchaos.model.stamped_rows`) and the fields after it by the names `fields` gives each kind
    (`partition` and `offset` as numbers, an empty `offset` None, every `said` field gathered in order):
    the one reader of the workers' line protocols, each table naming its lines. LineError for a line
    outside the protocol."""
    kind, *texts = line.rstrip("\r").split("\t")
    names = fields.get(kind)
    if names is None or len(texts) != len(names) + 1:
        raise LineError(f"not a {protocol} line: {line!r}")
    stamp, *texts = texts
    values: dict[str, Any] = {
        "kind": kind,
        "said": tuple(t for n, t in zip(names, texts, strict=True) if n == "said"),
    }
    try:
        values["time_ns"] = int(stamp)
        if values["time_ns"] < 0:
            raise ValueError(stamp)
        for name, text in zip(names, texts, strict=True):
            if name == "offset" and not text:  # acknowledged without one: librdkafka, for some retries
                values[name] = None
            elif name in ("partition", "offset"):
                values[name] = int(text)
            elif name != "said":
                values[name] = text
    except ValueError:
        raise LineError(f"a {protocol} line without its numbers: {line!r}") from None
    return values
