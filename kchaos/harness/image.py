"""Which Kafka image a run uses, and building ours when it is missing.

No container registry is reachable where kchaos is developed and tested, so the default image is built
locally from the recipe in `kchaos/compose/` (package data, so an installed kchaos has it too): a
debootstrapped Debian base plus the Apache Kafka jars from Maven Central. Each image carries a `kchaos.recipe`
label (a digest of the recipe files), so a changed recipe rebuilds instead of silently reusing a stale image,
and an unchanged one is never rebuilt.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

import docker
import docker.errors
from docker.models.images import Image

from kchaos.model.config import KAFKA_REPO
from kchaos.model.package_data import package_dir
from kchaos.model.releases import Release

#: The resource package holding the recipe: `kchaos/compose/` in a clone, `site-packages/kchaos/compose/` once
#: installed.
RECIPE_PACKAGE = "kchaos.compose"
BASE_TAG = "kchaos/base:bookworm"
RECIPE_LABEL = "kchaos.recipe"

#: What each image's `kchaos.recipe` digest covers, named inside the recipe package: these files only, so the
#: files beside them (the package's `__init__.py` and `py.typed`, docker-compose.yml) never cause a rebuild.
BASE_RECIPE_FILES = ("base/build-rootfs.sh",)
KAFKA_RECIPE_FILES = (
    "kafka/pom.xml",
    "kafka/Dockerfile",
    "kafka/entrypoint.sh",
    "kafka/kafka-class",
    "kafka/class-archive",
    "kafka/log4j2.properties",
    "kafka/log4j.properties",
    "kafka/tools-log4j.properties",
    "kafka/tools-log4j2.properties",
    "kafka/syncjournal.c",
    "kafka/powercut.c",
    "kafka/clockshift.c",
    "kafka/diskfull.c",
    "kafka/slowdisk.c",
    "kafka/logdirs.h",
)


class ImageError(RuntimeError):
    """An image could not be found or built; the message says which step failed and how to fix it."""


@dataclass(frozen=True)
class ResolvedImage:
    """The image a run uses, recorded in config.json so a run can be reproduced."""

    ref: str
    image_id: str
    kafka_version: str


def recipe_dir() -> Path:
    """Where the recipe's files are on disk: bash runs the base's script and Maven reads the pom from there.

    Every run needs it, `--kafka-image` or not: the network sidecar runs our base image (it has iptables),
    and whether that image is current is decided by the recipe's digest."""
    root = package_dir(RECIPE_PACKAGE)
    if root is None or not (root / "kafka" / "Dockerfile").is_file():
        raise ImageError(
            f"the image recipe (package {RECIPE_PACKAGE!r}) is missing or incomplete ({root}); "
            "reinstall kchaos (in a clone: ./setup.sh)"
        )
    return root


def recipe_digest(files: tuple[str, ...], *extra: str) -> str:
    digest = hashlib.sha256()
    for name in files:
        digest.update(name.encode())
        digest.update((recipe_dir() / name).read_bytes())
    for item in extra:
        digest.update(item.encode())
    return digest.hexdigest()[:16]


def _local_image(client: docker.DockerClient, ref: str) -> Image | None:
    try:
        return client.images.get(ref)
    except docker.errors.ImageNotFound:
        return None


def _current(image: Image | None, recipe: str) -> bool:
    return image is not None and (image.labels or {}).get(RECIPE_LABEL) == recipe


#: Held while the base is checked and built: the images on it are built side by side (`kchaos image build`),
#: and each needs the base only once its own files are staged, so one builds it and the others wait.
_BASE_LOCK = threading.Lock()


def base_digest() -> str:
    """The base's recipe digest, the `kchaos.recipe` label it has once built: every image built on it folds
    this into its own, so a new base rebuilds them too."""
    return recipe_digest(BASE_RECIPE_FILES)


def ensure_base(client: docker.DockerClient, log: bool = True) -> str:
    """Builds the Debian base image when it is missing or its recipe changed."""
    with _BASE_LOCK:
        return _ensure_base(client, log)


def _ensure_base(client: docker.DockerClient, log: bool) -> str:
    recipe = base_digest()
    if _current(_local_image(client, BASE_TAG), recipe):
        return BASE_TAG
    if shutil.which("debootstrap") is None:
        raise ImageError(
            "debootstrap is not installed; run ./setup.sh (it installs it) or apt-get install debootstrap"
        )
    script = recipe_dir() / "base" / "build-rootfs.sh"
    if log:
        print(f"building {BASE_TAG} with debootstrap (a few minutes, once per machine)", flush=True)
    result = subprocess.run(["bash", str(script), BASE_TAG, recipe], check=False)
    if result.returncode != 0:
        raise ImageError(f"building {BASE_TAG} failed (exit {result.returncode}); see the output above")
    return BASE_TAG


def sidecar_image() -> str:
    """The image every node's sidecar runs: our base image (it has iptables), ensured from the engine
    this process talks to, whichever Kafka image the nodes themselves run."""
    return ensure_base(docker.from_env())


def kafka_tag(kafka_version: str) -> str:
    return f"{KAFKA_REPO}:{kafka_version}"


