"""kchaos installed from its wheel works outside a clone: the wheel carries the image recipe and the shipped
matrix files, found through the installed packages; it leaves `bench/` (used from a clone only) out; every
package in it is marked typed; and it declares exactly the third-party packages its code imports.

The wheel is built offline with this venv's build backend, installed into a fresh venv, and asked from a
directory outside the repository. The dependencies are borrowed from this venv's site-packages through a
`.pth` file rather than installed again; kchaos's own code must still come from the fresh venv."""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from email.parser import Parser
from importlib.metadata import packages_distributions
from pathlib import Path

import pytest

from kchaos.harness.image import BASE_RECIPE_FILES, KAFKA_RECIPE_FILES, recipe_digest
from kchaos.model.matrix import shipped_matrices

ROOT = Path(__file__).resolve().parent.parent
FIX = "./setup.sh installs the build backend (setuptools>=68 and wheel, in the dev extra) into .venv"

#: Run by the fresh venv's interpreter: where kchaos's modules, its recipe and a shipped matrix are, and the
#: recipe digests, which must equal a clone's so an installed kchaos never rebuilds a clone's images.
PROBE = """
import json, sys
import kchaos.compose, kchaos.harness, kchaos.matrices, kchaos.runner.cli
modules = (kchaos.compose, kchaos.harness, kchaos.matrices, kchaos.runner.cli)
from kchaos.harness.image import BASE_RECIPE_FILES, KAFKA_RECIPE_FILES, recipe_digest, recipe_dir
from kchaos.model.matrix import find_matrix_file, load_matrix

recipe = recipe_dir()
example = find_matrix_file("example")
print(json.dumps({
    "modules": [module.__file__ for module in modules],
    "recipe_files": [str(recipe / name) for name in BASE_RECIPE_FILES + KAFKA_RECIPE_FILES],
    "base_recipe": recipe_digest(BASE_RECIPE_FILES),
    "kafka_recipe": recipe_digest(KAFKA_RECIPE_FILES, "4.3.1", "base"),
    "example": str(example),
    "example_name": load_matrix(example).name,
}))
"""


@dataclass(frozen=True)
class Installed:
    wheel: Path
    venv: Path
    outside: Path  # a working directory outside the repository

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        """Runs `args` from `outside`, with nothing of the caller's environment pointing into the clone."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON") and k != "VIRTUAL_ENV"}
        return subprocess.run(
            args, cwd=self.outside, env=env, capture_output=True, text=True, check=False, timeout=120
        )


def _source_copy(dest: Path) -> Path:
    """The repository's packages and build files, so building never writes into the clone."""
    dest.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, dest / name)
    shutil.copytree(ROOT / "kchaos", dest / "kchaos", ignore=shutil.ignore_patterns("__pycache__", "data"))
    return dest


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    work = tmp_path_factory.mktemp("wheel")
    source = _source_copy(work / "source")
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-q",
         "-w", str(work / "dist"), str(source)],
        capture_output=True, text=True, check=False, timeout=300,
    )  # fmt: skip
    assert built.returncode == 0, (
        f"building the wheel failed; {FIX}:\n{(built.stdout + built.stderr)[-3000:]}"
    )
    (wheel,) = (work / "dist").glob("kchaos-*.whl")

    venv = work / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--no-index", "-q",
         str(wheel)],
        check=True, timeout=300,
    )  # fmt: skip
    # Only directories named site-packages: neither the clone (on sys.path here) nor this venv's `.pth`
    # files, which .pth lines do not process, so this venv's editable kchaos stays out.
    borrowed = [p for p in sys.path if Path(p).name == "site-packages"]
    (site_packages,) = (venv / "lib").glob("python*/site-packages")
    (site_packages / "kchaos-test-dependencies.pth").write_text("\n".join(borrowed) + "\n", encoding="utf-8")
    outside = work / "elsewhere"
    outside.mkdir()
    return Installed(wheel, venv, outside)


def _inside(path: str, folder: Path) -> bool:
    return Path(path).resolve().is_relative_to(folder.resolve())


