"""Is there a Docker engine to talk to? Asked once, quickly, before anything of a run is created."""

from __future__ import annotations

import os

import docker
import docker.errors
import docker.utils
import requests

#: Seconds to wait for the engine's answer; a healthy local engine answers in milliseconds.
PING_TIMEOUT = 10.0

_DEFAULT_HOST = "unix:///var/run/docker.sock"

#: How to get an engine that answers. An installed kchaos (a wheel) has no ./setup.sh; a clone has, and it
#: installs and starts dockerd.
START_ENGINE = (
    "start the Docker engine (e.g. `sudo systemctl start docker`, or run `dockerd`) or set DOCKER_HOST to "
    "one that runs; in a kchaos clone, ./setup.sh installs and starts it"
)


class EngineError(RuntimeError):
    """No Docker engine answers; the message names where it was asked and the fix."""


def require_engine(timeout: float = PING_TIMEOUT) -> None:
    """Raises `EngineError` unless the Docker engine (`DOCKER_HOST`, else the local socket) answers a ping."""
    host = os.environ.get("DOCKER_HOST") or _DEFAULT_HOST
    check_docker_host(host)
    try:
        client = docker.from_env(timeout=int(max(1, timeout)))
        try:
            client.ping()
        finally:
            client.close()
    except (docker.errors.DockerException, requests.exceptions.RequestException) as exc:
        reason = _reason(exc)
        fix = (
            "run kchaos as a user allowed to use it (root, or a member of the docker group)"
            if "Permission denied" in reason
            else START_ENGINE
        )
        raise EngineError(f"no Docker engine answers at {host} ({reason}); {fix}") from exc


def check_docker_host(host: str) -> None:
    """Raises `EngineError` for a DOCKER_HOST that is no engine address (`notaurl`): no engine to start
    would help, and "no engine answers" would send the user looking for one."""
    try:
        docker.utils.parse_host(host)
    except docker.errors.DockerException as exc:
        raise EngineError(
            f"DOCKER_HOST={host!r} is not a Docker engine address ({exc}); set it to one such as "
            f"{_DEFAULT_HOST} or tcp://HOST:2375, or unset it for the local engine"
        ) from None


def _reason(exc: BaseException) -> str:
    """The root of a failed connection (e.g. `No such file or directory` for a missing socket), which says
    more than the layers of HTTP client errors wrapped around it."""
    root: BaseException = exc
    seen = {id(root)}
    while (nxt := root.__cause__ or root.__context__) is not None and id(nxt) not in seen:
        seen.add(id(nxt))
        root = nxt
    if isinstance(root, OSError) and root.strerror:
        return root.strerror
    return str(exc).removeprefix("Error while fetching server API version: ")
