"""Bad input is refused with exit status 2 and a first line that says what is wrong and where, and what is
not bad input (a reader that closes the pipe, `--help`) is not treated as a failure.

Nothing here reaches a Docker engine, a cluster or Spark: where a command would, that step is replaced."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner, Result

from kchaos.model.matrix import KEYS, load_matrix
from kchaos.runner.cli import main


def invoke(args: list[str]) -> Result:
    return CliRunner().invoke(main, args, env={"KCHAOS_DEBUG": ""}, prog_name="kchaos")


def first_line(text: str) -> str:
    return text.splitlines()[0] if text else ""


def test_a_key_set_twice_in_a_matrix_file_is_refused_naming_the_key_and_both_lines(tmp_path: Path) -> None:
    path = tmp_path / "dup.yaml"
    path.write_text("base:\n  duration: 30\naxes:\n  acks: [all]\n  acks: ['1']\n", encoding="utf-8")

    result = invoke(["matrix", str(path)])

    assert result.exit_code == 2, result.output
    assert first_line(result.stderr) == (
        f"kchaos: {path}: line 5: key 'acks' is set twice (first on line 4); YAML would silently keep the "
        "last, so remove one of them"
    )


def test_a_key_set_twice_at_the_top_of_a_matrix_file_is_refused_too(tmp_path: Path) -> None:
    path = tmp_path / "dup.yaml"
    path.write_text("axes: {acks: [all]}\nrepetitions: 1\nrepetitions: 2\n", encoding="utf-8")

    result = invoke(["matrix", str(path)])

    assert result.exit_code == 2, result.output
    assert first_line(result.stderr).startswith(f"kchaos: {path}: line 3: key 'repetitions' is set twice")


@pytest.mark.parametrize(
    ("axis", "example"),
    [
        ("acks: []", "acks: [all]"),
        ("acks: '1'", "acks: ['1']"),
        ("nemesis:", "nemesis: ['kill:target=leader']"),
    ],
)
def test_an_axis_that_is_no_list_of_values_is_refused_with_an_example_that_is_one(
    tmp_path: Path, axis: str, example: str
) -> None:
    path = tmp_path / "empty.yaml"
    path.write_text(f"axes:\n  {axis}\n", encoding="utf-8")

    result = invoke(["matrix", str(path)])

    assert result.exit_code == 2, result.output
    name = axis.partition(":")[0]
    assert first_line(result.stderr) == (
        f"kchaos: {path}: axes.{name} must be a non-empty list of values, e.g. `{example}`"
    )
    values = yaml.safe_load(example)[name]
    assert isinstance(values, list) and values and values != [[]], "the example must itself be right"


def test_matrix_help_describes_every_key_the_loader_accepts(tmp_path: Path) -> None:
    result = invoke(["matrix", "--help"])

    assert result.exit_code == 0, result.output
    assert first_line(result.stdout) == "Usage: kchaos matrix [OPTIONS] MATRIX_FILE"
    described = re.findall(r"^    (\w+): ", result.stdout, flags=re.MULTILINE)
    assert described == list(KEYS)
    path = tmp_path / "every-key.yaml"
    path.write_text(
        "name: every-key\ndescription: all keys\nbase: {duration: 60}\naxes: {acks: [all, '1']}\n"
        "exclude: [{acks: '1'}]\nrepetitions: 2\n",
        encoding="utf-8",
    )
    assert sorted(yaml.safe_load(path.read_text(encoding="utf-8"))) == sorted(KEYS)
    assert len(load_matrix(path).points(tmp_path)) == 2
