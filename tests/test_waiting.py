"""Waiting helpers: `wait_until` stops at the first success, `holds_throughout` at the first failure."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from kchaos.model.waiting import WaitTimeout, holds_throughout, wait_for, wait_until


def answers(*values: bool | Exception) -> Callable[[], bool]:
    """A condition that returns `values` in turn, raising any exception among them, then repeats the last."""
    queue = list(values)

    def condition() -> bool:
        value = queue.pop(0) if len(queue) > 1 else queue[0]
        if isinstance(value, Exception):
            raise value
        return value

    return condition


def test_wait_until_counts_errors_as_not_yet_and_names_the_last_one_when_it_gives_up() -> None:
    wait_until(answers(ConnectionError("down"), False, True), 5, "ready", interval=0.01)
    with pytest.raises(WaitTimeout, match=r"waiting for ready; last error: ConnectionError\('down'\)"):
        wait_until(answers(ConnectionError("down"), False), 0.1, "ready", interval=0.01)


def test_holds_throughout_watches_the_whole_window_and_fails_on_any_poll() -> None:
    start = time.monotonic()
    assert holds_throughout(answers(True), 0.2, interval=0.01)
    assert time.monotonic() - start >= 0.2
    assert not holds_throughout(answers(True, True, False, True), 5, interval=0.01)
    assert not holds_throughout(answers(True, RuntimeError("no answer"), True), 5, interval=0.01)


def test_wait_for_returns_the_answer_it_accepted_not_a_later_one() -> None:
    leaders = iter([-1, -1, 2, -1])
    assert wait_for(lambda: next(leaders), lambda leader: leader >= 0, 5, "a leader", interval=0.01) == 2
    with pytest.raises(WaitTimeout, match="waiting for a leader"):
        wait_for(lambda: -1, lambda leader: leader >= 0, 0.1, "a leader", interval=0.01)
