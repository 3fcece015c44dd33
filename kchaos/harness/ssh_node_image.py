"""The image of kchaos's own SSH nodes: containers that stand in for a user's machines, for the tests of the
SSH backend and for trying it (`docs/own-machines.md`) on one host.

A node of this image runs only `sshd` (with its own host keys, and the key it is given authorized for root
and for `ops`, a user with passwordless sudo): no Kafka, no kchaos. Everything kchaos does to it goes over
SSH, as to a real machine. Built like the base, from Debian's packages with debootstrap (nothing is pulled
from a registry), then a Dockerfile adds the start script; the `kchaos.recipe` label rebuilds it when its
recipe changes.
"""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

import docker

from kchaos.harness.image import (
    BASE_RECIPE_FILES,
    ImageError,
    build_image,
    current_image,
    recipe_digest,
    recipe_dir,
)

SSH_NODE_TAG = "kchaos/sshnode:bookworm"
ROOTFS_TAG = "kchaos/sshnode-rootfs:bookworm"
#: The files whose digest is the image's recipe (the base's script too: the node's packages start from it).
RECIPE_FILES = (*BASE_RECIPE_FILES, "sshnode/build-rootfs.sh", "sshnode/Dockerfile", "sshnode/start-sshd")


def ensure_ssh_node_image(client: docker.DockerClient | None = None, log: bool = True) -> str:
    """Builds `kchaos/sshnode` when it is missing or its recipe changed (a few minutes, once per machine);
    returns its tag."""
    client = client or docker.from_env()
    recipe = recipe_digest(RECIPE_FILES)
    if current_image(client, SSH_NODE_TAG, recipe):
        return SSH_NODE_TAG
    if log:
        print(f"building {SSH_NODE_TAG} with debootstrap (a few minutes, once per machine)", flush=True)
    sources = recipe_dir() / "sshnode"
    if not current_image(client, ROOTFS_TAG, recipe):
        built = subprocess.run(["bash", str(sources / "build-rootfs.sh"), ROOTFS_TAG, recipe], check=False)
        if built.returncode != 0:
            raise ImageError(f"building {ROOTFS_TAG} failed (exit {built.returncode}); see the output above")
    with tempfile.TemporaryDirectory(prefix="kchaos-sshnode-") as stage_name:
        stage = Path(stage_name)
        for name in ("Dockerfile", "start-sshd"):
            (stage / name).write_bytes((sources / name).read_bytes())
        build_image(client, stage, SSH_NODE_TAG, {"ROOTFS": ROOTFS_TAG, "RECIPE": recipe})
    return SSH_NODE_TAG
