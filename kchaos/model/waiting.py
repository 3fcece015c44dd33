"""Waiting for a condition, never for a fixed time.

A chaos run is full of "until": until the leader is fenced, until the ISR is full again. Sleeping a guessed
number of seconds either wastes time or makes the scenario flaky, so every wait polls its condition with a
deadline and says, when it gives up, what it was waiting for and what it last saw.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

from tenacity import RetryError, Retrying, retry_if_result, stop_after_delay, wait_fixed


class WaitTimeout(TimeoutError):
    """A waited-for condition did not hold before its deadline."""


def wait_until(condition: Callable[[], bool], timeout: float, what: str, interval: float = 0.5) -> None:
    """Polls `condition` until it returns True; exceptions count as "not yet" and the last one is reported."""
    last_error: list[BaseException] = []

    def attempt() -> bool:
        try:
            return bool(condition())
        except Exception as exc:  # a broker that is down answers with errors: that is "not yet"
            last_error[:] = [exc]
            return False

    retrying = Retrying(
        stop=stop_after_delay(timeout), wait=wait_fixed(interval), retry=retry_if_result(lambda ok: not ok)
    )
    try:
        retrying(attempt)
    except RetryError:
        detail = f"; last error: {last_error[0]!r}" if last_error else ""
        raise WaitTimeout(f"timed out after {timeout:.0f}s waiting for {what}{detail}") from None


T = TypeVar("T")


def wait_for(
    ask: Callable[[], T], accept: Callable[[T], bool], timeout: float, what: str, interval: float = 0.5
) -> T:
    """Polls `ask` until `accept` takes its answer, and returns that answer: the one the wait saw hold,
    since asking again could already give another (a leader agreed on a moment ago, disputed now)."""
    answers: list[T] = []

    def accepted() -> bool:
        answers[:] = [ask()]
        return accept(answers[0])

    wait_until(accepted, timeout, what, interval)
    return answers[0]


def holds_throughout(condition: Callable[[], bool], seconds: float, interval: float = 0.5) -> bool:
    """Polls `condition` for `seconds` and says whether it held at every poll.

    The one wait that must last its full time: a promise that something does *not* happen (no replica
    outside the ISR takes over) can only be watched for a while, never awaited. An exception counts as
    "did not hold", since the caller cannot tell what it would have seen.
    """
    deadline = time.monotonic() + seconds
    while True:
        try:
            if not condition():
                return False
        except Exception:
            return False
        if time.monotonic() >= deadline:
            return True
        time.sleep(interval)
