"""Draining a producer whose broker is gone: the wait ends at its timeout with the send indeterminate, and
a signal (Ctrl-C, SIGTERM) is handled during it instead of after the whole message timeout."""

from __future__ import annotations

import logging
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from types import FrameType

import pandas as pd
import pytest

from kchaos.model.events import INFO, SEND
from kchaos.model.history import HistoryWriter
from kchaos.model.run_files import RunDir
from kchaos.workloads.in_harness.producer import ProducerProcess

#: The client's connection errors go to logging, not to the test run's stderr.
QUIET = logging.getLogger("kchaos.test.drain")


class Interrupted(Exception):
    pass


@pytest.fixture
def stranded(tmp_path: Path) -> Iterator[ProducerProcess]:
    """A producer with one send queued for a broker that does not exist (nothing listens on port 1)."""
    history = HistoryWriter(RunDir(tmp_path), "drain")
    process = ProducerProcess(
        process="producer-0",
        settings={"bootstrap.servers": "127.0.0.1:1", "message.timeout.ms": 600_000, "logger": QUIET},
        topic="t", partitions=1, interval=0.0, history=history,
    )  # fmt: skip
    process._send_one(threading.Event())
    assert process.pending
    yield process
    history.finish()


def test_a_drain_ends_at_its_timeout_and_records_the_undelivered_send_as_indeterminate(
    stranded: ProducerProcess,
) -> None:
    started = time.monotonic()
    stranded.drain(1.2)
    assert 1.0 < time.monotonic() - started < 3.0
    rows = pd.read_parquet(stranded.history.finish())
    outcome = rows[(rows["f"] == SEND) & (rows["type"] != "invoke")]
    assert list(outcome["type"]) == [INFO]


def test_a_signal_stops_a_drain_that_would_wait_minutes(stranded: ProducerProcess) -> None:
    def interrupt(signum: int, frame: FrameType | None) -> None:
        raise Interrupted

    previous = signal.signal(signal.SIGALRM, interrupt)
    signal.setitimer(signal.ITIMER_REAL, 0.3)
    started = time.monotonic()
    try:
        with pytest.raises(Interrupted):
            stranded.drain(120.0)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert time.monotonic() - started < 2.0
