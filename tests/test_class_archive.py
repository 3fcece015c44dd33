"""The local Spark JVM's class-data archive (`kchaos.checkers.runtime.class_archive`): made by the first local
`kchaos check` of a machine once its verdict is printed (or by `kchaos spark-archive`), put in place only
when the JVM wrote it whole, used by every later local check, which judges exactly as one without it, and
removed once the PySpark it was made for is gone; a half-written one goes with the process that wrote it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kchaos.checkers.runtime import class_archive
from kchaos.checkers.runtime.class_archive import archive_path, keep, note_path, sweep_unusable, use_option
from kchaos.checkers.runtime.session import LOCAL_GC_OPTION
from kchaos.model.run_files import RunDir

KCHAOS = str(Path(sys.executable).parent / "kchaos")
KIP101 = Path(__file__).parent / "run_dirs" / "kip101-0.10.2.2"


@pytest.fixture
def archives(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    directory = tmp_path / "cache"
    directory.mkdir()
    monkeypatch.setattr(class_archive, "ARCHIVE_DIR", directory)
    return directory


def test_an_archive_is_used_only_once_it_is_in_place(archives: Path) -> None:
    path = archive_path(LOCAL_GC_OPTION)
    assert path is not None and path.parent == archives
    assert path == archive_path(LOCAL_GC_OPTION)  # one JDK, one PySpark, one collector: one archive
    assert path != archive_path("-XX:+UseSerialGC")
    assert use_option(LOCAL_GC_OPTION) == []
    partial = class_archive.partial_path(path)
    partial.write_bytes(b"archive")
    assert use_option(LOCAL_GC_OPTION) == []  # a JVM may still be writing it
    keep(partial, path)
    assert use_option(LOCAL_GC_OPTION) == [f"-XX:SharedArchiveFile={path}"]
    assert not partial.exists()


def test_archives_of_a_pyspark_that_is_gone_are_swept_and_the_usable_one_kept(
    archives: Path, tmp_path: Path
) -> None:
    path = archive_path(LOCAL_GC_OPTION)
    assert path is not None
    partial = class_archive.partial_path(path)
    partial.write_bytes(b"archive")
    keep(partial, path)
    gone = archives / "spark-classes-0000000000000000.jsa"
    gone.write_bytes(b"archive")
    note_path(gone).write_text(json.dumps({"pyspark": str(tmp_path / "deleted-clone")}), encoding="utf-8")
    unnoted = archives / "spark-classes-1111111111111111.jsa"
    unnoted.write_bytes(b"archive")
    assert sweep_unusable() == [gone, unnoted]
    assert sorted(archives.iterdir()) == sorted([path, note_path(path)])


def test_a_half_written_archive_is_swept_once_its_process_is_gone(archives: Path) -> None:
    path = archive_path(LOCAL_GC_OPTION)
    assert path is not None
    ours = class_archive.partial_path(path)  # this process's: still being written
    ours.write_bytes(b"half")
    theirs = path.with_name(f"{path.name}.{_ended_pid()}.partial")  # a process's that has ended
    theirs.write_bytes(b"half")
    assert sweep_unusable() == [theirs]
    assert ours.exists()


def _ended_pid() -> int:
    """The pid of a process that has ended."""
    process = subprocess.Popen(["true"])
    process.wait()
    return process.pid


def test_the_first_check_makes_the_archive_and_a_later_check_judges_with_it_as_before(
    tmp_path: Path,
) -> None:
    ours = archive_path(LOCAL_GC_OPTION)
    assert ours is not None
    if ours.is_file():  # made before: a home of its own, where this check is the first
        home = tmp_path / "home"
        home.mkdir()
        environment = {**os.environ, "HOME": str(home)}
        cache = home / ".cache" / "kchaos"
    else:  # the machine's first check, as a user's is: the archive it makes serves the later tests too
        environment = dict(os.environ)
        cache = class_archive.ARCHIVE_DIR
    made = cache / ours.name
    run_dir = tmp_path / "kip101"
    shutil.copytree(KIP101, run_dir)
    recorded = json.loads(RunDir(run_dir).results.read_text(encoding="utf-8"))

    def check() -> dict[str, int | None]:
        checked = subprocess.run([KCHAOS, "check", str(run_dir)], capture_output=True, text=True,
                                 env=environment, timeout=600, check=False)  # fmt: skip
        assert checked.returncode == 1, checked.stdout + checked.stderr  # the run's violation, as before
        assert checked.stdout.splitlines()[-1] == "verdict: violation (rule committed-not-lost)"
        results = json.loads(RunDir(run_dir).results.read_text(encoding="utf-8"))
        assert results["verdict"] == recorded["verdict"] == "violation"
        return {name: a["count"] for name, a in results["anomalies"].items()}

    counts = check()
    assert made.is_file() and made.stat().st_size > 50 * 2**20, sorted(cache.iterdir())
    assert note_path(made).is_file()
    assert not list(cache.glob(f"{made.name}.*.partial"))
    made_at = made.stat().st_mtime_ns

    ready = subprocess.run([KCHAOS, "spark-archive", str(KIP101)], capture_output=True, text=True,
                           env=environment, timeout=60, check=False)  # fmt: skip
    assert ready.returncode == 0 and "ready" in ready.stdout, ready.stdout + ready.stderr

    assert check() == counts == {name: a["count"] for name, a in recorded["anomalies"].items()}
    assert made.stat().st_mtime_ns == made_at, "a check with the archive in place makes none"
