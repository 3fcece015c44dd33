"""How a refused setting reads: the field, its flag, what is wrong and the range a value must be in.

Apart from kchaos/model/config.py (the rules) so that the flags' help (kchaos/runner/config_options.py) and
the refusals write a field's range the same way, from the same bounds: what `--help` promises is what a
refusal asks for.
"""

from __future__ import annotations

import annotated_types
from pydantic.fields import FieldInfo
from pydantic_core import ErrorDetails

#: pydantic's error types for a number outside its field's bounds, or not a number at all (inf, nan).
_OUT_OF_RANGE = {
    "finite_number", "greater_than", "greater_than_equal", "less_than", "less_than_equal",
}  # fmt: skip


def value_range(field: FieldInfo) -> str | None:
    """The field's numeric bounds in click's notation (`1<=x<=9`, `x>0`, `0<x<=20000`), None without any."""
    low: tuple[object, str] | None = None  # (bound, relation to x)
    high: tuple[object, str] | None = None
    for bound in field.metadata:
        if isinstance(bound, annotated_types.Ge):
            low = (bound.ge, "<=")
        elif isinstance(bound, annotated_types.Gt):
            low = (bound.gt, "<")
        elif isinstance(bound, annotated_types.Le):
            high = (bound.le, "<=")
        elif isinstance(bound, annotated_types.Lt):
            high = (bound.lt, "<")
    if low is not None and high is not None:
        return f"{low[0]}{low[1]}x{high[1]}{high[0]}"
    if low is not None:
        return f"x{low[1].replace('<', '>')}{low[0]}"
    return None if high is None else f"x{high[1]}{high[0]}"


def field_error(error: ErrorDetails, fields: dict[str, FieldInfo]) -> str:
    """One refused value as `field (--flag): what is wrong`; a number out of range (or inf, or nan) also
    gets the value given and the range its flag's help shows, which is the fix."""
    message = error["msg"].removeprefix("Value error, ")
    name = ".".join(str(part) for part in error["loc"])
    field = fields.get(str(error["loc"][0]))
    bounds = value_range(field) if field is not None else None
    if error["type"] in _OUT_OF_RANGE and bounds is not None:
        message = f"{message}, got {error['input']!r}; give a value in {bounds}"
    return f"{name} (--{name.replace('_', '-')}): {message}"
