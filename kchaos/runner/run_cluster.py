"""Which cluster a run has: the one kchaos starts (its image resolved, its brokers' settings, the request
proxies a request fault needs in front of them) in Docker or on the machines `--nodes` names
(`kchaos.harness.ssh_cluster`), or the one `--bootstrap` names, which it did not start and reaches as a
client (`kchaos.harness.existing_cluster`), and over SSH as the service its machines run when it is given
them (`kchaos.harness.service_cluster`). `kchaos.runner.run_steps` takes any of them.
"""

from __future__ import annotations

import logging
from pathlib import Path, PurePosixPath

from kchaos.harness.cluster import KafkaCluster
from kchaos.harness.existing_cluster import ExistingCluster
from kchaos.harness.image import ResolvedImage, resolve_image, sidecar_image
from kchaos.harness.service_cluster import ServiceCluster
from kchaos.harness.ssh_cluster import SshCluster
from kchaos.harness.ssh_session import SshLogin
from kchaos.model.config import RunConfig
from kchaos.model.faults.requests import REQUEST_FAULTS
from kchaos.model.group_protocol import group_broker_config
from kchaos.model.ssh_address import parse_ssh_address
from kchaos.nemesis.request_attacks import RequestAttack
from kchaos.nemesis.requests import RequestRows
from kchaos.nemesis.schedule import PlannedFault, Scenario

#: The run's own logger, as `kchaos.runner.run_steps` writes it (`bench/run_end.py` reads its lines).
log = logging.getLogger("kchaos.runner.run")

#: A run's cluster, whoever started it.
RunCluster = KafkaCluster | ExistingCluster


def run_image(config: RunConfig) -> ResolvedImage:
    """The image the run's brokers run, built if missing; for a cluster kchaos did not start none of its,
    with the release the user names (`--kafka-version`)."""
    if config.bootstrap:
        return ResolvedImage("", "", config.kafka_version)
    return resolve_image(config.kafka_image, config.kafka_version)


def run_cluster(
    config: RunConfig, image: ResolvedImage, logs_dir: Path, requests: RequestRows | None
) -> RunCluster:
    """The run's cluster, not started yet: the one `--bootstrap` names, or one kchaos starts of `image`,
    with `requests` (the request proxies' rows) when a request fault needs proxies in front of it."""
    addresses = tuple(parse_ssh_address(text) for text in config.nodes)
    if config.bootstrap and config.nodes and config.kafka_home is not None and config.service is not None:
        return ServiceCluster(
            run_id=config.run_id, image="", sidecar_image="", metadata_mode=config.metadata,
            logs_dir=logs_dir, addresses=addresses, login=ssh_login(config),
            bootstrap_addresses=config.bootstrap, kafka_home=PurePosixPath(config.kafka_home),
            service=config.service,
        )  # fmt: skip
    if config.bootstrap:
        return ExistingCluster(config.run_id, config.bootstrap)
    if config.nodes:
        return SshCluster(
            run_id=config.run_id, image=image.ref, sidecar_image="", size=config.brokers,
            spare_size=config.spare_brokers, controller_size=config.controllers,
            spare_controller_size=config.spare_controllers, dynamic_quorum=config.quorum == "dynamic",
            heap=config.broker_heap, broker_config=broker_config(config), logs_dir=logs_dir,
            metadata_mode=config.metadata, addresses=addresses,
            login=ssh_login(config),
        )  # fmt: skip
    cluster = KafkaCluster(
        run_id=config.run_id, image=image.ref, sidecar_image=sidecar_image(), size=config.brokers,
        spare_size=config.spare_brokers, controller_size=config.controllers,
        spare_controller_size=config.spare_controllers, dynamic_quorum=config.quorum == "dynamic",
        heap=config.broker_heap, broker_config=broker_config(config), logs_dir=logs_dir,
        metadata_mode=config.metadata, proxy_events=requests,
    )  # fmt: skip
    if requests is not None:
        requests.cluster = cluster
    return cluster


def ssh_login(config: RunConfig) -> SshLogin:
    """How the run logs in to its `--nodes`."""
    if config.known_hosts is None:
        return SshLogin(config.ssh_key, accept_new_host_keys=config.accept_new_host_keys)
    return SshLogin(config.ssh_key, config.known_hosts, config.accept_new_host_keys)


def remove_cluster(cluster: RunCluster) -> None:
    cluster.stop()
    log.info("cluster removed")


def broker_config(config: RunConfig) -> dict[str, str]:
    return {
        "unclean.leader.election.enable": str(config.unclean_leader_election).lower(),
        **group_broker_config(config.group_protocol),
        **config.broker_config,
    }


def needs_request_proxies(planned: list[PlannedFault], scenario: Scenario | None) -> bool:
    """Whether the run's nodes need the request proxy in front of their listeners, decided before the
    cluster starts (the proxy must see every connection): a plan with a request fault, or a request
    attack."""
    return isinstance(scenario, RequestAttack) or any(p.spec.name in REQUEST_FAULTS for p in planned)
