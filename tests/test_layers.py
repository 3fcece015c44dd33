"""The packages form floors, and every import points down; two wings stand on the model and never import each
other. A newcomer reads the flow from the imports alone: the model (configuration, the history's vocabulary,
the run directory) at the bottom; the run wing (the cluster, then its clients and faults) writes a run
directory; the judge wing (the checks, then the report) reads it; the runner drives both. A change to a lower
floor never needs one above it, and the judge can be installed, imported and run without a cluster's
libraries. Every import counts, those inside functions and under TYPE_CHECKING too: an arrow hidden in a
function body is still an arrow."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "kchaos"

#: Bottom first. Packages on one floor do not import each other; `bench` measures the checkers from outside.
FLOORS: tuple[tuple[str, ...], ...] = (
    ("model",),
    ("harness", "checkers"),
    ("workloads", "nemesis", "spark_analysis"),
    ("runner",),
    ("bench",),
)
FLOOR = {package: level for level, packages in enumerate(FLOORS) for package in packages}
#: The two wings: neither imports a package of the other. They meet only in the run directory, whose
#: vocabulary is the model's.
WINGS: dict[str, frozenset[str]] = {
    "run": frozenset({"harness", "workloads", "nemesis"}),
    "judge": frozenset({"checkers", "spark_analysis"}),
}
WING = {package: wing for wing, packages in WINGS.items() for package in packages}


def _folder(package: str) -> Path:
    return ROOT / package if package == "bench" else ROOT / PACKAGE / package


def _kchaos_package(dotted: str) -> str | None:
    """The kchaos package `dotted` names (`kchaos.harness.cluster` -> `harness`), `bench` for the benchmarks,
    None for anything else."""
    parts = dotted.split(".")
    if parts[0] == "bench":
        return "bench"
    if parts[0] == PACKAGE and len(parts) > 1 and parts[1] in FLOOR:
        return parts[1]
    return None


def imported_packages(path: Path, own: str) -> list[tuple[int, str]]:
    """(line, kchaos package) for every import in `path`, a module of package `own`; relative imports
    resolved."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [_kchaos_package(alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                targets = [own]
            elif node.module == PACKAGE:  # `from kchaos import harness`
                targets = [alias.name if alias.name in FLOOR else None for alias in node.names]
            else:
                targets = [_kchaos_package(node.module or "")]
        else:
            continue
        found += [(node.lineno, target) for target in targets if target is not None]
    return found


def wrong_imports() -> list[str]:
    wrong = []
    for package, level in FLOOR.items():
        for path in sorted(_folder(package).rglob("*.py")):
            for line, target in imported_packages(path, package):
                if target == package:
                    continue
                place = f"{path.relative_to(ROOT)}:{line}"
                if FLOOR[target] >= level:
                    where = "beside" if FLOOR[target] == level else "above"
                    wrong.append(f"{place} imports {target}, a floor {where} {package}")
                elif package in WING and target in WING and WING[package] != WING[target]:
                    wrong.append(
                        f"{place} imports {target}, of the {WING[target]} wing, from the {WING[package]} wing"
                    )
    return wrong


def test_every_import_points_down_and_stays_in_its_wing() -> None:
    assert wrong_imports() == []


def test_every_package_has_a_floor() -> None:
    on_disk = {init.parent.name for init in (ROOT / PACKAGE).glob("*/__init__.py")}
    # data, and the workers the client images run (which import only each other: see below)
    resources = {"compose", "matrices"}
    assert on_disk - resources == set(FLOOR) - {"bench"}


def _tree(tmp_path: Path) -> None:
    for package in FLOOR:
        _folder(package).mkdir(parents=True, exist_ok=True)


