"""Click options made from RunConfig's fields, so a setting's flag, default, type, help and range are
written once, on its field in kchaos/model/config.py.

`kchaos run` has one flag per field (`run_options`); other commands borrow single ones (`config_option`,
e.g. --spark-master). The range a flag's help shows comes from the field's bounds, written as click writes
the range of a number type (`[default: 3; 1<=x<=9]`). It is only shown: RunConfig alone checks values,
so a bad one is refused in the same words from a flag, a matrix file or the pytest plugin.
"""

from __future__ import annotations

import types
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal, TypeVar, Union, get_args, get_origin

import click
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from kchaos.model.config import RunConfig
from kchaos.model.field_errors import value_range

__all__ = [
    "ASCII_FLOAT",
    "ASCII_INT",
    "ConfigOption",
    "config_option",
    "flag_name",
    "run_options",
    "value_range",
]

FC = TypeVar("FC", bound=Callable[..., Any])

#: The metavar of a repeatable KEY=VALUE flag, which a `dict[str, str]` field becomes.
KEY_VALUE = "KEY=VALUE"


class ConfigOption(click.Option):
    """An option whose help shows its field's range beside the default, as click shows a number range's."""

    def __init__(self, *args: Any, value_range: str | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.value_range = value_range

    def get_help_extra(self, ctx: click.Context) -> click.types.OptionHelpExtra:
        extra = super().get_help_extra(ctx)
        if self.value_range is not None:
            extra["range"] = self.value_range
        return extra


def _ascii(
    value: Any, kind: click.ParamType[Any], param: click.Parameter | None, ctx: click.Context | None
) -> None:
    """Fails, naming the flag, for a number written with digits other than 0-9: Python's int and float
    also read fullwidth and Arabic-Indic digits, which nothing a run passes them to does."""
    if isinstance(value, str) and not value.isascii():
        kind.fail(f"{value!r} holds a character outside ASCII; write it with the digits 0-9", param, ctx)


class AsciiInt(click.types.IntParamType):
    """click's whole number, in ASCII digits only."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        _ascii(value, self, param, ctx)
        return super().convert(value, param, ctx)


class AsciiFloat(click.types.FloatParamType):
    """click's number, in ASCII digits only."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        _ascii(value, self, param, ctx)
        return super().convert(value, param, ctx)


#: A whole number and a number as a flag takes them (`--partitions` with a fullwidth digit is refused).
ASCII_INT = AsciiInt()
ASCII_FLOAT = AsciiFloat()


def flag_name(field: str) -> str:
    """`--fault-duration` for `fault_duration`."""
    return "--" + field.replace("_", "-")


def _without_none(annotation: Any) -> Any:
    """`float` for `float | None`; an optional field's flag is simply left out."""
    if get_origin(annotation) in (Union, types.UnionType):
        kept = [arg for arg in get_args(annotation) if arg is not type(None)]
        if len(kept) == 1:
            return kept[0]
    return annotation


def _kind(name: str, field: FieldInfo) -> dict[str, Any]:
    """The click settings for the field's type; a type with no flag form fails at import, naming the field."""
    annotation = _without_none(field.annotation)
    origin = get_origin(annotation)
    if annotation is bool:
        return {"is_flag": True}
    if origin is Literal:
        return {"type": click.Choice([str(choice) for choice in get_args(annotation)])}
    if origin is dict:
        return {"multiple": True, "metavar": KEY_VALUE, "type": click.STRING}
    if origin is tuple:  # a comma-separated list, which the field's validator splits
        return {"type": click.STRING}
    simple: dict[Any, click.ParamType[Any]] = {
        int: ASCII_INT,
        float: ASCII_FLOAT,
        str: click.STRING,
        Path: click.Path(path_type=Path),
    }
    if annotation in simple:
        return {"type": simple[annotation]}
    raise TypeError(f"RunConfig.{name}: a field of type {annotation} has no flag form; add one here")


def _default(field: FieldInfo) -> Any:
    """The flag's default: the field's, as the flag spells it; None where a factory makes it per run."""
    if field.default is PydanticUndefined:  # default_factory: a new value per run (the run id)
        return None
    if isinstance(field.default, tuple):
        return ",".join(field.default)
    if isinstance(field.default, Path):
        return str(field.default)
    return field.default


def config_option(name: str, **overrides: Any) -> Callable[[FC], FC]:
    """The option for RunConfig field `name`; `overrides` replace click settings (e.g. a command's help)."""
    field = RunConfig.model_fields[name]
    kind = _kind(name, field)
    flag = flag_name(name)
    declarations = [f"{flag}/--no-{flag[2:]}" if kind.pop("is_flag", False) else flag, name]
    settings: dict[str, Any] = {
        "help": field.description,
        "show_default": True,
        "value_range": value_range(field),
        "default": () if kind.get("multiple") else _default(field),
        **kind,
        **overrides,
    }
    return click.option(*declarations, cls=ConfigOption, **settings)


def run_options(command: FC) -> FC:
    """Gives `command` one option per RunConfig field, in the fields' order."""
    for name in reversed(RunConfig.model_fields):
        command = config_option(name)(command)
    return command
