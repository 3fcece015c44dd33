"""The request attacks' evidence, as a pure reading of history rows: whether a held request was released
after its application moved on, and what the broker answered it. (The attacks run against real Kafka in
tests/cluster/test_request_attacks.py.)"""

from __future__ import annotations

from typing import Any

import pytest

from kchaos.model.events import INFO, INVOKE, NEMESIS_PROCESS, OK, REQUEST, TXN_BEGIN, TXN_COMMIT, TXN_SEND
from kchaos.nemesis.history_reading import Row
from kchaos.nemesis.marker_attacks import marker_leader
from kchaos.nemesis.request_attacks import RequestWindow, request_window, window_summary
from tests.test_txn_attacks import P0, P1, rows


def step(key: str, value: str, **detail: Any) -> tuple[Any, ...]:
    return (NEMESIS_PROCESS, INFO, REQUEST, key, value, detail)


def a_late_commit(*, release_after_the_next_record: bool = True, record_taken: bool = True) -> list[Row]:
    """producer-0's commit of t0 held, retried and answered, t1 begun; the watch sees t1's record pass and
    a leader take it (or, not `record_taken`, refuse it while the coordinator still ends t0)."""
    answer = "NONE" if record_taken else "CONCURRENT_TRANSACTIONS"
    record = [
        step("delay#2", "held"),
        step("delay#2", "delivered"),
        step("delay#2", "answered", error=answer),
    ]
    release = [
        step("hold#1", "released", client_connected=False),
        step("hold#1", "delivered", client_connected=False),
        step("hold#1", "answered", error="NONE"),
    ]
    ordered = [*record, *release] if release_after_the_next_record else [*release, *record]
    return rows(
        (P0, INVOKE, TXN_COMMIT, "t0"),
        step("hold#1", "held"),
        step("hold#1", "client-closed"),
        (P0, OK, TXN_COMMIT, "t0"),  # retried on a new connection, answered
        (P1, OK, TXN_BEGIN, "x"),
        (P0, OK, TXN_BEGIN, "t1"),
        (P0, INVOKE, TXN_SEND, "t1"),
        *ordered,
    )


def test_a_commit_released_after_a_leader_took_a_record_of_the_next_transaction_reached_its_window() -> None:
    window = request_window(a_late_commit(), P0, "EndTxn", "hold#1", "delay#2")
    assert window == RequestWindow(
        "hold#1", "EndTxn", True, held=True, held_index=1, txn="t0", moved_on=True, next_txn="t1",
        moved_on_index=5, added_index=9, ended_index=3, released_index=10, client_connected=False,
        answer="NONE", answer_index=12,
    )  # fmt: skip


def test_a_release_before_the_next_transaction_sent_anything_missed() -> None:
    window = request_window(
        a_late_commit(release_after_the_next_record=False), P0, "EndTxn", "hold#1", "delay#2"
    )
    assert window.held and window.moved_on and not window.reached
    assert window.added_index is not None and window.released_index is not None
    assert window.released_index < window.added_index


def test_a_record_of_the_next_transaction_sent_but_refused_is_no_move_on_yet() -> None:
    """A protocol 2 client's first Produce asks the leader to add the partition; while the coordinator still
    ends the held transaction the leader refuses it, and the next transaction has not begun there."""
    window = request_window(a_late_commit(record_taken=False), P0, "EndTxn", "hold#1", "delay#2")
    assert window.held and window.moved_on and window.added_index is None and not window.reached


def test_a_record_of_another_producer_or_of_the_held_transaction_is_no_move_on() -> None:
    history = rows(
        (P0, INVOKE, TXN_COMMIT, "t0"),
        step("hold#1", "held"),
        (P1, OK, TXN_BEGIN, "x"),  # another producer moved on, not the attacked one
        step("delay#2", "delivered"),
        step("delay#2", "answered", error="NONE"),
        step("hold#1", "released"),
    )
    window = request_window(history, P0, "EndTxn", "hold#1", "delay#2")
    assert window.held and window.txn == "t0" and not window.moved_on and not window.reached


def test_nothing_held_is_no_window_and_says_so() -> None:
    window = request_window(rows((P0, INVOKE, TXN_COMMIT, "t0")), P0, "EndTxn", "hold#1", "delay#2")
    assert window == RequestWindow("hold#1", "EndTxn", False)


def test_a_held_produce_is_judged_by_its_own_transaction_s_end() -> None:
    """Produce has no watch: the window is the record's own transaction ended before the release."""
    history = rows(
        (P0, OK, TXN_BEGIN, "t0"),
        (P0, INVOKE, TXN_SEND, "t0"),
        step("hold#1", "held"),
        (P0, INVOKE, TXN_COMMIT, "t0"),
        (P0, INFO, TXN_COMMIT, "t0"),  # the record unanswered: the commit timed out
        step("hold#1", "released"),
        step("hold#1", "answered", error="INVALID_TXN_STATE"),
    )
    window = request_window(history, P0, "Produce", "hold#1", None)
    assert window.reached and window.ended_index == 4 and window.answer == "INVALID_TXN_STATE"
    early = request_window(history[:3] + history[5:], P0, "Produce", "hold#1", None)
    assert not early.reached and early.ended_index is None


def test_the_summary_counts_the_late_answers_of_reached_windows_only() -> None:
    reached = request_window(a_late_commit(), P0, "EndTxn", "hold#1", "delay#2")
    missed = request_window(
        a_late_commit(release_after_the_next_record=False), P0, "EndTxn", "hold#1", "delay#2"
    )
    summary = window_summary([reached, missed, reached])
    assert summary["attempts_made"] == 3 and summary["windows_reached"] == 2
    assert summary["late_answers"] == {"NONE": 2}
    assert summary["attempts"][1]["reached"] is False


@pytest.mark.parametrize(
    ("last_step", "answer"),
    [("answered", "answered, error not decoded"), ("answer-lost", "answer-lost")],
)
def test_an_answer_whose_error_was_not_decoded_says_so_and_a_lost_one_says_what_ended_it(
    last_step: str, answer: str
) -> None:
    history = rows(
        (P0, OK, TXN_BEGIN, "t0"),
        step("hold#1", "held"),
        (P0, INFO, TXN_COMMIT, "t0"),
        step("hold#1", "released"),
        step("hold#1", last_step),
    )
    assert request_window(history, P0, "Produce", "hold#1", None).answer == answer


def test_the_marker_attack_holds_at_the_first_partition_s_leader_that_is_not_the_coordinator() -> None:
    """The coordinator's markers to itself would die with it when it is killed: the hold is elsewhere."""
    assert marker_leader({0: 2, 1: 3, 2: 1}, coordinator=2) == 3
    assert marker_leader({2: 1, 0: -1, 1: 2}, coordinator=2) == 1  # a leaderless partition is skipped
    assert marker_leader({0: 2, 1: 2}, coordinator=2) is None
    assert marker_leader({}, coordinator=1) is None
