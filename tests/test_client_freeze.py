"""A client pause is asked again while runc's freezer gives up under load (the container is left thawed
each time), and any other refusal, or the last one, still fails the fault."""

from __future__ import annotations

import docker.errors
import pytest

from kchaos.nemesis.clients import FREEZE_ATTEMPTS, freeze


class _Client:
    """A client container whose first `refusals` pauses are refused with `message`."""

    name = "producer-0"

    def __init__(self, refusals: int, message: str) -> None:
        self.refusals, self.message, self.asked = refusals, message, 0

    def pause(self) -> None:
        self.asked += 1
        if self.asked <= self.refusals:
            raise docker.errors.APIError(self.message)


FREEZER = "Cannot pause container c: OCI runtime pause failed: unable to freeze: unknown"


def test_a_freezer_that_gives_up_is_asked_again() -> None:
    client = _Client(2, FREEZER)
    freeze(client)  # type: ignore[arg-type]
    assert client.asked == 3


def test_a_freezer_that_never_freezes_fails_the_fault_after_its_attempts() -> None:
    client = _Client(FREEZE_ATTEMPTS, FREEZER)
    with pytest.raises(docker.errors.APIError, match="unable to freeze"):
        freeze(client)  # type: ignore[arg-type]
    assert client.asked == FREEZE_ATTEMPTS


def test_any_other_refusal_fails_at_once() -> None:
    client = _Client(1, "Container c is not running")
    with pytest.raises(docker.errors.APIError, match="not running"):
        freeze(client)  # type: ignore[arg-type]
    assert client.asked == 1