def test_the_installed_kchaos_finds_its_recipe_and_matrices_in_its_own_install(installed: Installed) -> None:
    probe = installed.run(str(installed.venv / "bin" / "python"), "-I", "-c", PROBE)

    assert probe.returncode == 0, probe.stderr
    found = json.loads(probe.stdout)
    for path in [*found["modules"], *found["recipe_files"], found["example"]]:
        assert _inside(path, installed.venv), f"{path} is not from the installed wheel"
        assert Path(path).is_file(), path
    assert found["example_name"] == "example"
    assert found["base_recipe"] == recipe_digest(BASE_RECIPE_FILES), "a clone's base image would be rebuilt"
    assert found["kafka_recipe"] == recipe_digest(KAFKA_RECIPE_FILES, "4.3.1", "base")


def test_the_installed_command_runs_a_shipped_matrix_by_name(installed: Installed) -> None:
    """`kchaos matrix NAME` looks NAME up among the shipped files: an unknown one is refused, naming them."""
    result = installed.run(str(installed.venv / "bin" / "kchaos"), "matrix", "no-such-matrix")

    assert result.returncode == 2, result.stdout + result.stderr
    assert f"ships: {', '.join(shipped_matrices())}" in result.stderr
    assert "Traceback" not in result.stderr


def _packages(names: list[str]) -> set[str]:
    """The wheel's top-level packages."""
    return {name.split("/")[0] for name in names if name.endswith("/__init__.py") and name.count("/") == 1}


def test_the_wheels_only_top_level_package_is_kchaos(installed: Installed) -> None:
    """Installing kchaos adds one import name: it never shadows another project's `harness` or `runner`."""
    names = zipfile.ZipFile(installed.wheel).namelist()
    top_level = {name.split("/")[0] for name in names if ".dist-info/" not in name}

    assert top_level == {"kchaos"}
    assert not [name for name in names if name.startswith(("bench/", "tests/"))]


def test_the_wheel_ships_every_kchaos_package_each_marked_typed(installed: Installed) -> None:
    names = zipfile.ZipFile(installed.wheel).namelist()
    in_repository = {str(init.parent.relative_to(ROOT)) for init in (ROOT / "kchaos").rglob("__init__.py")}
    shipped = {name.rsplit("/", 1)[0] for name in names if name.endswith("/__init__.py")}

    assert shipped == in_repository
    assert sorted(p for p in shipped if f"{p}/py.typed" not in names) == [], "not marked typed"


def _third_party_imports(wheel: zipfile.ZipFile, own: set[str]) -> set[str]:
    imported: set[str] = set()
    for name in wheel.namelist():
        if name.endswith(".py"):
            for node in ast.walk(ast.parse(wheel.read(name), filename=name)):
                if isinstance(node, ast.Import):
                    imported |= {alias.name.split(".")[0] for alias in node.names}
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    imported.add(node.module.split(".")[0])
    return imported - own - set(sys.stdlib_module_names)


def _canonical(distribution: str) -> str:
    return re.sub(r"[-_.]+", "-", distribution).lower()


def test_the_wheel_declares_exactly_the_packages_its_code_imports(installed: Installed) -> None:
    wheel = zipfile.ZipFile(installed.wheel)
    (metadata,) = [name for name in wheel.namelist() if name.endswith(".dist-info/METADATA")]
    requires = Parser().parsestr(wheel.read(metadata).decode()).get_all("Requires-Dist") or []
    declared = {
        _canonical(re.split(r"[\s<>=!~;\[(]", line, maxsplit=1)[0])
        for line in requires
        if "extra ==" not in line
    }
    providers = packages_distributions()

    imported = {
        _canonical(providers.get(module, [module])[0])
        for module in _third_party_imports(wheel, _packages(wheel.namelist()))
    }

    assert declared == imported


def test_the_installed_kchaos_knows_the_broker_property_names_a_clone_knows(installed: Installed) -> None:
    """The names `--broker-config` keys are judged by are a data file beside the code: the wheel ships it."""
    from kchaos.model.broker_property_names import broker_names

    probe = installed.run(
        str(installed.venv / "bin" / "python"), "-I", "-c",
        "import json, kchaos.model.broker_property_names as names\n"
        "print(json.dumps([names.__file__, names.broker_names().known]))",
    )  # fmt: skip

    assert probe.returncode == 0, probe.stderr
    module, known = json.loads(probe.stdout)
    assert _inside(module, installed.venv)
    assert {name: tuple(span) for name, span in known.items()} == broker_names().known
