"""The power cut's two C tools on files of known content: what the journal records, and what the cut keeps.

`syncjournal.c` is preloaded into a Python child that creates, syncs and renames files the way Kafka's JVM
does through libc; `powercut.c` replays a journal and cuts a directory of segments whose batches are laid
out by hand, so the bytes each option keeps are known exactly. No Kafka here: what Kafka's recovery makes of
the result is tests/cluster/test_power_loss.py's.
"""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from kchaos.harness.image import recipe_dir

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc to build the tools")

RECIPE = recipe_dir() / "kafka"


@pytest.fixture(scope="module")
def tools(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("tools")
    journal = out / "libsyncjournal.so"
    cutter = out / "powercut"
    subprocess.run(
        ["gcc", "-O2", "-shared", "-fPIC", "-o", str(journal), str(RECIPE / "syncjournal.c"), "-ldl"],
        check=True,
    )
    subprocess.run(["gcc", "-O2", "-o", str(cutter), str(RECIPE / "powercut.c")], check=True)
    return {"journal": journal, "powercut": cutter}


def batch(base_offset: int, payload: int) -> bytes:
    """A v2 record batch's bytes as the cutter reads them: offset, length, magic 2, one record."""
    rest = bytearray(49 + payload)  # everything after the 12 bytes of offset and length
    rest[4] = 2  # magic, at byte 16 of the batch
    rest[45:49] = struct.pack(">i", 1)  # record count, at byte 57
    return struct.pack(">qi", base_offset, len(rest)) + bytes(rest)


def cut(tools: dict[str, Path], root: Path, journal: str, *options: str) -> list[dict[str, object]]:
    (root / "journal").write_text(journal)
    subprocess.run(
        [
            str(tools["powercut"]),
            "cut",
            str(root / "journal"),
            str(root / "report"),
            str(root / "d"),
            *options,
        ],
        check=True,
    )
    return [json.loads(line) for line in (root / "report").read_text().splitlines()]


@pytest.fixture
def segment(tmp_path: Path) -> tuple[Path, list[bytes]]:
    """A segment of three batches of which the journal will say the first was synced."""
    batches = [batch(0, 10), batch(1, 20), batch(2, 30)]
    (tmp_path / "d").mkdir()
    path = tmp_path / "d" / "00000000000000000000.log"
    path.write_bytes(b"".join(batches))
    return path, batches


def test_a_plain_cut_keeps_what_was_synced(
    tools: dict[str, Path], tmp_path: Path, segment: tuple[Path, list[bytes]]
) -> None:
    path, batches = segment
    report = cut(tools, tmp_path, f"fsync {path} {len(batches[0])}\n")
    assert path.read_bytes() == batches[0]
    assert report == [
        {"path": str(path), "size": sum(map(len, batches)), "kept": len(batches[0]),
         "first_offset": 1, "last_offset": 2, "records": 2}
    ]  # fmt: skip


def test_a_torn_cut_ends_inside_the_first_unsynced_batch(
    tools: dict[str, Path], tmp_path: Path, segment: tuple[Path, list[bytes]]
) -> None:
    path, batches = segment
    report = cut(tools, tmp_path, f"fsync {path} {len(batches[0])}\n", "tear=cut")
    half = len(batches[0]) + len(batches[1]) // 2
    assert path.read_bytes() == (batches[0] + batches[1])[:half]
    # The torn batch and the one after it are dropped all the same: Kafka discards a batch cut short.
    assert report[0]["kept"] == half and report[0]["torn"] == "cut" and report[0]["synced"] == len(batches[0])
    assert (report[0]["first_offset"], report[0]["last_offset"], report[0]["records"]) == (1, 2, 2)


def test_torn_zeros_keep_the_first_unsynced_batchs_length_with_its_second_half_zero(
    tools: dict[str, Path], tmp_path: Path, segment: tuple[Path, list[bytes]]
) -> None:
    path, batches = segment
    report = cut(tools, tmp_path, f"fsync {path} {len(batches[0])}\n", "tear=zeros")
    end = len(batches[0]) + len(batches[1])
    half = len(batches[0]) + len(batches[1]) // 2
    data = path.read_bytes()
    assert len(data) == end and report[0]["kept"] == end and report[0]["torn"] == "zeros"
    assert data[:half] == (batches[0] + batches[1])[:half]
    assert data[half:] == bytes(end - half)
    assert report[0]["records"] == 2


@pytest.fixture
def created(tmp_path: Path, segment: tuple[Path, list[bytes]]) -> dict[str, Path]:
    """Beside the segment: a new partition directory holding a segment, and a segment rolled into `d`; the
    journal of each test says which of their names were synced into their directories."""
    d = tmp_path / "d"
    (d / "new-0").mkdir()
    inner = d / "new-0" / "00000000000000000005.log"
    inner.write_bytes(batch(5, 10))
    rolled = d / "00000000000000000003.log"
    rolled.write_bytes(batch(3, 10))
    return {"d": d, "new": d / "new-0", "inner": inner, "rolled": rolled}


def creations(names: dict[str, Path]) -> list[str]:
    """The journal's lines for making the new directory, its segment and the rolled segment, each segment
    fsynced in full and the new directory's own entries synced, but not `d`'s."""
    inner, rolled = names["inner"], names["rolled"]
    return [
        f"create {names['new']} -\n",
        f"create {inner} -\n",
        f"fsync {inner} {len(batch(5, 10))}\n",
        f"dirsync {names['new']} -\n",
        f"create {rolled} -\n",
        f"fsync {rolled} {len(batch(3, 10))}\n",
    ]


def test_names_synced_into_their_directory_and_renamed_names_survive_lost_directory_entries(
    tools: dict[str, Path], tmp_path: Path, segment: tuple[Path, list[bytes]], created: dict[str, Path]
) -> None:
    path, batches = segment
    d = created["d"]
    (d / "renamed").write_bytes(b"x")
    journal = [
        f"fsync {path} {len(batches[0])}\n",
        *creations(created),
        f"dirsync {d} -\n",  # makes new-0 and the rolled segment durable names
        f"create {d / 'tmp'} -\n",
        f"rename {d / 'tmp'} {d / 'renamed'}\n",  # renames are kept, with what they moved
    ]
    report = cut(tools, tmp_path, "".join(journal), "dirents=lost")
    assert [item for item in report if item.get("entry") == "lost"] == []
    assert created["inner"].read_bytes() == batch(5, 10) and created["rolled"].read_bytes() == batch(3, 10)
    assert (d / "renamed").exists()


def test_a_name_created_after_its_directorys_last_sync_is_lost_whole_with_its_records(
    tools: dict[str, Path], tmp_path: Path, segment: tuple[Path, list[bytes]], created: dict[str, Path]
) -> None:
    path, batches = segment
    d, inner, rolled = created["d"], created["inner"], created["rolled"]
    # d synced before the new partition directory and the rolled segment were made in it, never after
    journal = [f"fsync {path} {len(batches[0])}\n", f"dirsync {d} -\n", *creations(created)]
    report = cut(tools, tmp_path, "".join(journal), "dirents=lost")
    lost = {item["path"]: item for item in report if item.get("entry") == "lost"}
    assert set(lost) == {str(inner), str(rolled)}
    assert not created["new"].exists() and not rolled.exists()
    rolled_report = lost[str(rolled)]
    assert (rolled_report["kept"], rolled_report["first_offset"], rolled_report["records"]) == (0, 3, 1)
    assert path.read_bytes() == batches[0]  # the unsynced tail of a kept name is cut as always


def test_the_cutter_refuses_an_option_it_does_not_know(tools: dict[str, Path], tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    done = subprocess.run(
        [str(tools["powercut"]), "cut", str(tmp_path / "j"), str(tmp_path / "r"), str(tmp_path / "d"),
         "tear=half"],
        capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 2 and "tear=half not understood" in done.stderr


def test_the_journal_records_new_names_and_directory_syncs_but_not_reopened_files(
    tools: dict[str, Path], tmp_path: Path
) -> None:
    watched = tmp_path / "logs"
    watched.mkdir()
    journal = tmp_path / "journal"
    script = f"""
import os
os.mkdir({str(watched / "p-0")!r})
fd = os.open({str(watched / "p-0" / "0.log")!r}, os.O_CREAT | os.O_RDWR, 0o644)
os.write(fd, b"x" * 100)
os.fsync(fd)
os.close(os.open({str(watched / "p-0" / "0.log")!r}, os.O_CREAT | os.O_RDWR, 0o644))  # exists: no create
d = os.open({str(watched / "p-0")!r}, os.O_RDONLY)
os.fsync(d)
os.close(os.open({str(tmp_path / "elsewhere")!r}, os.O_CREAT | os.O_RDWR, 0o644))  # not watched
"""
    env = {**os.environ, "LD_PRELOAD": str(tools["journal"]), "KCHAOS_SYNC_DIRS": str(watched),
           "KCHAOS_SYNC_JOURNAL": str(journal)}  # fmt: skip
    subprocess.run([sys.executable, "-c", script], env=env, check=True)
    assert journal.read_text().splitlines() == [
        f"create {watched / 'p-0'} -",
        f"create {watched / 'p-0' / '0.log'} -",
        f"fsync {watched / 'p-0' / '0.log'} 100",
        f"dirsync {watched / 'p-0'} -",
    ]
