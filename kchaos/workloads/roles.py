"""A run's clients as the runner and the nemesis drive them, whichever client library and workload they
are: the writers, and the readers. Every row of the workload table (`kchaos.workloads.table`) builds one of
each, and nothing else of a workload is called from outside it.

The nemesis sees the readers through its own narrower view (`kchaos.nemesis.schedule.Readers`: hold and
release) and asks group members for more when they are (`kchaos.nemesis.members.GroupMembers`); the runner
waits for eos processors to catch up (`Processors`) before it stops them.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable


class Writer(Protocol):
    """The run's producers: started as the faults start, stopped once the writing time is over (each
    records what it left unanswered as indeterminate)."""

    def start(self) -> None: ...

    def stop(self) -> None: ...


class Readers(Protocol):
    """The run's consumers: started before the writers, stopped after them; a scenario may hold them back
    (a lagging reader) and release them."""

    def start(self) -> None: ...

    def hold(self, timeout: float = 30.0) -> None: ...

    def release(self) -> None: ...

    def stop(self) -> None: ...


@runtime_checkable
class Processors(Readers, Protocol):
    """Readers that write too (`--workload eos`'s processors): once the writers stopped, the run gives them
    time to commit every input record before it stops them."""

    def wait_caught_up(self, timeout: float) -> dict[int, int]:
        """Waits up to `timeout` seconds; returns the records still unprocessed by partition (empty when
        caught up)."""
        ...
