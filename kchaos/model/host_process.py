"""Whether a process of this host still runs: how a sweep tells what a dead process left behind (a
harness's containers, a half-written class-data archive) from what a live one is still using."""

from __future__ import annotations

import os


def pid_alive(pid: int) -> bool:
    """Whether process `pid` of this host still runs (one of another user's counts as running)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
