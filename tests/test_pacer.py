"""The producer's pacing: sends come due at the configured rate in batches of whatever time made due, with
no burst to catch up after a stall, and with no rate limit they are always due and never waited for."""

from __future__ import annotations

import pytest

from kchaos.workloads.in_harness.producer import MAX_LAG_S, MIN_POLL_S, UNPACED_BATCH, Pacer


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    fake = Clock()
    monkeypatch.setattr("kchaos.workloads.in_harness.producer.time.monotonic", fake)
    return fake


def test_sends_come_due_at_the_rate_in_batches(clock: Clock) -> None:
    tick = 1 / 8192  # 8,192/s, exact in binary so the counts below are too
    pacer = Pacer(interval=tick)
    assert pacer.due() == 1  # the first at once
    assert pacer.due() == 0
    clock.now += 8 * tick
    assert pacer.due() == 8  # a millisecond's worth, in one go
    clock.now += 3 * tick
    assert pacer.due() == 3
    made = 12
    for _ in range(1000):
        clock.now += 0.00037
        made += pacer.due()
    assert made == pytest.approx(1 + (clock.now - 100.0) / tick, abs=1)


def test_the_wait_is_never_shorter_than_the_clients_millisecond(clock: Clock) -> None:
    pacer = Pacer(interval=0.0001)
    pacer.due()
    assert pacer.wait() == MIN_POLL_S
    slow = Pacer(interval=0.5)
    slow.due()
    assert slow.wait() == pytest.approx(0.5)


def test_a_stall_is_not_made_up_with_a_burst(clock: Clock) -> None:
    pacer = Pacer(interval=0.001)
    pacer.due()
    clock.now += 5.0  # the client was stuck for five seconds
    assert pacer.due() <= MAX_LAG_S / 0.001 + 1
    clock.now += 0.001
    assert pacer.due() == 1


def test_without_a_rate_limit_sends_are_always_due(clock: Clock) -> None:
    pacer = Pacer(interval=0.0)
    assert pacer.due() == UNPACED_BATCH and pacer.due() == UNPACED_BATCH
    assert pacer.wait() == 0.0