def ensure_kafka_image(
    kafka_version: str, client: docker.DockerClient | None = None, log: bool = True
) -> str:
    """Builds `kchaos/kafka:<version>` when it is missing or its recipe changed; returns the tag."""
    client = client or docker.from_env()
    tag = kafka_tag(kafka_version)
    recipe = recipe_digest(KAFKA_RECIPE_FILES, kafka_version, base_digest())
    if current_image(client, tag, recipe):
        return tag
    if shutil.which("mvn") is None:
        raise ImageError("Maven (mvn) is not installed; run ./setup.sh or apt-get install maven")
    if shutil.which("gcc") is None:
        raise ImageError("gcc is not installed; run ./setup.sh or apt-get install gcc libc6-dev")
    if log:
        print(f"building {tag}: Kafka {kafka_version} jars from Maven Central", flush=True)
    release = Release.parse(kafka_version)
    with tempfile.TemporaryDirectory(prefix="kchaos-image-") as stage_name:
        stage = Path(stage_name)
        kafka_dir = recipe_dir() / "kafka"
        fetch_jars(
            kafka_dir / "pom.xml", stage / "libs",
            [f"-Dkafka.version={kafka_version}", f"-Dkafka.artifact={release.scala_artifact}",
             *(["-Dwith.jaxb"] if release.needs_jaxb else [])],
            f"Kafka {kafka_version} jars",
            f"check that org.apache.kafka:{release.scala_artifact} and kafka-tools exist in that version "
            "(--kafka-version)",
        )  # fmt: skip
        for name in KAFKA_RECIPE_FILES:
            if not name.endswith(("pom.xml", ".c")):
                shutil.copy(recipe_dir() / name, stage / Path(name).name)
        _compile_fault_tools(kafka_dir, stage)
        base = ensure_base(client, log=log)  # staged first: Maven fetches while another thread builds it
        build_image(
            client, stage, tag, {"BASE_IMAGE": base, "KAFKA_VERSION": kafka_version, "RECIPE": recipe}
        )
    if log:
        print(f"built {tag}", flush=True)
    return tag


def fetch_jars(pom: Path, libs: Path, properties: list[str], what: str, fix: str) -> None:
    """Copies the jars `pom` depends on (with `properties`, each `-Dname=value`) from Maven Central into
    `libs`; an ImageError naming `what` failed, Maven's last words and `fix` otherwise."""
    command = ["mvn", "-q", "-B", "-f", str(pom), *properties, f"-Dlibs.dir={libs}"]
    mvn = subprocess.run(
        [*command, "dependency:copy-dependencies"], check=False, capture_output=True, text=True
    )
    if mvn.returncode != 0:
        raise ImageError(f"fetching {what} with Maven failed: {(mvn.stdout + mvn.stderr)[-1500:]}\n{fix}")


def build_image(client: docker.DockerClient, stage: Path, tag: str, buildargs: dict[str, str]) -> None:
    """`docker build` of the staged context as `tag`, from local images only (nothing can be pulled)."""
    try:
        client.images.build(path=str(stage), tag=tag, buildargs=buildargs, rm=True, forcerm=True, pull=False)
    except docker.errors.BuildError as exc:
        output = "".join(str(chunk.get("stream", chunk.get("error", ""))) for chunk in exc.build_log)
        raise ImageError(f"docker build of {tag} failed: {exc}\n{output[-1500:]}") from None


def current_image(client: docker.DockerClient, tag: str, recipe: str) -> bool:
    """Whether `tag` exists here, built from the recipe whose digest is `recipe`."""
    return _current(_local_image(client, tag), recipe)


def _compile_fault_tools(sources: Path, stage: Path) -> None:
    """Compiles what faults that act inside a broker need: the sync journal (preloaded into the broker JVM)
    and the cutter the `power-loss` fault runs before a restart, and the libraries the `clock`,
    `disk-full` and `slow-disk` faults preload. Built on this host: the image is Debian 12 like the machines
    kchaos runs on, so all link against the same glibc."""
    builds = {
        "syncjournal.c": ["-shared", "-fPIC", "-o", str(stage / "libsyncjournal.so")],
        "powercut.c": ["-o", str(stage / "powercut")],
        "clockshift.c": ["-shared", "-fPIC", "-o", str(stage / "libclockshift.so")],
        "diskfull.c": ["-shared", "-fPIC", "-o", str(stage / "libdiskfull.so")],
        "slowdisk.c": ["-shared", "-fPIC", "-o", str(stage / "libslowdisk.so")],
    }
    for source, options in builds.items():
        command = ["gcc", "-O2", *options, str(sources / source), "-ldl"]
        built = subprocess.run(command, check=False, capture_output=True, text=True)
        if built.returncode != 0:
            raise ImageError(f"compiling {source} for the image failed: {built.stderr[-1500:]}")


def resolve_image(
    kafka_image: str | None, kafka_version: str, client: docker.DockerClient | None = None
) -> ResolvedImage:
    """The image to run: the user's `--kafka-image`, else ours for `kafka_version` (built if missing)."""
    client = client or docker.from_env()
    if kafka_image is None:
        tag = ensure_kafka_image(kafka_version, client)
        image = client.images.get(tag)
        return ResolvedImage(tag, str(image.id), kafka_version)
    image_or_none = _local_image(client, kafka_image)
    if image_or_none is None:
        try:
            image_or_none = client.images.pull(kafka_image)
        except docker.errors.APIError as exc:
            raise ImageError(
                f"--kafka-image {kafka_image} is not on this machine and could not be pulled "
                f"({exc.explanation}); "
                "load it with `docker load` or leave --kafka-image out to build kchaos/kafka locally"
            ) from None
    labels = image_or_none.labels or {}
    version = labels.get("org.apache.kafka.version") or _version_from_ref(kafka_image) or kafka_version
    return ResolvedImage(kafka_image, str(image_or_none.id), version)


def _version_from_ref(ref: str) -> str | None:
    tag = ref.rsplit(":", 1)[1] if ":" in ref.rsplit("/", 1)[-1] else ""
    return tag if tag[:1].isdigit() else None
