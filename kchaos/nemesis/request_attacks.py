"""Attacks on the transaction protocol one request at a time: producer-0's EndTxn, AddPartitionsToTxn or
transactional Produce is held by the request proxy (`kchaos.nemesis.requests`) while every other request
flows, until the application has given up on it and moved on, then delivered, late, to the broker.

This is the sequence KAFKA-17754 needs and a process pause cannot make (`kchaos.nemesis.txn_attacks`: a
frozen client's EndTxn was always asked again for the same transaction before the client began the next).
Under transaction protocol 1 a producer keeps its epoch from one transaction to the next, so a commit or
abort that arrives after its client retried it, got an answer and began the next transaction is, to the
coordinator, an EndTxn of that next transaction. Protocol 2 (KIP-890 part 2: the Java client of 4.0+
against 4.0+) bumps the epoch with every EndTxn, so the late one is fenced. Whatever the coordinator
answered the late request is recorded (its `answered` row), which says whether it was taken.

Each attempt:

1. a `hold` of the next request of the attack's API from client `producer-0` (by the client id it sends),
   on the node that receives it (its coordinator, or for Produce every node), and for EndTxn and
   AddPartitionsToTxn a 1 ms `delay` of its Produce requests on every node, which reports each one as it
   passes and what the leader answered it: the state the release waits for;
2. waits for the proxy to report the request held;
3. holds it until the application moved on: for EndTxn and AddPartitionsToTxn, a leader took a record of
   its next transaction (a Produce through the watch answered NONE), which it does only once the
   coordinator has that partition in the transaction, so the transaction is ongoing at the coordinator
   with nothing pending; for a Produce, its own transaction has ended (a commit or abort outcome). A
   record sent is not enough: a protocol 2 client's first Produce asks the leader to add the partition,
   which it refuses (CONCURRENT_TRANSACTIONS) while the coordinator still ends the transaction before;
4. releases it, waits for the broker's answer, and records the attempt's evidence (`RequestWindow`), a
   pure reading of the history's rows.

What the application does after its timeout is the run's `--txn-on-timeout`; the oracle judges the run the
same whatever it was: a committed record lost, an aborted one read or a transaction torn is a violation.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any

from kchaos.model.events import (
    INVOKE,
    NEMESIS_PROCESS,
    REQUEST,
    TRANSACTION_OPERATIONS,
    TXN_BEGIN,
    TXN_SEND,
)
from kchaos.nemesis.fault import Fault
from kchaos.nemesis.history_reading import HistoryRows, Row, is_end_txn
from kchaos.nemesis.schedule import Nemesis
from kchaos.nemesis.txn_attacks import (
    ATTACKED,
    ATTEMPTS,
    END_TXN_WAIT_S,
    POLL_S,
    attacked_coordinator,
    end_held,
)

#: The longest a request is held waiting for its application to move on: past both clients' timeouts and
#: retries (librdkafka's EndTxn request times out after socket.timeout.ms, 60 s) and a restarted client's
#: init.
MOVE_ON_WAIT_S = 120.0
#: How long an attempt waits, after the release, for the broker's answer to the late request.
ANSWER_WAIT_S = 30.0
#: The watch on the attacked client's Produce requests: delayed 1 ms, each one a row as it passes and as it
#: is answered. An AddPartitionsToTxn's answer would say the same only when it carries no error (after a
#: commit the next one is refused with CONCURRENT_TRANSACTIONS until the markers are written, which the
#: first run of this attack ran into), and a protocol 2 client sends none.
WATCH = "delay:api=Produce:client={client}:count=0:ms=1:target=all"
#: How often the history is read while the request is held: the move it waits for is a second apart.
MOVE_ON_POLL_S = 0.05
#: Rows before an attempt's start it reads (the held request's transaction may have begun before it).
LOOK_BACK = 200
PRODUCE = "Produce"
#: A request row's `value` (`kchaos.model.request_rows.step_word`) for each step an attack reads.
HELD, RELEASED, DELIVERED, ANSWERED = "held", "released", "delivered", "answered"
#: What ends a late request's life at the proxy: the broker answered, or the proxy gave up on an answer.
ANSWER_STEPS = (ANSWERED, "answer-lost", "dropped")


@dataclass(frozen=True)
class RequestWindow:
    """Whether one attempt reached its window, read from the history's rows in their order.

    `held`: the proxy held the request. `moved_on`: after it was held, the application began another
    transaction than the one it held (`next_txn`, its first row at `moved_on_index`). `reached`: the request
    was released (`released_index`) after a leader took a record of the next transaction (`added_index`,
    the watch's answered row with error NONE), or for a held Produce after its own transaction ended
    (`ended_index`).
    `answer`: the error the broker answered the late request with (NONE: it was taken), when decoded.
    """

    fault: str
    api: str
    reached: bool
    held: bool = False
    held_index: int | None = None
    txn: str | None = None
    moved_on: bool = False
    next_txn: str | None = None
    moved_on_index: int | None = None
    added_index: int | None = None
    ended_index: int | None = None
    released_index: int | None = None
    client_connected: bool | None = None
    answer: str | None = None
    answer_index: int | None = None


def _request_rows(rows: Iterable[Row], key: str) -> list[Row]:
    return [row for row in rows if row.process == NEMESIS_PROCESS and row.f == REQUEST and row.key == key]


def _txn_before(rows: Iterable[Row], process: str, index: int) -> str | None:
    """The transaction `process` was in at row `index`: the key of its last transaction row before it."""
    txn = None
    for row in rows:
        if row.index >= index:
            break
        if row.process == process and row.f in TRANSACTION_OPERATIONS and row.key:
            txn = row.key
    return txn


def request_window(
    rows: Iterable[Row], process: str, api: str, fault_key: str, watch_key: str | None
) -> RequestWindow:
    """The evidence (see `RequestWindow`) for the hold `fault_key` of `process`'s `api` request, judged by
    the watch `watch_key`'s delivered rows (EndTxn, AddPartitionsToTxn) or by the held transaction's end
    (Produce)."""
    rows = list(rows)  # in the history's order
    own = _request_rows(rows, fault_key)
    held = next((row for row in own if row.value == HELD), None)
    if held is None:
        return RequestWindow(fault_key, api, False)
    txn = _txn_before(rows, process, held.index)
    first_next = next(
        (
            row
            for row in rows
            if row.index > held.index and row.process == process and row.f in (TXN_BEGIN, TXN_SEND)
            and row.key != txn
        ),
        None,
    )  # fmt: skip
    released = next((row for row in own if row.value in (RELEASED, DELIVERED)), None)
    answer = next((row for row in own if row.value in ANSWER_STEPS), None)
    added = ended = None
    if watch_key is not None and first_next is not None:
        added = next(
            (
                row
                for row in _request_rows(rows, watch_key)
                if row.value == ANSWERED
                and row.index > first_next.index
                and row.detail.get("error") == "NONE"
            ),
            None,
        )
    ended = next(
        (
            row
            for row in rows
            if row.index > held.index and row.process == process and is_end_txn(row) and row.key == txn
            and row.type != INVOKE
        ),
        None,
    )  # fmt: skip
    after = added if watch_key is not None else ended
    reached = after is not None and released is not None and released.index > after.index
    return RequestWindow(
        fault_key,
        api,
        reached,
        held=True,
        held_index=held.index,
        txn=txn,
        moved_on=first_next is not None,
        next_txn=first_next.key if first_next else None,
        moved_on_index=first_next.index if first_next else None,
        added_index=added.index if added else None,
        ended_index=ended.index if ended else None,
        released_index=released.index if released else None,
        client_connected=released.detail.get("client_connected") if released else None,
        answer=_answer(answer) if answer else None,
        answer_index=answer.index if answer else None,
    )


def _answer(row: Row) -> str:
    """The broker's error name for the late request, or what ended it when the error is not known."""
    error = row.detail.get("error")
    if error:
        return str(error)
    return "answered, error not decoded" if row.value == ANSWERED else str(row.value)


def window_summary(windows: list[RequestWindow]) -> dict[str, Any]:
    """What the scenario's `scenario` row records: every attempt, the counts, and the late requests'
    answers by name (NONE: the broker took a request its application had given up on)."""
    answers: dict[str, int] = {}
    for window in windows:
        if window.reached and window.answer is not None:
            answers[window.answer] = answers.get(window.answer, 0) + 1
    return {
        "attempts": [asdict(window) for window in windows],
        "attempts_made": len(windows),
        "windows_reached": sum(window.reached for window in windows),
        "late_answers": answers,
    }


def kept_row(row: Row) -> bool:
    """Beyond EndTxn and nemesis rows, an attack keeps the attacked producer's begins: how it moved on."""
    return row.process == ATTACKED and row.f == TXN_BEGIN


def look_back(rows: HistoryRows) -> int:
    """Where an attempt's rows start: a little before now, as the transaction its held request belongs to
    may have begun just before."""
    return max(0, len(rows()) - LOOK_BACK)


@dataclass
class Attempt:
    """One attempt's faults and the rows it reads: those from a little before it began (the transaction
    its held request belongs to may have begun just before)."""

    rows: HistoryRows
    since: int
    api: str
    hold: Fault
    watch: Fault | None

    def window(self) -> RequestWindow:
        watch_key = self.watch.key if self.watch is not None else None
        return request_window(self.rows()[self.since :], ATTACKED, self.api, self.hold.key, watch_key)

    def steps(self) -> list[Row]:
        return _request_rows(self.rows()[self.since :], self.hold.key)

    def held(self) -> bool:
        return any(row.value == HELD for row in self.steps())

    def moved_on(self) -> bool:
        window = self.window()
        return (window.added_index if self.watch is not None else window.ended_index) is not None

    def answered(self) -> bool:
        return any(row.value in ANSWER_STEPS for row in self.steps())


def _begin(nemesis: Nemesis, rows: HistoryRows, api: str, target: str) -> Attempt | None:
    """The attempt's hold, then (for EndTxn and AddPartitionsToTxn) its watch; None, with both ended, if
    either was skipped."""
    coordinator = attacked_coordinator(nemesis)
    where = str(coordinator) if coordinator >= 0 else "txn-coordinator"
    since = look_back(rows)
    hold = nemesis.begin(
        f"hold:api={api}:client={ATTACKED}:sender=clients:target={target.format(coordinator=where)}"
    )
    watch = None
    if hold is not None and api != PRODUCE:
        watch = nemesis.begin(WATCH.format(client=ATTACKED))
        if watch is None:
            end_held(nemesis, rows, hold)
            return None
    return Attempt(rows, since, api, hold, watch) if hold is not None else None


@dataclass(frozen=True)
class RequestAttack:
    """A request attack as a scenario (`Scenario`: called with the run's nemesis). A class, not a function,
    so the run can tell before its cluster starts that the nodes need the request proxy."""

    api: str
    #: The node that receives the request: `{coordinator}` is the attacked producer's, filled in per attempt.
    target: str
    attempts_wanted: int = ATTEMPTS

    def __call__(self, nemesis: Nemesis) -> None:
        """`attempts_wanted` attempts of the steps the module's docstring lists, each recorded as a
        `RequestWindow` in the scenario's observed row as it is made, so a run that fails half-way keeps
        them."""
        api = self.api
        rows = HistoryRows(nemesis.history, also=kept_row)
        windows: list[RequestWindow] = []
        for _ in range(self.attempts_wanted):
            attempt = _begin(nemesis, rows, api, self.target)
            if attempt is None:
                nemesis.observed["stopped"] = "a request fault of the attack was skipped"
                break
            held = nemesis.await_condition(attempt.held, END_TXN_WAIT_S, f"{ATTACKED}'s {api} held", POLL_S)
            if held is not None:
                nemesis.await_condition(
                    attempt.moved_on,
                    MOVE_ON_WAIT_S,
                    f"{ATTACKED} to move on past its held {api}",
                    MOVE_ON_POLL_S,
                )
            end_held(nemesis, rows, attempt.hold)
            if held is not None:
                nemesis.await_condition(
                    attempt.answered, ANSWER_WAIT_S, f"the broker's answer to the late {api}"
                )
            end_held(nemesis, rows, attempt.watch)
            windows.append(attempt.window())
            nemesis.observed.update(window_summary(windows))
            if held is None:
                # A client that sends none (a protocol 2 client adds its partitions through the leader,
                # with no AddPartitionsToTxn of its own) would make every attempt wait as long in vain.
                nemesis.observed["stopped"] = f"{ATTACKED} sent no {api} within {END_TXN_WAIT_S:.0f} s"
                break
            nemesis.await_condition(
                attempt.hold.healed, nemesis.heal_timeout, f"the cluster to heal after {attempt.hold.key}"
            )


txn_endtxn_held = RequestAttack("EndTxn", "{coordinator}")
txn_add_partitions_held = RequestAttack("AddPartitionsToTxn", "{coordinator}")
txn_produce_held = RequestAttack(PRODUCE, "all")
