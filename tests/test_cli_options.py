"""`kchaos run`'s flags are RunConfig's fields: one flag per field, with the field's default, help and range,
and docs/configuration.md's options table says the same. Every option of every command explains itself."""

from __future__ import annotations

import re
from importlib.metadata import version
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner
from pydantic import Field
from pydantic.fields import FieldInfo

from kchaos.model.config import RunConfig, load_config
from kchaos.runner.cli import main
from kchaos.runner.config_options import flag_name, value_range
from tests.docs_text import section

RUN = main.commands["run"]


def _options(command: click.Command) -> list[click.Option]:
    return [param for param in command.params if isinstance(param, click.Option) and param.name != "help"]


def _commands(group: click.Group, prefix: str = "") -> list[tuple[str, click.Command]]:
    found: list[tuple[str, click.Command]] = []
    for name, command in group.commands.items():
        found.append((prefix + name, command))
        if isinstance(command, click.Group):
            found += _commands(command, f"{prefix}{name} ")
    return found


def _help_extra(option: click.Option) -> dict[str, Any]:
    return dict(option.get_help_extra(click.Context(RUN)))


def _flat(text: str) -> str:
    return " ".join(text.split())


def test_every_field_is_a_run_flag_named_after_it() -> None:
    """... and the one flag that is no setting, `--replay` (it reads them all from a run directory), comes
    first."""
    options = _options(RUN)
    assert options[0].opts == ["--replay"]
    assert [option.name for option in options[1:]] == list(RunConfig.model_fields)
    for option in options[1:]:
        assert option.opts == [flag_name(str(option.name))]


def test_the_flags_defaults_are_the_configurations() -> None:
    """Running with no flag at all configures what RunConfig does by itself."""
    context = RUN.make_context("run", [])
    given = {name: value for name, value in context.params.items() if value not in (None, ())}
    from_flags = load_config(**given).to_json_dict()
    from_model = load_config().to_json_dict()
    assert from_flags.pop("run_id") != "" and from_model.pop("run_id") != ""
    assert from_flags == from_model


def test_run_help_shows_each_fields_help_and_range() -> None:
    # Wide enough that no help text is wrapped (a wrap may split a word at its hyphen).
    result = CliRunner().invoke(main, ["run", "--help"], terminal_width=1000, max_content_width=1000)
    assert result.exit_code == 0, result.output
    shown = _flat(result.output)
    for name, field in RunConfig.model_fields.items():
        assert field.description, f"RunConfig.{name} has no description, so --{name} would have no help"
        assert _flat(field.description) in shown, name
        bounds = value_range(field)
        if bounds is not None:
            assert re.search(
                rf"{re.escape(flag_name(name))} [^\[]*\[(default: [^;\]]*; )?{re.escape(bounds)}\]", shown
            )
    assert (
        "--brokers INTEGER Kafka nodes (with kraft each is a broker and a controller). [default: 3; 1<=x<=9]"
        in shown
    )
    assert "[default: 200.0; x>=0]" in shown


@pytest.mark.parametrize(
    ("field", "shown"),
    [
        (Field(3, ge=1, le=9), "1<=x<=9"),
        (Field(1.0, gt=0), "x>0"),
        (Field(0.0, ge=0), "x>=0"),
        (Field(1.0, gt=0, le=20000), "0<x<=20000"),
        (Field(1, lt=5), "x<5"),
        (Field("text"), None),
    ],
)
def test_a_fields_bounds_read_as_clicks_ranges(field: Any, shown: str | None) -> None:
    assert isinstance(field, FieldInfo)
    assert value_range(field) == shown


def test_every_option_of_every_command_has_help() -> None:
    for path, command in _commands(main):
        for option in _options(command):
            assert option.help, f"kchaos {path} {option.opts[0]} has no help text"


def _docs_rows() -> dict[str, list[str]]:
    """Flag -> [default, range] from the `kchaos run` table of docs/configuration.md, backticks removed."""
    rows: dict[str, list[str]] = {}
    for line in section("configuration.md", "# Configuration reference (`kchaos run`)").splitlines():
        if not line.startswith("| `--"):
            continue
        cells = [cell.strip().replace("`", "") for cell in line.strip("|").split(" | ")]
        flag = re.match(r"--(\[no-\])?[a-z-]+", cells[0])
        assert flag, line
        rows[flag.group(0).replace("[no-]", "")] = cells[1:3]
    return rows


def _shown_default(option: click.Option) -> str:
    if option.is_bool_flag:
        return {True: "on", False: "off"}.get(option.default, "—")  # type: ignore[arg-type]
    return str(_help_extra(option).get("default", "—"))


def _shown_range(option: click.Option) -> str:
    if isinstance(option.type, click.Choice):
        return ", ".join(str(choice) for choice in option.type.choices)
    return str(_help_extra(option).get("range", "—"))


def test_the_docs_table_has_every_flag_with_its_default_and_range() -> None:
    rows = _docs_rows()
    expected = {option.opts[0]: [_shown_default(option), _shown_range(option)] for option in _options(RUN)}
    assert list(rows) == list(expected), "docs/configuration.md must list the flags in --help order"
    wrong = {flag: (rows[flag], want) for flag, want in expected.items() if rows[flag] != want}
    assert not wrong, f"docs/configuration.md row [default, range] differs from the flag's: {wrong}"


def test_version_is_the_installed_packages() -> None:
    result = CliRunner().invoke(main, ["--version"])
    assert result.exit_code == 0
    assert result.output == f"kchaos, version {version('kchaos')}\n"


def test_import_verifiable_and_its_old_name_ask_for_the_same_flags(tmp_path: Path) -> None:
    log = tmp_path / "p.out"
    log.write_text("", encoding="utf-8")
    new = CliRunner().invoke(main, ["import-verifiable", "--producer-log", str(log)])
    old = CliRunner().invoke(main, ["check", "--format", "verifiable", "--producer-log", str(log)])
    assert new.exit_code == old.exit_code == 2
    assert "import-verifiable needs --producer-log FILE" in new.output
    assert "--format verifiable needs --producer-log FILE" in old.output
    assert new.output.split(" needs ", 1)[1] == old.output.split(" needs ", 1)[1]
    imported = [option.opts for option in _options(main.commands["import-verifiable"])]
    checked = [option.opts for option in _options(main.commands["check"]) if option.name != "input_format"]
    assert imported == checked