def test_the_walk_sees_an_upward_import(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The check itself: an import of the runner from the model, inside a function, is reported."""
    monkeypatch.setattr(f"{__name__}.ROOT", tmp_path)
    _tree(tmp_path)
    (tmp_path / PACKAGE / "model" / "bad.py").write_text("def f():\n    from kchaos.runner.cli import main\n")
    assert wrong_imports() == ["kchaos/model/bad.py:2 imports runner, a floor above model"]


def test_the_walk_sees_an_import_across_the_wings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A checker reaching into the cluster is reported though the cluster stands on a lower floor."""
    monkeypatch.setattr(f"{__name__}.ROOT", tmp_path)
    _tree(tmp_path)
    (tmp_path / PACKAGE / "spark_analysis" / "bad.py").write_text("from kchaos import harness\n")
    assert wrong_imports() == [
        "kchaos/spark_analysis/bad.py:1 imports harness, of the run wing, from the judge wing"
    ]


#: The judge's subpackage that must not need a JVM: `kchaos rules`, the terminal's verdict and the pandas
#: reference read the oracle's rules without starting Spark.
PURE_RULES = "kchaos.checkers.rules"
#: Most modules one folder of the judge may list, so each still reads at a glance.
MOST_MODULES_PER_FOLDER = 12


def _module_file(dotted: str) -> Path | None:
    """The file of kchaos module `dotted` (a package's `__init__.py`), None for anything outside kchaos."""
    if dotted.split(".")[0] != PACKAGE:
        return None
    base = ROOT.joinpath(*dotted.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _imported_names(path: Path) -> set[str]:
    """Every dotted name `path` imports, those inside functions and under TYPE_CHECKING too, with each
    `from x import y` also as `x.y` (y may be a module)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
            names |= {f"{node.module}.{alias.name}" for alias in node.names}
    return names


def reached_libraries(package: str) -> set[str]:
    """The top-level names of everything outside kchaos that `package`'s modules import, directly or
    through the kchaos modules they import (and the packages those sit in), followed to the end."""
    folder = ROOT.joinpath(*package.split("."))
    todo = sorted(folder.rglob("*.py"))
    seen: set[Path] = set()
    libraries: set[str] = set()
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        for name in _imported_names(path):
            parts = name.split(".")
            if parts[0] != PACKAGE:
                libraries.add(parts[0])
                continue
            # importing a.b.c runs a/__init__, a/b/__init__ and a/b/c
            todo += [
                f for i in range(2, len(parts) + 1) if (f := _module_file(".".join(parts[:i]))) is not None
            ]
    return libraries


def test_the_rules_import_no_spark() -> None:
    reached = reached_libraries(PURE_RULES)
    assert reached, "the walk found no import at all"
    assert {"pyspark", "py4j"} & reached == set()


def test_the_walk_sees_spark_reached_through_kchaos(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The check itself: a rule importing a kchaos module that imports pyspark inside a function is seen."""
    monkeypatch.setattr(f"{__name__}.ROOT", tmp_path)
    rules = tmp_path / PACKAGE / "checkers" / "rules"
    rules.mkdir(parents=True)
    (tmp_path / PACKAGE / "checkers" / "__init__.py").write_text("")
    (tmp_path / PACKAGE / "checkers" / "spark_user.py").write_text("def f():\n    import pyspark.sql\n")
    (rules / "rule.py").write_text("from kchaos.checkers import spark_user\n")
    assert "pyspark" in reached_libraries(PURE_RULES)


def crowded_folders() -> dict[str, int]:
    """Each folder of the judge's checks listing more than `MOST_MODULES_PER_FOLDER` modules, with its
    count (`__init__.py` aside)."""
    checkers = ROOT / PACKAGE / "checkers"
    counts = {
        str(folder.relative_to(ROOT)): len([p for p in folder.glob("*.py") if p.name != "__init__.py"])
        for folder in [checkers, *(init.parent for init in checkers.rglob("__init__.py"))]
    }
    return {folder: count for folder, count in counts.items() if count > MOST_MODULES_PER_FOLDER}


def test_no_folder_of_the_checks_lists_more_than_a_glance_of_modules() -> None:
    assert crowded_folders() == {}


#: The environment variables kchaos reads: other tools' own settings, which it honours as those tools do.
OTHER_TOOLS_SETTINGS = {"JAVA_HOME", "PYSPARK_GATEWAY_PORT", "DOCKER_HOST"}


def _environment_reads(tree: ast.AST) -> set[str]:
    """The names `os.environ.get(NAME)`, `os.getenv(NAME)` and `NAME in os.environ` read, where NAME is a
    string literal or a module constant holding one."""
    constants = {
        target.id: node.value.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
        for target in node.targets
        if isinstance(target, ast.Name)
    }  # fmt: skip

    def named(arg: ast.expr) -> str | None:
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
            return arg.value
        return constants.get(arg.id) if isinstance(arg, ast.Name) else None

    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and node.args:
            spelled = ast.unparse(node.func)
            if spelled in ("os.environ.get", "os.getenv", "environ.get", "getenv"):
                found.add(named(node.args[0]) or "<computed>")
        elif (
            isinstance(node, ast.Compare)
            and any(isinstance(op, ast.In) for op in node.ops)
            and any(ast.unparse(side).endswith("environ") for side in node.comparators)
        ):
            found.add(named(node.left) or "<computed>")
    return found


def test_kchaos_reads_no_environment_variable_of_its_own() -> None:
    """Installing kchaos changes nothing else: its settings are options, never environment variables."""
    read = {
        name: str(path.relative_to(ROOT))
        for path in (ROOT / PACKAGE).rglob("*.py")
        for name in _environment_reads(ast.parse(path.read_text(encoding="utf-8")))
    }
    assert set(read) <= OTHER_TOOLS_SETTINGS, {n: p for n, p in read.items() if n not in OTHER_TOOLS_SETTINGS}


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _loaded_with(tree: ast.AST) -> list[ast.AST]:
    """The nodes of a module that run or are read with it: everything but function bodies (an import
    deferred into a function is how a module already breaks a cycle; one under TYPE_CHECKING counts)."""
    nodes: list[ast.AST] = []
    for child in ast.iter_child_nodes(tree):
        if not isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            nodes.append(child)
            nodes += _loaded_with(child)
    return nodes


def import_graph() -> dict[str, set[str]]:
    """Every kchaos module and the kchaos modules it imports as it loads (`from kchaos.x import y` names
    module `x.y` when `y` is one, else `x`), those under TYPE_CHECKING included."""
    modules = {_module_name(path): path for path in sorted((ROOT / PACKAGE).rglob("*.py"))}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        targets: set[str] = set()
        for node in _loaded_with(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            if isinstance(node, ast.Import):
                targets |= {alias.name for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                targets |= {
                    f"{node.module}.{alias.name}" if f"{node.module}.{alias.name}" in modules else node.module
                    for alias in node.names
                }
        graph[name] = {target for target in targets if target in modules and target != name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The graph's strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_two_modules_import_each_other_even_through_others() -> None:
    """An import cycle means neither module can be read, tested or moved without the other (the one
    `kchaos.workloads.processes.client_supervisor` had with the producers' workload is gone)."""
    assert cycles(import_graph()) == []


def test_the_walk_sees_a_cycle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_the_container_side_workers_import_only_the_standard_library_confluent_kafka_and_each_other() -> None:
    """kchaos/compose/rdkafka/*.py run in the librdkafka client image, which holds nothing else of kchaos
    (kchaos/harness/rdkafka_image.py); the harness imports their line formats from them, never the reverse."""
    allowed = set(sys.stdlib_module_names) | {"confluent_kafka", "__future__"}
    wrong = []
    for path in sorted((ROOT / PACKAGE / "compose" / "rdkafka").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            for name in names:
                if name.split(".")[0] not in allowed and not name.startswith("kchaos.compose.rdkafka"):
                    wrong.append(f"{path.name} imports {name}")
    assert wrong == []
