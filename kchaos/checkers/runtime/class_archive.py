"""The local Spark JVM's class-data archive (AppCDS): the classes a check loads, mapped in at start instead
of read, verified and parsed from about 250 jars each time.

A local check's JVM spends much of its life loading Spark's classes: on this project's 2-core machine the
check of a 40 s run (12,632 acknowledged) took 20.3 s without an archive and 15.8 s with one (median of
5 pairs, `farm-bench`).
The archive belongs to one JDK, one PySpark installation and the local JVM's collector, so its name carries
a digest of the three (`archive_path`): a JVM started with another's would only warn and ignore it. It is
made once, by `kchaos spark-archive` (which `./setup.sh` runs): a check of a recorded run directory in a
JVM that writes the classes it loaded when it exits, under a name of its own, renamed into place only
once that JVM has ended well, so a half-written archive is never used. Without one a check runs as before.
Each archive has a note of the PySpark it was made for beside it (`.json`); making one removes those
whose PySpark is gone (a deleted clone's virtualenv), as they can never be used again.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from kchaos.checkers.runtime.java_home import session_java
from kchaos.model.host_process import pid_alive

#: Where archives are kept: kchaos's own directory of the user's cache.
ARCHIVE_DIR = Path.home() / ".cache" / "kchaos"


def _pyspark_dir() -> Path:
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def archive_path(gc_option: str) -> Path | None:
    """The archive of this JDK, this PySpark and a JVM collecting with `gc_option`; None without a Java."""
    import pyspark

    java = session_java()
    if java is None:
        return None
    stat = java.stat()
    identity = "|".join(
        (str(java), str(stat.st_size), str(stat.st_mtime_ns), str(_pyspark_dir()), pyspark.__version__,
         gc_option)
    )  # fmt: skip
    digest = hashlib.sha256(identity.encode()).hexdigest()[:16]
    return ARCHIVE_DIR / f"spark-classes-{digest}.jsa"


def note_path(path: Path) -> Path:
    """The note beside archive `path`: which PySpark it was made for."""
    return path.with_suffix(".json")


def keep(partial: Path, path: Path) -> None:
    """Puts a finished archive in place (`path`), with its note."""
    note_path(path).write_text(json.dumps({"pyspark": str(_pyspark_dir())}), encoding="utf-8")
    os.replace(partial, path)


def sweep_unusable() -> list[Path]:
    """Removes the archives whose PySpark no longer exists (and archives without a note, which only a
    failed making leaves), and the half-written archives of processes that are gone (a check stopped
    while its JVM wrote one); returns what it removed."""
    removed = []
    for partial in sorted(ARCHIVE_DIR.glob("spark-classes-*.jsa.*.partial")):
        pid = partial.name.rsplit(".", 2)[-2]
        if pid.isdigit() and not pid_alive(int(pid)):
            partial.unlink(missing_ok=True)
            removed.append(partial)
    for archive in sorted(ARCHIVE_DIR.glob("spark-classes-*.jsa")):
        note = note_path(archive)
        try:
            made_for = Path(json.loads(note.read_text(encoding="utf-8"))["pyspark"])
        except (OSError, ValueError, KeyError, TypeError):
            made_for = None
        if made_for is None or not made_for.is_dir():
            archive.unlink(missing_ok=True)
            note.unlink(missing_ok=True)
            removed.append(archive)
    return removed


def use_option(gc_option: str) -> list[str]:
    """The JVM option that maps the archive in, when there is one."""
    path = archive_path(gc_option)
    return [f"-XX:SharedArchiveFile={path}"] if path is not None and path.is_file() else []


def dump_option(partial: Path) -> list[str]:
    """The JVM option that writes the classes the JVM loaded to `partial` when it exits."""
    return [f"-XX:ArchiveClassesAtExit={partial}"]


def partial_path(path: Path) -> Path:
    """Where one process's JVM writes the archive before it is renamed into place (`path`)."""
    return path.with_name(f"{path.name}.{os.getpid()}.partial")
