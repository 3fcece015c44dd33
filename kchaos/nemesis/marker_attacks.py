"""A transaction marker delivered late, across a coordinator failover: the coordinator's WriteTxnMarkers to a
partition leader is held by the request proxy, the coordinator is killed, another broker takes the
transaction over and completes it, the producer goes on into its next transaction, and only then is the
old coordinator's marker delivered to the leader.

This is the last step of a transaction, one no client takes part in: once the coordinator has written
PrepareCommit (or PrepareAbort) it sends each partition leader a marker, and a coordinator that takes over
sends them again. A stale one that lands after the producer's next transaction has written to the
partition would, if the leader took it, commit or abort that next transaction's records there before its
application asked. Under transaction protocol 1 the producer keeps its epoch, so the marker's producer
epoch is no defence; what fences it is the coordinator epoch each marker carries, which the leader keeps
per producer (KIP-98; `TRANSACTION_COORDINATOR_FENCED`). Whatever the leader answered the late marker is
recorded, as the other request attacks record theirs (`kchaos.nemesis.request_attacks`).

Each attempt:

1. names producer-0's coordinator and a leader of the run's topic that is another broker, and holds the
   next WriteTxnMarkers that leader receives from a node (the scenario runs one producer, so it is a
   marker of producer-0's transaction), with the 1 ms watch of producer-0's Produce requests beside it;
2. once the marker is held, kills the coordinator that sent it (its connection to the proxy closes; the
   proxy keeps the one to the leader);
3. waits for another broker to coordinate the transactional id, then for producer-0 to have moved on: a
   leader took a record of its next transaction, which it does only once the new coordinator completed
   the held one;
4. releases the marker, waits for the leader's answer, restarts the old coordinator, and records the
   attempt: its `RequestWindow` (reached only if the failover was seen too) and the failover's nodes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from kchaos.nemesis.fault import Fault
from kchaos.nemesis.history_reading import HistoryRows
from kchaos.nemesis.request_attacks import (
    ANSWER_WAIT_S,
    MOVE_ON_POLL_S,
    MOVE_ON_WAIT_S,
    WATCH,
    Attempt,
    RequestAttack,
    RequestWindow,
    kept_row,
    look_back,
    window_summary,
)
from kchaos.nemesis.schedule import Nemesis
from kchaos.nemesis.txn_attacks import (
    ATTACKED,
    END_TXN_WAIT_S,
    FAILOVER_WAIT_S,
    POLL_S,
    await_coordinator,
    end_held,
)

MARKERS = "WriteTxnMarkers"
#: The held marker: the next one the leader receives from any node (a coordinator), one request.
HOLD = "hold:api=WriteTxnMarkers:sender=nodes:count=1:target={leader}"
KILL = "kill:target={coordinator}"


def marker_leader(leaders: Mapping[int, int], coordinator: int) -> int | None:
    """The leader whose markers an attempt holds: the leader of the lowest-numbered partition led by
    another broker than the coordinator (a coordinator's markers to itself die with it); None if the
    coordinator leads every partition or none has a leader."""
    for _, leader in sorted(leaders.items()):
        if leader >= 0 and leader != coordinator:
            return leader
    return None


def _leaders(nemesis: Nemesis) -> dict[int, int]:
    views = nemesis.cluster.metadata.views(nemesis.topic)
    return {pid: state.leader for pid, state in views[0].partitions.items()} if views else {}


def _failover(nemesis: Nemesis, attempt: Attempt, coordinator: int) -> tuple[Fault | None, int | None]:
    """Kills the coordinator whose marker is held, waits for another broker to coordinate, then for
    producer-0 to move on; returns the kill (None if skipped) and the new coordinator (None if none took
    over, and then nothing waits for a producer that cannot move on)."""
    kill = nemesis.begin(KILL.format(coordinator=coordinator))
    if kill is None:
        return None, None
    new, _ = await_coordinator(
        nemesis, (coordinator,), FAILOVER_WAIT_S, f"another broker to coordinate {ATTACKED}'s transactions"
    )
    if new < 0:
        return kill, None
    nemesis.await_condition(
        attempt.moved_on, MOVE_ON_WAIT_S, f"{ATTACKED} to move on past its held marker", MOVE_ON_POLL_S
    )
    return kill, new


def _attack(nemesis: Nemesis, attempts_wanted: int) -> None:
    """`attempts_wanted` attempts of the steps the module's docstring lists, each recorded in the scenario's
    observed row as it is made (the request windows, and under `failovers` each attempt's coordinator,
    leader and new coordinator), so a run that fails half-way keeps them."""
    rows = HistoryRows(nemesis.history, also=kept_row)
    windows: list[RequestWindow] = []
    failovers: list[dict[str, int | None]] = []
    for _ in range(attempts_wanted):
        # The transaction state topic exists once the producer's first init asked for it.
        coordinator, _ = await_coordinator(
            nemesis, (), FAILOVER_WAIT_S, f"{ATTACKED}'s coordinator to be known"
        )
        leader = marker_leader(_leaders(nemesis), coordinator) if coordinator >= 0 else None
        if leader is None:
            nemesis.observed["stopped"] = (
                f"no leader of {nemesis.topic} other than {ATTACKED}'s coordinator (node {coordinator})"
            )
            break
        since = look_back(rows)
        hold = nemesis.begin(HOLD.format(leader=leader))
        watch = nemesis.begin(WATCH.format(client=ATTACKED)) if hold is not None else None
        if hold is None or watch is None:
            end_held(nemesis, rows, hold)
            nemesis.observed["stopped"] = "a request fault of the attack was skipped"
            break
        attempt = Attempt(rows, since, MARKERS, hold, watch)
        held = nemesis.await_condition(
            attempt.held, END_TXN_WAIT_S, f"a marker held at node {leader}", POLL_S
        )
        kill, new = _failover(nemesis, attempt, coordinator) if held is not None else (None, None)
        end_held(nemesis, rows, hold)
        if held is not None:
            nemesis.await_condition(attempt.answered, ANSWER_WAIT_S, "the leader's answer to the late marker")
        end_held(nemesis, rows, kill)
        end_held(nemesis, rows, watch)
        window = attempt.window()
        windows.append(replace(window, reached=window.reached and new is not None))
        failovers.append({"coordinator": coordinator, "leader": leader, "new_coordinator": new})
        nemesis.observed.update(window_summary(windows))
        nemesis.observed["failovers"] = failovers
        if held is None:
            nemesis.observed["stopped"] = f"node {leader} received no marker within {END_TXN_WAIT_S:.0f} s"
            break
        for fault in (kill, hold):
            if fault is not None:
                nemesis.await_condition(
                    fault.healed, nemesis.heal_timeout, f"the cluster to heal after {fault.key}"
                )


@dataclass(frozen=True)
class MarkerAttack(RequestAttack):
    """The marker attack: a request attack (so the run starts the request proxy for it) whose hold is at a
    partition leader, with the coordinator killed while it holds."""

    api: str = MARKERS
    target: str = "{leader}"

    def __call__(self, nemesis: Nemesis) -> None:
        _attack(nemesis, self.attempts_wanted)


txn_markers_held = MarkerAttack()
