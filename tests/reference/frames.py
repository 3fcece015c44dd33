"""The pandas vocabulary the reference definitions share: the key columns and null-aware comparisons.

The reference (`tests.reference.anomalies`, `.transactions`, `.groups`) states each anomaly over
pandas frames whose missing values must stay "unknown": a missing offset never equals 0 and a comparison with
it is not true. These few functions say that once, for all three modules.
"""

from __future__ import annotations

import pandas as pd

TP = ["topic", "partition"]
TPO = ["topic", "partition", "offset"]
#: The history columns every reference module reads, by the dtype `normalized` gives them.
STRINGS = ("process", "type", "f", "topic", "value")
INTEGERS = ("partition", "offset", "index")


def normalized(frame: pd.DataFrame, strings: tuple[str, ...], integers: tuple[str, ...]) -> pd.DataFrame:
    """Nullable dtypes, whatever the frame was built from (Parquet, a list of dicts)."""
    out = frame.copy()
    for name in strings:
        out[name] = out[name].astype("string")
    for name in integers:
        out[name] = out[name].astype("Int64")
    return out


def true(mask: pd.Series) -> pd.Series:
    """A comparison involving a missing value is not true."""
    return mask.fillna(False).astype(bool)


def is_in(column: pd.Series, *values: str) -> pd.Series:
    return column.isin(values)


def missing(part: object) -> bool:
    """A value pandas or Parquet left unknown, in any of the forms it takes."""
    return part is None or part is pd.NA or part is pd.NaT or (isinstance(part, float) and part != part)
