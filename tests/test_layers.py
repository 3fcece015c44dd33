"""The packages form floors, and every import points down: a newcomer reads the flow config -> cluster ->
(workloads, nemesis) -> history -> checkers -> reports -> runner from the imports alone, and a change to a
lower floor never needs one above it. Every import counts, those inside functions and under
TYPE_CHECKING too: an arrow hidden in a function body is still an arrow."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

#: Bottom first. Packages on one floor do not import each other; `bench` measures the checkers from outside.
FLOORS: tuple[tuple[str, ...], ...] = (
    ("harness",),
    ("workloads", "nemesis"),
    ("checkers",),
    ("spark_analysis",),
    ("runner",),
    ("bench",),
)
FLOOR = {package: level for level, packages in enumerate(FLOORS) for package in packages}


def imported_packages(path: Path) -> list[tuple[int, str]]:
    """(line, top-level kchaos package) for every import in `path`, relative imports resolved."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    own = path.relative_to(ROOT).parts[0]
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = [own if node.level else (node.module or "")]
        else:
            continue
        found += [(node.lineno, name.split(".")[0]) for name in names if name.split(".")[0] in FLOOR]
    return found


def upward_imports() -> list[str]:
    wrong = []
    for package, level in FLOOR.items():
        for path in sorted((ROOT / package).rglob("*.py")):
            for line, target in imported_packages(path):
                if target != package and FLOOR[target] >= level:
                    where = "beside" if FLOOR[target] == level else "above"
                    place = f"{path.relative_to(ROOT)}:{line}"
                    wrong.append(f"{place} imports {target}, a floor {where} {package}")
    return wrong


def test_every_import_points_down() -> None:
    assert upward_imports() == []


def test_the_walk_sees_an_upward_import(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The check itself: an import of the runner from the harness, inside a function, is reported."""
    (tmp_path / "harness").mkdir()
    (tmp_path / "harness" / "bad.py").write_text("def f():\n    from runner.cli import main\n")
    for package in FLOOR:
        (tmp_path / package).mkdir(exist_ok=True)
    monkeypatch.setattr(f"{__name__}.ROOT", tmp_path)
    assert upward_imports() == ["harness/bad.py:2 imports runner, a floor above harness"]
