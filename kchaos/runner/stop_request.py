"""A stop request (Ctrl-C, SIGTERM) is recorded, and acted on where the run can act on it.

Python runs a signal handler between two bytecodes of the main thread, whatever that thread is doing. In a
garbage-collection callback or a finalizer an exception the handler raises is printed as "Exception ignored
in ..." and dropped: a run asked to stop while a client's finalizer ran went on to check and exited 0 as if
nobody had asked. So the handler records the request before it raises, and the run asks again at every
phase boundary and before it judges (`act`): a request the raise did not deliver is delivered there. While
the run cleans up, a request is only recorded (`deferred`): an exception in the middle of removing containers
would leave the rest behind; the run acts on it once the cleanup is done.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

#: The signals that ask a run to stop: Ctrl-C, and what CI cancelling a job or `kill` sends.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class StopRequest:
    """Whether the process was asked to stop, and by which signal; raises it where the run lets it."""

    def __init__(self) -> None:
        self.signal: int | None = None
        self._deferring = 0

    def handle(self, signum: int, frame: FrameType | None) -> None:
        """The signal handler: records the request, and raises it unless the run is cleaning up."""
        self.signal = signum
        if not self._deferring:
            raise KeyboardInterrupt(f"signal {signum}")

    def act(self) -> None:
        """Raises the recorded request as KeyboardInterrupt, if there is one: called at points the run
        controls, so a request a finalizer swallowed still stops the run there."""
        if self.signal is not None:
            raise KeyboardInterrupt(f"signal {self.signal}")

    @contextmanager
    def deferred(self) -> Iterator[None]:
        """Inside the block a request is recorded, not raised: the block must run to its end."""
        self._deferring += 1
        try:
            yield
        finally:
            self._deferring -= 1


@contextmanager
def stop_requests() -> Iterator[StopRequest]:
    """Inside the block SIGINT and SIGTERM are recorded and raised as KeyboardInterrupt, so SIGTERM takes the
    cleanup path Ctrl-C takes (Python's default would end the process at once, leaving containers and the
    unflushed history behind). Outside the main thread signals stay with whoever owns them."""
    stop = StopRequest()
    try:
        previous = {signum: signal.signal(signum, stop.handle) for signum in STOP_SIGNALS}
    except ValueError:  # not the main thread
        yield stop
        return
    try:
        yield stop
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
