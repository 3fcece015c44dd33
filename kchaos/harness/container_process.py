"""What a fault does to a node's process, on its Docker container: crash, shut down, freeze, bring back.

Brokers and the ZooKeeper node are hit the same way; each call looks at the status Docker reports now,
since the process may have exited on its own meanwhile.
"""

from __future__ import annotations

from docker.models.containers import Container
from testcontainers.core.container import DockerContainer


def reloaded(container: DockerContainer) -> Container:
    """The container with the status Docker reports now."""
    wrapped = container.get_wrapped_container()
    wrapped.reload()
    return wrapped


def kill(container: DockerContainer) -> None:
    """SIGKILL: no shutdown hook, no flush; the page cache survives, as in a process crash."""
    wrapped = reloaded(container)
    if wrapped.status == "running":
        wrapped.kill(signal="SIGKILL")


def terminate(container: DockerContainer, timeout: int = 60) -> None:
    """SIGTERM and wait: the process shuts down in good order."""
    wrapped = reloaded(container)
    if wrapped.status == "running":
        wrapped.stop(timeout=timeout)


def pause(container: DockerContainer) -> None:
    """Freezes every process (cgroup freezer): alive but silent, like a long GC pause."""
    wrapped = reloaded(container)
    if wrapped.status == "running":
        wrapped.pause()


def resume(container: DockerContainer) -> None:
    """Brings the process back, whatever was done to it."""
    wrapped = reloaded(container)
    if wrapped.status == "paused":
        wrapped.unpause()
    elif wrapped.status != "running":
        wrapped.start()


def exit_code(container: DockerContainer) -> int | None:
    """The process's exit code if its container has stopped on its own, else None."""
    wrapped = reloaded(container)
    if wrapped.status != "exited":
        return None
    return int(wrapped.attrs["State"]["ExitCode"])
