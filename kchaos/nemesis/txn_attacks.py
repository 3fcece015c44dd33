"""Attacks on the transaction protocol: a commit or abort (EndTxn) held outstanding while its client, or its
transaction coordinator, is frozen or killed, repeated in one run so that each attempt is cheap.

The mechanism is KAFKA-17754, found by Jepsen's analysis of Bufstream 0.1 (jepsen.io/analyses/
bufstream-0.1.0) with process pauses: under transaction protocol 1 a producer keeps its epoch from one
transaction to the next, so an EndTxn (or a produce) that is delayed past the client's own timeout and
retry can land on the producer's next transaction, which Jepsen saw as aborted reads, lost writes and torn
transactions on Kafka itself. KIP-890 part 2 (protocol 2: the epoch is bumped by every EndTxn; the Java
client of 4.0+ against a 4.0+ cluster) makes such a late request fail on the old epoch. Which protocol
each commit and abort used is in its invoke row (`kchaos.model.txn_protocol`).

Every attack aims at one producer, `producer-0`, and its coordinator (`target=txn-coordinator`, the
leader of the `__transaction_state` partition its transactional id hashes to). Each attempt:

1. waits for the history to show `producer-0`'s `txn-commit` or `txn-abort` invoke row with no outcome;
2. at once begins the attack's fault, and holds it until the state it waits for shows (below);
3. ends it, waits for the EndTxn's outcome row, and records the attempt's evidence.

An EndTxn is answered once the coordinator's PrepareCommit (or PrepareAbort) is replicated to the
`__transaction_state` partition's in-sync followers, 10 to 130 ms on this machine, shorter than the
harness needs to see the invoke row and freeze a container (40 to 270 ms, measured: no attempt of ten
caught one; freezing or killing a broker takes longer still, as the fault first asks every node which
broker leads). So the scenarios make every follower's fetch wait (their broker settings in
`kchaos.model.scenario_table`): a replicated append, and with it every EndTxn, then takes about a
second, which a fault reaches. A delayed link (netem)
would do the same for one broker, but many kernels (this machine's among them) have no netem.

The evidence (`window_evidence`, a pure function over history rows) is whether the window was reached:
the EndTxn's invoke row lies before the fault's `start` row and its outcome after it. That is the
history's own order, so a row that arrived late would count an attempt as missed, never the reverse.

The three attacks and what each holds its fault until:

- `txn-client-pause`: the producer's container is frozen (`docker pause`; only a client that is its own
  process, `--client java` or `--client librdkafka-process`). Held until the other producers have ended
  `HOLD_TRANSACTIONS` transactions while it was frozen: the cluster moved on without it. The transaction
  timeout stays the workloads' 60 s, longer than a hold, so the coordinator does not abort the frozen
  transaction.
- `txn-coordinator-pause`: the coordinator broker is frozen. Held until the client has given up on the
  EndTxn (its outcome row, a timeout after 10 s in either client) and asks again, which is the
  Bufstream condition: a stale EndTxn waits in the frozen broker's socket while its client goes on.
- `txn-coordinator-failover`: the coordinator broker is killed. Held until another broker coordinates the
  transactional id and the EndTxn has an outcome, then the old coordinator is restarted.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable
from dataclasses import asdict, dataclass
from functools import partial
from typing import Any

from kchaos.harness.metadata import TRANSACTION_STATE_TOPIC
from kchaos.model.events import (
    INVOKE,
    NEMESIS_PROCESS,
    START,
    STOP,
    producer_process,
    transactional_name,
)
from kchaos.nemesis.fault import Fault
from kchaos.nemesis.history_reading import HistoryRows, Row, is_end_txn, pending_end_txn
from kchaos.nemesis.schedule import Nemesis

#: Attempts per run: each is a window the attack tries to reach, counted whether it does or not.
ATTEMPTS = 10
#: The producer every attack aims at, and whose coordinator `target=txn-coordinator` names.
ATTACKED = producer_process(0)
#: How long an attempt waits for the attacked producer to ask for a commit or an abort.
END_TXN_WAIT_S = 60.0
#: How often the history is read while waiting for that: a catch must follow the row within milliseconds.
POLL_S = 0.01
#: Transactions the other producers end while the attacked one is frozen, before it is thawed.
HOLD_TRANSACTIONS = 2
#: The longest any hold lasts, whatever it waits for.
HOLD_LIMIT_S = 30.0
#: How long an attempt waits, after its fault ended, for the EndTxn's outcome row.
OUTCOME_WAIT_S = 60.0
#: How long a failover attempt waits for another broker to coordinate the transactional id.
FAILOVER_WAIT_S = 90.0

#: The key, in an attack's stop row, of the index of the last history row read before the fault was
#: lifted. The stop row itself is recorded once the thaw is done, after the rows a thawed client prints
#: at once; a row past this index arrived after the thaw began, one at or below it before.
HELD_THROUGH = "held_through_row"  # the stop record's field (`FaultRecord.held_through_row`)


@dataclass(frozen=True)
class WindowEvidence:
    """Whether one attempt reached its window, read from the history's rows in their order.

    `caught`: the attacked producer's EndTxn invoke row precedes the fault's start row, and no outcome
    row lies between them, so the EndTxn was outstanding when the fault began. `outcome_after_stop`: its
    outcome row (if any) came after the fault began to be lifted (past the stop row's `HELD_THROUGH`
    index, or the stop row's own), so it stayed outstanding for the whole hold.
    `reached`: the window the attack needs, `caught`, and for an attack that must hold the EndTxn
    outstanding through the fault (a frozen client, whose answer waits in its socket) that as well.
    """

    fault: str
    reached: bool
    caught: bool = False
    operation: str | None = None
    txn: str | None = None
    invoke_index: int | None = None
    start_index: int | None = None
    stop_index: int | None = None
    outcome_index: int | None = None
    outcome: str | None = None
    outcome_after_stop: bool = False


def _before(row: Row, other: Row) -> bool:
    """`row` happened before `other` by their stamps (never, if either is unknown)."""
    return row.time_ns is not None and other.time_ns is not None and row.time_ns < other.time_ns


def window_evidence(
    rows: Iterable[Row], process: str, fault_key: str, through_stop: bool = False
) -> WindowEvidence:
    """The evidence (see `WindowEvidence`) for the fault `fault_key` aimed at `process`'s EndTxn; with
    `through_stop` the window needs the EndTxn outstanding until the fault's stop row."""
    start = stop = None
    invoke: Row | None = None
    outcome: Row | None = None
    answered_before = False
    for row in rows:
        if row.process == NEMESIS_PROCESS and row.key == fault_key:
            if row.value == START and start is None:
                start = row
            elif row.value == STOP and start is not None:
                stop = row
            continue
        if row.process != process or not is_end_txn(row):
            continue
        if start is None:
            if row.type == INVOKE:
                invoke, answered_before = row, False
            elif invoke is not None and (row.f, row.key) == (invoke.f, invoke.key):
                answered_before = True
        elif invoke is not None and outcome is None and (row.f, row.key) == (invoke.f, invoke.key):
            outcome = row
    # A client process's outcome line can be recorded after the fault's start row though it was printed
    # before: by when it happened, the EndTxn was answered before the fault began.
    if outcome is not None and start is not None and _before(outcome, start):
        answered_before = True
    caught = start is not None and invoke is not None and not answered_before
    if not caught or invoke is None or start is None:
        return WindowEvidence(fault_key, False, start_index=start.index if start else None)
    held_through = int(stop.detail.get(HELD_THROUGH, stop.index)) if stop is not None else None
    after_stop = held_through is not None and (outcome is None or outcome.index > held_through)
    return WindowEvidence(
        fault_key,
        after_stop or not through_stop,
        caught=True,
        operation=invoke.f,
        txn=invoke.key,
        invoke_index=invoke.index,
        start_index=start.index,
        stop_index=stop.index if stop else None,
        outcome_index=outcome.index if outcome else None,
        outcome=outcome.type if outcome else None,
        outcome_after_stop=after_stop,
    )


def ended_by_others(rows: Iterable[Row], process: str, since_index: int) -> int:
    """Transactions other producers ended (an outcome row of a commit or abort) after row `since_index`."""
    return sum(
        1
        for row in rows
        if row.index > since_index
        and row.process != process
        and row.process.startswith("producer-")
        and is_end_txn(row)
        and row.type != INVOKE
    )


def attempt_summary(attempts: list[WindowEvidence]) -> dict[str, Any]:
    """What the scenario's `scenario` row records: every attempt's evidence and the two counts."""
    return {
        "attempts": [asdict(attempt) for attempt in attempts],
        "attempts_made": len(attempts),
        "windows_reached": sum(attempt.reached for attempt in attempts),
    }


def attacked_coordinator(nemesis: Nemesis) -> int:
    """The broker coordinating the attacked producer's transactional id: the leader of its
    `__transaction_state` partition, or -1 while the nodes name none (or disagree)."""
    key = transactional_name(nemesis.cluster.run_id, ATTACKED)
    return nemesis.cluster.metadata.coordinator(TRANSACTION_STATE_TOPIC, key)


def await_coordinator(
    nemesis: Nemesis, not_among: Collection[int], timeout: float, what: str
) -> tuple[int, float | None]:
    """Waits for the attacked producer's coordinator to be known and not among `not_among` (a killed one);
    the coordinator seen then and the seconds it took, or -1 and None if none came within `timeout`. The
    node the wait saw is the one returned: asking the nodes again could answer otherwise."""
    seen = -1

    def found() -> bool:
        nonlocal seen
        seen = attacked_coordinator(nemesis)
        return seen >= 0 and seen not in not_among

    after = nemesis.await_condition(found, timeout, what)
    return (seen, after) if after is not None else (-1, None)


def end_held(nemesis: Nemesis, rows: HistoryRows, fault: Fault | None) -> None:
    """Ends an attack's fault (if it began), its stop row naming the last history row read before the
    lift began (`HELD_THROUGH`): what a thawed client printed at once comes after it."""
    if fault is not None:
        rows()
        nemesis.end(fault, held_through_row=rows.last_index)


#: An attack's hold: given the nemesis, the rows, the attacked EndTxn and the fault, returns once the
#: state it holds the fault for has shown (or its limit passed).
Hold = Callable[[Nemesis, HistoryRows, Row, Fault], None]


def _hold_client_pause(nemesis: Nemesis, rows: HistoryRows, pending: Row, fault: Fault) -> None:
    since = rows()[-1].index
    nemesis.await_condition(
        lambda: ended_by_others(rows(), ATTACKED, since) >= HOLD_TRANSACTIONS,
        HOLD_LIMIT_S,
        f"{HOLD_TRANSACTIONS} transactions of other producers while {ATTACKED} is frozen",
    )


def _answered_or_retried(rows: HistoryRows, pending: Row) -> bool:
    """A later row of the attacked producer's EndTxn: its outcome (a timeout, in either client) or a new
    invoke, as a client asks again after a timeout."""
    return any(row.index > pending.index and row.process == ATTACKED and is_end_txn(row) for row in rows())


def _hold_coordinator_pause(nemesis: Nemesis, rows: HistoryRows, pending: Row, fault: Fault) -> None:
    nemesis.await_condition(
        lambda: _answered_or_retried(rows, pending),
        HOLD_LIMIT_S,
        f"{ATTACKED} to give up on its {pending.f} of {pending.key} while its coordinator is frozen",
    )


def _hold_coordinator_kill(nemesis: Nemesis, rows: HistoryRows, pending: Row, fault: Fault) -> None:
    key = transactional_name(nemesis.cluster.run_id, ATTACKED)
    _, moved = await_coordinator(nemesis, fault.nodes, FAILOVER_WAIT_S, f"another broker to coordinate {key}")
    nemesis.observed.setdefault("failover_after_s", []).append(moved)
    nemesis.await_condition(
        lambda: _answered_or_retried(rows, pending),
        HOLD_LIMIT_S,
        f"{ATTACKED}'s {pending.f} of {pending.key} to be answered by the new coordinator",
    )


def _attack(
    fault_spec: str, hold: Hold, through_stop: bool, nemesis: Nemesis, attempts_wanted: int = ATTEMPTS
) -> None:
    """`attempts_wanted` attempts of the steps the module's docstring lists, each recorded as
    `WindowEvidence`; the counts go to the scenario's observed row with each attempt, so a run that fails
    half-way keeps them. A named scenario makes `ATTEMPTS`; a test may ask for fewer."""
    rows = HistoryRows(nemesis.history)
    attempts: list[WindowEvidence] = []
    for _ in range(attempts_wanted):
        # The coordinator is named before the wait: asking every node which broker it is takes longer
        # than an EndTxn is outstanding. It moves only when its broker fails, which no step here hides.
        coordinator = attacked_coordinator(nemesis)
        spec = fault_spec.format(coordinator=coordinator if coordinator >= 0 else "txn-coordinator")
        found = nemesis.await_condition(
            lambda: pending_end_txn(rows(), ATTACKED) is not None,
            END_TXN_WAIT_S,
            f"a commit or abort of {ATTACKED}",
            interval=POLL_S,
        )
        fault = nemesis.begin(spec) if found is not None else None
        pending = pending_end_txn(rows(), ATTACKED)
        if fault is not None and pending is not None:
            hold(nemesis, rows, pending, fault)
        end_held(nemesis, rows, fault)
        if fault is None:
            nemesis.observed["stopped"] = "no commit or abort to attack, or the fault was skipped"
            break
        if pending is not None:
            nemesis.await_condition(
                partial(_answered_or_retried, rows, pending), OUTCOME_WAIT_S, "the EndTxn's outcome"
            )
        attempts.append(window_evidence(rows(), ATTACKED, fault.key, through_stop))
        nemesis.observed.update(attempt_summary(attempts))
        nemesis.await_condition(fault.healed, nemesis.heal_timeout, f"the cluster to heal after {fault.key}")


txn_client_pause = partial(_attack, f"pause:target={ATTACKED}", _hold_client_pause, True)
txn_coordinator_pause = partial(_attack, "pause:target={coordinator}", _hold_coordinator_pause, False)
txn_coordinator_failover = partial(_attack, "kill:target={coordinator}", _hold_coordinator_kill, False)
