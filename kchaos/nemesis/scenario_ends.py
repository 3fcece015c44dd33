"""How a crafted scenario ends early: a step whose state never came (`StepFailed`, the run fails naming it),
or a run asked to stop while a step waited (`ScenarioStopped`, the scenario just ends)."""

from __future__ import annotations

from kchaos.model.waiting import WaitTimeout


class StepFailed(RuntimeError):
    """A crafted scenario's step waited in vain for the state its next fault needs."""

    @classmethod
    def after(cls, timeout: WaitTimeout) -> StepFailed:
        return cls(f"the scenario cannot go on: {timeout}")


class ScenarioStopped(Exception):
    """The run was asked to stop (Ctrl-C, SIGTERM, its end) while a scenario waited or was about to begin
    a fault: the scenario ends there, and the nemesis heals what it began. Raised by the waits and
    `begin`, so every scenario stops at its next step without checking for it."""
