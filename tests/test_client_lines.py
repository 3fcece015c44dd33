"""How a client process's stdout becomes lines (`ClientContainer.batches`), the stream cut where Docker's
log stream may cut it: a line ends with a newline or with the record separator a worker ends the lines of
one write with, and a line cut short by the process's death is never yielded."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, cast

import pytest

from kchaos.harness.client_container import ClientContainer


class StreamedContainer:
    """A container whose stdout arrives in the chunks given, as the engine's log stream hands them over."""

    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = chunks

    def logs(self, **options: Any) -> Iterator[bytes]:
        assert options == {"stdout": True, "stderr": False, "stream": True, "follow": True}
        return iter(self.chunks)


def lines(*chunks: bytes) -> list[str]:
    container = ClientContainer("producer-0", cast(Any, StreamedContainer(list(chunks))))
    return [line for batch in container.batches() for line in batch]


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
    container = ClientContainer("producer-0", cast(Any, StreamedContainer(reads)))
    assert list(container.batches()) == [
        ["invoke\t1\tp-0\t0", "invoke\t2\tp-1\t1"],
        ["ok\t3\tp-0\t0\t7"],  # no batch for a read that ends no line
        ["ok\t4\tp-1\t1\t8"],
    ]
