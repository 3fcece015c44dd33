"""One file of a container read and written through Docker's archive API, which works while the container
is stopped: a fault that changes what a broker finds on disk does it while no broker runs, and without
`exec` (a stopped container runs nothing) or a helper container that would have to mount its volumes.
"""

from __future__ import annotations

import io
import tarfile
import time
from pathlib import PurePosixPath

import docker.errors
from docker.models.containers import Container

from kchaos.harness.cluster_error import ClusterError


def read_file(container: Container, path: PurePosixPath) -> tuple[bytes, tarfile.TarInfo]:
    """The file's bytes and its tar header (mode, owner, times), to write it back as it was but for them."""
    try:
        chunks, _ = container.get_archive(str(path))
    except docker.errors.NotFound:
        raise ClusterError(f"{container.name}: no file {path}") from None
    with tarfile.open(fileobj=io.BytesIO(b"".join(chunks)), mode="r") as tar:
        info = tar.next()
        if info is None or not info.isfile():
            raise ClusterError(f"{container.name}: {path} is not a regular file")
        extracted = tar.extractfile(info)
        assert extracted is not None  # a regular file always has content to extract
        return extracted.read(), info


def write_file(container: Container, path: PurePosixPath, data: bytes, like: tarfile.TarInfo) -> None:
    """Replaces the file at `path` with `data`, keeping the mode and times of `like` (its old header)."""
    info = tarfile.TarInfo(path.name)
    info.mode, info.mtime, info.uid, info.gid = like.mode, like.mtime, like.uid, like.gid
    _put(container, path, data, info)


def put_file(container: Container, path: PurePosixPath, data: bytes) -> None:
    """Writes `data` as the file at `path` (created or replaced whole, mode 0644, modified now): a note the
    harness leaves for a library in the broker, which never reads half of it."""
    info = tarfile.TarInfo(path.name)
    info.mode, info.mtime = 0o644, int(time.time())
    _put(container, path, data, info)


def _put(container: Container, path: PurePosixPath, data: bytes, info: tarfile.TarInfo) -> None:
    info.size = len(data)
    payload = io.BytesIO()
    with tarfile.open(fileobj=payload, mode="w") as tar:
        tar.addfile(info, io.BytesIO(data))
    if not container.put_archive(str(path.parent), payload.getvalue()):
        raise ClusterError(f"{container.name}: could not write {path}")
