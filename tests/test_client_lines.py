"""How a client process's stdout becomes lines (`ClientContainer.batches`): its file read as it grows, cut
wherever a read may cut it; a line ends with a newline or with the record separator a worker ends the lines
of one write with, and a line cut short by the process's death is never yielded."""

from __future__ import annotations

import os
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, cast

import pytest

from kchaos.harness import client_container
from kchaos.harness.client_container import ClientContainer, split_lines
from kchaos.harness.labels import CLIENT_STDOUT_MOUNT, STDOUT_DIR_PREFIX, stdout_dirs


def lines(*chunks: bytes) -> list[str]:
    return [line for batch in split_lines(chunks) for line in batch]


def test_a_write_of_many_lines_ended_by_the_separator_and_one_newline_is_each_line() -> None:
    written = b"invoke\t1\tp-0\t0\x1einvoke\t2\tp-1\t1\x1einvoke\t3\tp-2\t2\x1e\n"
    assert lines(written) == ["invoke\t1\tp-0\t0", "invoke\t2\tp-1\t1", "invoke\t3\tp-2\t2"]


@pytest.mark.parametrize("cut", [1, 9, 14, 15, 16, 30])
def test_lines_are_whole_wherever_the_stream_cuts_the_writes(cut: int) -> None:
    written = b"started\t1\t4.3.1\x1e\nok\t2\tp-0\t0\t7\x1eok\t3\tp-1\t1\t9\x1e\n"
    assert lines(written[:cut], written[cut:]) == [
        "started\t1\t4.3.1",
        "ok\t2\tp-0\t0\t7",
        "ok\t3\tp-1\t1\t9",
    ]


def test_newline_ended_lines_are_read_as_before() -> None:
    assert lines(b"started\t1\t4.3.1\ninvoke\t2\tp-0\t0\n") == ["started\t1\t4.3.1", "invoke\t2\tp-0\t0"]


def test_a_line_cut_short_by_the_processs_death_is_not_yielded_but_the_ended_ones_before_it_are() -> None:
    # The process died mid-write: its newline never came, but the lines it had ended are whole.
    assert lines(b"ok\t2\tp-0\t0\t7\x1eok\t3\tp-1\t1\t9\x1eok\t4\tp-2") == [
        "ok\t2\tp-0\t0\t7",
        "ok\t3\tp-1\t1\t9",
    ]


def test_the_lines_of_each_read_come_together_and_in_order() -> None:
    reads = [
        b"invoke\t1\tp-0\t0\x1einvoke\t2\tp-1\t1\x1e\nok\t3\tp-0",
        b"\t0\t7\n",
        b"\n",
        b"ok\t4\tp-1\t1\t8\n",
    ]
    assert list(split_lines(reads)) == [
        ["invoke\t1\tp-0\t0", "invoke\t2\tp-1\t1"],
        ["ok\t3\tp-0\t0\t7"],  # no batch for a read that ends no line
        ["ok\t4\tp-1\t1\t8"],
    ]


class StateContainer:
    """A container the engine reports `status` of, as its process runs, freezes or ends."""

    def __init__(self, status: str) -> None:
        self.status = status

    def reload(self) -> None:
        pass


def test_the_file_is_read_as_it_grows_through_a_pause_until_the_process_ended(tmp_path: Path) -> None:
    stdout = tmp_path / "stdout"
    stdout.write_bytes(b"started\t1\t4.3.1\n")
    engine = StateContainer("running")
    client = ClientContainer("producer-0", cast(Any, engine), stdout)
    read: list[list[str]] = []
    reader = threading.Thread(target=lambda: read.extend(client.batches()))
    reader.start()

    def written(data: bytes) -> None:
        with stdout.open("ab") as out:
            out.write(data)

    time.sleep(0.3)
    engine.status = "paused"  # a frozen process: the reader waits for it
    time.sleep(0.6)
    assert reader.is_alive() and read == [["started\t1\t4.3.1"]]
    engine.status = "running"
    written(b"invoke\t2\tp-0\t0\x1eok\t3\tp-0\t0\t7\x1e\n")
    written(b"stopped\t4\t1\t0\nok\t5\tp-1")  # its last write, the last line cut short
    engine.status = "exited"
    reader.join(timeout=5)
    assert not reader.is_alive()
    assert [line for batch in read for line in batch] == [
        "started\t1\t4.3.1",
        "invoke\t2\tp-0\t0",
        "ok\t3\tp-0\t0\t7",
        "stopped\t4\t1\t0",
    ]


def test_what_was_read_gives_its_disk_blocks_back_and_every_line_is_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(client_container, "RELEASE_EVERY_BYTES", 1 << 20)
    written = [f"ok\t{n}\tp-{n}\t0\t{n}" for n in range(200_000)]  # about 4 MB
    stdout = tmp_path / "stdout"
    stdout.write_bytes("\x1e".join(written).encode() + b"\n")
    before = os.stat(stdout).st_blocks
    client = ClientContainer("producer-0", cast(Any, StateContainer("exited")), stdout)
    assert [line for batch in client.batches() for line in batch] == written
    after = os.stat(stdout)
    assert after.st_size == len("\x1e".join(written)) + 1  # the writer's offset is untouched
    assert after.st_blocks < before / 2, (before, after.st_blocks)


def test_close_ends_the_reading_of_a_process_that_runs_on(tmp_path: Path) -> None:
    stdout = tmp_path / "stdout"
    stdout.write_bytes(b"started\t1\t4.3.1\n")
    client = ClientContainer("producer-0", cast(Any, StateContainer("running")), stdout)
    reader = threading.Thread(target=lambda: list(client.batches()))
    reader.start()
    client.close()
    reader.join(timeout=5)
    assert not reader.is_alive()


def test_a_sweep_removes_only_the_stdout_directories_a_client_was_started_with() -> None:
    temp = Path(tempfile.gettempdir())
    ours = temp / f"{STDOUT_DIR_PREFIX}producer-0-x1"
    mounts = [
        {"Source": str(ours / "stdout"), "Destination": CLIENT_STDOUT_MOUNT},
        {"Source": str(temp / "elsewhere" / "stdout"), "Destination": CLIENT_STDOUT_MOUNT},  # not kchaos's
        {"Source": str(temp / f"{STDOUT_DIR_PREFIX}a" / "data"), "Destination": "/data"},  # another mount
        {"Destination": "/anonymous"},
    ]
    assert stdout_dirs(mounts) == [ours]
