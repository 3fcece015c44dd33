"""Bad input is refused with exit status 2 and a first line that says what is wrong and where, and what is
not bad input (a reader that closes the pipe, `--help`) is not treated as a failure.

Nothing here reaches a Docker engine, a cluster or Spark: where a command would, that step is replaced."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner, Result

from kchaos.runner.cli import main


def invoke(args: list[str]) -> Result:
    return CliRunner().invoke(main, args, env={"KCHAOS_DEBUG": ""})


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
