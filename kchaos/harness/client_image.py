"""The Java client image, `kchaos/kafka-client:<version>`: kchaos's producer workers and the release's own
`kafka-clients` jar, on the same Debian base as the brokers.

Built like the Kafka image (kchaos/harness/image.py: the base, the recipe digest, Maven Central), apart from
it because a client is not a broker: a run may mix a client of one release with a cluster of another, and
the image holds only the client's few jars. The worker is compiled on this host with `javac --release 17`
against the release's jar, so a source that used an API some release lacks fails here, at build time,
naming the release.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

import docker

from kchaos.harness.image import (
    ImageError,
    base_digest,
    build_image,
    current_image,
    ensure_base,
    fetch_jars,
    recipe_digest,
    recipe_dir,
)

CLIENT_REPO = "kchaos/kafka-client"
#: The workers' sources: the main class the image's entrypoint runs, the transactional worker (with its
#: read-write transactions' polls) and the assigned reader it hands over to (`kchaos.mode=txn`, `reader`),
#: and the group member and eos processor,
#: each started by its own main class
#: (`kchaos.harness.client_container.start_client`'s `main`); and the check of a run's client settings,
#: run before the cluster starts (kchaos/harness/settings_check.py).
WORKER_SOURCES = (
    "KchaosProducer.java",
    "KchaosTransactions.java",
    "KchaosTxnPolls.java",
    "KchaosGroupMember.java",
    "KchaosEosProcessor.java",
    "KchaosReader.java",
    "KchaosConfigCheck.java",
)
#: What the client image's `kchaos.recipe` digest covers, inside the recipe package.
CLIENT_RECIPE_FILES = ("client/pom.xml", "client/Dockerfile", *(f"client/{name}" for name in WORKER_SOURCES))


def client_tag(version: str) -> str:
    return f"{CLIENT_REPO}:{version}"


def ensure_client_image(version: str, client: docker.DockerClient | None = None, log: bool = True) -> str:
    """Builds `kchaos/kafka-client:<version>` when it is missing or its recipe changed; returns the tag."""
    client = client or docker.from_env()
    tag = client_tag(version)
    recipe = recipe_digest(CLIENT_RECIPE_FILES, version, base_digest())
    if current_image(client, tag, recipe):
        return tag
    if shutil.which("mvn") is None:
        raise ImageError("Maven (mvn) is not installed; run ./setup.sh or apt-get install maven")
    if shutil.which("javac") is None:
        raise ImageError(
            "javac is not installed (the Java client worker is compiled here); run ./setup.sh or "
            "apt-get install openjdk-17-jdk-headless"
        )
    if log:
        print(f"building {tag}: kafka-clients {version} from Maven Central and the worker", flush=True)
    sources = recipe_dir() / "client"
    with tempfile.TemporaryDirectory(prefix="kchaos-client-image-") as stage_name:
        stage = Path(stage_name)
        fetch_jars(
            sources / "pom.xml", stage / "libs", [f"-Dkafka.version={version}"], f"kafka-clients {version}",
            "check that org.apache.kafka:kafka-clients exists in that version (--kafka-version)",
        )  # fmt: skip
        compiled = subprocess.run(
            ["javac", "--release", "17", "-cp", str(stage / "libs" / "*"), "-d", str(stage / "classes"),
             *(str(sources / name) for name in WORKER_SOURCES)],
            check=False, capture_output=True, text=True,
        )  # fmt: skip
        if compiled.returncode != 0:
            raise ImageError(
                f"compiling {', '.join(WORKER_SOURCES)} against kafka-clients {version} failed: "
                f"{(compiled.stdout + compiled.stderr)[-1500:]}"
            )
        shutil.copy(sources / "Dockerfile", stage / "Dockerfile")
        base = ensure_base(client, log=log)
        build_image(client, stage, tag, {"BASE_IMAGE": base, "KAFKA_VERSION": version, "RECIPE": recipe})
    if log:
        print(f"built {tag}", flush=True)
    return tag
