"""Testcontainers' reaper (Ryuk) stays off while kchaos starts its own containers, and only then.

Ryuk would have to be pulled from a registry, which is not reachable where kchaos runs, and kchaos removes
what it creates itself, by label (see kchaos.harness.labels). Setting `TESTCONTAINERS_RYUK_DISABLED` would
turn Ryuk off for every other container of the process too: a pytest session that loads the kchaos plugin
would lose the reaper for its own testcontainers. So the switch is testcontainers' runtime setting, read
when a container starts, turned on around kchaos's starts and given back afterwards.
"""

from __future__ import annotations

import threading

from testcontainers.core.config import testcontainers_config


class ReaperOff:
    """A context in which testcontainers starts no reaper; the setting it found is restored when the last
    of overlapping contexts (clusters starting in several threads) ends."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._holders = 0
        self._found = False

    def __enter__(self) -> None:
        with self._lock:
            if self._holders == 0:
                self._found = testcontainers_config.ryuk_disabled
                testcontainers_config.ryuk_disabled = True
            self._holders += 1

    def __exit__(self, *exc: object) -> None:
        with self._lock:
            self._holders -= 1
            if self._holders == 0:
                testcontainers_config.ryuk_disabled = self._found


#: The one switch of the process: testcontainers' setting is process-wide, so its holders must be counted
#: in one place.
reaper_off = ReaperOff()
