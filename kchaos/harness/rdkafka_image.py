"""The librdkafka worker's image, `kchaos/rdkafka-client:<confluent-kafka version>`: Debian's python3, the
confluent-kafka wheel this kchaos runs with (librdkafka inside it) and the worker modules, which live beside
the image's Dockerfile (kchaos/compose/rdkafka/*.py), on the same Debian base as the brokers.

The wheel is the one of the version installed here, fetched from PyPI by this interpreter's pip for the
image's Python (Debian bookworm's 3.11) and unpacked beside the worker, so the process in the container
runs the same librdkafka as the harness's own clients. Built like the Java client's image
(kchaos/harness/client_image.py): the base, a recipe digest (the Dockerfile and the worker's source), no
registry.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import zipfile
from importlib.metadata import version as installed_version
from pathlib import Path

import docker

from kchaos.harness.image import (
    ImageError,
    base_digest,
    build_image,
    current_image,
    ensure_base,
    recipe_digest,
    recipe_dir,
)

RDKAFKA_REPO = "kchaos/rdkafka-client"
#: What the image's `kchaos.recipe` digest covers inside the recipe package; the workers' sources are
#: folded in too (`worker_modules`).
RDKAFKA_RECIPE_FILES = ("rdkafka/Dockerfile",)
#: Where the worker modules live, beside the Dockerfile: the image holds them at the same dotted names
#: (`kchaos.compose.rdkafka.worker` and its siblings), so they import each other as they do here, and the
#: harness reads the line formats they print from the same modules.
WORKERS_DIR = Path(__file__).resolve().parent.parent / "compose" / "rdkafka"
#: The entry module, as the image's entrypoint runs it (`python3 -m`); it picks a mode's module by name.
WORKER = WORKERS_DIR / "worker.py"
#: The packages above the worker modules, bare in the image: the workers import nothing else of kchaos.
PACKAGE_PATH = ("kchaos", "compose", "rdkafka")
#: The image's Python, Debian bookworm's: the wheel must be built for it.
IMAGE_PYTHON = "3.11"
#: The wheel platforms the image's glibc (bookworm's 2.36) loads: newer releases ship manylinux_2_28 wheels,
#: older ones (2.0.2 to 2.4) manylinux2014 (manylinux_2_17) only.
WHEEL_PLATFORMS = ("manylinux_2_28_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64")


def confluent_kafka_version() -> str:
    """The confluent-kafka this kchaos runs with: the workers get the same."""
    return installed_version("confluent-kafka")


def rdkafka_tag(version: str) -> str:
    return f"{RDKAFKA_REPO}:{version}"


def worker_modules() -> list[Path]:
    """The worker modules the image holds: the entry module, every mode's and what they share (every module
    beside the Dockerfile but the package's `__init__`)."""
    return sorted(path for path in WORKERS_DIR.glob("*.py") if path.name != "__init__.py")


def rdkafka_recipe(version: str, base: str) -> str:
    """The image's `kchaos.recipe` digest: its Dockerfile, the workers' sources, the confluent-kafka version
    and the base's own digest, so a change to any of them rebuilds it and nothing else does."""
    sources = "".join(f"{path.name}\n{path.read_text()}" for path in worker_modules())
    return recipe_digest(RDKAFKA_RECIPE_FILES, version, base, sources)


def ensure_rdkafka_image(
    version: str | None = None, client: docker.DockerClient | None = None, log: bool = True
) -> str:
    """Builds `kchaos/rdkafka-client:<version>` (None: the confluent-kafka this kchaos runs with) when it is
    missing or its recipe changed; returns the tag. An ImageError names a version PyPI has no wheel of for
    the image's Python."""
    client = client or docker.from_env()
    version = version or confluent_kafka_version()
    tag = rdkafka_tag(version)
    recipe = rdkafka_recipe(version, base_digest())
    if current_image(client, tag, recipe):
        return tag
    if log:
        print(f"building {tag}: Debian's python3 and the confluent-kafka {version} wheel", flush=True)
    with tempfile.TemporaryDirectory(prefix="kchaos-rdkafka-image-") as stage_name:
        stage = Path(stage_name)
        wheels = stage / "wheels"
        platforms = [arg for tag in WHEEL_PLATFORMS for arg in ("--platform", tag)]
        fetched = subprocess.run(
            [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
             "--python-version", IMAGE_PYTHON, *platforms, "-d", str(wheels),
             f"confluent-kafka=={version}"],
            check=False, capture_output=True, text=True,
        )  # fmt: skip
        found = sorted(wheels.glob("confluent_kafka-*.whl")) if fetched.returncode == 0 else []
        if not found:
            raise ImageError(
                f"fetching the confluent-kafka {version} wheel for Python {IMAGE_PYTHON} with pip failed: "
                f"{(fetched.stdout + fetched.stderr)[-1500:]}\ncheck that confluent-kafka {version} "
                f"exists on PyPI with a wheel for CPython {IMAGE_PYTHON} on Linux x86_64 "
                "(--librdkafka-version), and that PyPI is reachable"
            )
        opt = stage / "opt"
        with zipfile.ZipFile(found[0]) as wheel:
            wheel.extractall(opt)
        for path in opt.rglob("*.so*"):
            path.chmod(0o755)
        package = opt.joinpath(*PACKAGE_PATH)
        package.mkdir(parents=True)
        for depth in range(1, len(PACKAGE_PATH) + 1):
            # bare packages: the workers import nothing else of kchaos
            opt.joinpath(*PACKAGE_PATH[:depth], "__init__.py").write_text("")
        for path in worker_modules():
            (package / path.name).write_text(path.read_text())
        (stage / "Dockerfile").write_text((recipe_dir() / "rdkafka" / "Dockerfile").read_text())
        base = ensure_base(client, log=log)
        build_image(
            client, stage, tag, {"BASE_IMAGE": base, "CONFLUENT_KAFKA_VERSION": version, "RECIPE": recipe}
        )
    if log:
        print(f"built {tag}", flush=True)
    return tag
