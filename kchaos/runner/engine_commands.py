"""The commands that tend the Docker engine rather than run anything: `kchaos clean` removes what crashed
runs left behind, `kchaos image build` makes the images runs start from. Docker is imported by the command
that needs it, so loading the CLI for `kchaos check` never loads the cluster's libraries."""

from __future__ import annotations

import click

from kchaos.runner.config_options import config_option
from kchaos.runner.failures import fail, require_engine


@click.command()
@click.option(
    "--all", "everything", is_flag=True, help="Also remove containers of runs that are still going."
)
def clean(everything: bool) -> None:
    """Remove containers and networks left behind by crashed runs, and what they installed on SSH nodes."""
    from kchaos.harness.labels import sweep
    from kchaos.harness.ssh_leftovers import clean_abandoned

    require_engine()
    removed = sweep(everything=everything) + clean_abandoned(everything=everything)
    for item in removed:
        click.echo(f"removed {item}")
    click.echo(f"{len(removed)} removed")


@click.group()
def image() -> None:
    """Build the images runs start from locally (a debootstrapped base, jars from Maven Central)."""


@image.command("build")
@config_option(
    "kafka_version",
    help="Kafka release to build the image kchaos/kafka:<version> for, as digits.digits.digits.",
)
@click.option(
    "--java-client",
    is_flag=True,
    help="Also build the Java client's kchaos/kafka-client:<version> (for --client java; a run with it "
    "builds it when missing).",
)
@click.option(
    "--ssh-node",
    is_flag=True,
    help="Also build kchaos/sshnode, the machines kchaos's tests reach over SSH (sshd, no Kafka), to try "
    "--nodes on one host (docs/own-machines.md).",
)
def image_build(kafka_version: str, java_client: bool, ssh_node: bool) -> None:
    """Build what a default run starts: kchaos/kafka:<version>, the librdkafka worker's
    kchaos/rdkafka-client and the base, each if missing or out of date, side by side (Maven fetches while
    debootstrap makes the base)."""
    from concurrent.futures import ThreadPoolExecutor

    import docker.errors

    from kchaos.harness.client_image import ensure_client_image
    from kchaos.harness.image import ImageError, ensure_kafka_image
    from kchaos.harness.rdkafka_image import ensure_rdkafka_image

    require_engine()
    builds = [lambda: ensure_kafka_image(kafka_version), ensure_rdkafka_image]
    if java_client:
        builds.append(lambda: ensure_client_image(kafka_version))
    if ssh_node:
        from kchaos.harness.ssh_node_image import ensure_ssh_node_image

        builds.append(ensure_ssh_node_image)
    with ThreadPoolExecutor(max_workers=len(builds)) as pool:
        futures = [pool.submit(build) for build in builds]
    for future in futures:
        try:
            tag = future.result()
        except (ImageError, docker.errors.DockerException) as exc:
            fail(str(exc))
        click.echo(f"image ready: {tag}")
