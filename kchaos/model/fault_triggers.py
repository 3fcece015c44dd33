"""`when=STATE`: a fault that starts on a state the cluster or the clients are observed in, not on the clock.

Today's bugs live in windows a clock almost never hits: a follower that truncated and has not fetched
back, a leader that died and is not yet replaced, a commit still outstanding. A fault with `when=` is armed
when the fault before it starts and fires the moment its state has held for `after_s` seconds (a seeded
moment, as an overlap's start is), so it lands inside the window the fault before it opened. It keeps off
the nodes the faults in force hold, as any fault started beside others does; a state that never comes
while it is armed skips it, recorded with the state it waited for, and no fault that did not happen is
ever judged.

This module owns the words (every fault takes `when=`, a mix draws among the states its own `when=`
lists); what each state is, read from the cluster and the history, is `kchaos.nemesis.triggers`'s.
Pure (no Docker, no Kafka).
"""

from __future__ import annotations

from dataclasses import dataclass

from kchaos.model.fault_definition import TIME, WHEN
from kchaos.model.fault_options import SpecError
from kchaos.model.fault_targets import SUCCESSOR
from kchaos.model.workload_names import TRANSACTIONAL

#: The longest a trigger waits, once its state holds, before the fault fires (the plan draws in 0..this).
MAX_AFTER_S = 3.0
#: How long a trigger stays armed after the fault before it is planned to end: a state a fault leaves
#: behind (a follower restarted and not caught up) comes just after it.
ARMED_PAST_END_S = 10.0


@dataclass(frozen=True)
class Trigger:
    """One state a fault can fire on: its name, what it is (as `kchaos faults` prints it), and the
    workloads whose clients can be in it (empty: every workload)."""

    name: str
    help: str
    #: The targets a mix draws among for a fault it fires on this state: the nodes the state is about
    #: (the replica about to take over from a leader that is down, ...), where the fault takes them.
    aims: tuple[str, ...] = ()
    workloads: tuple[str, ...] = ()
    #: It reads a request fault's proxy, so the run's nemesis must have a request fault that holds.
    needs_request_hold: bool = False


TRIGGERS: dict[str, Trigger] = {
    trigger.name: trigger
    for trigger in (
        Trigger(
            "leader-down",
            "the run partition's leader is a node a fault in force holds (killed, paused, stopped, cut "
            "off) and the running nodes still name it: the failover has not happened yet",
            aims=(SUCCESSOR, "followers", "random"),
        ),
        Trigger(
            "leader-changed",
            "the run partition's leader is another node than when the trigger was armed",
            aims=("leader", "followers"),
        ),
        Trigger(
            "isr-shrunk",
            "the run partition's in-sync replicas are fewer than its replicas",
            aims=("leader", SUCCESSOR),
        ),
        Trigger(
            "follower-behind",
            "a replica of the run partition answers, no fault holds it, and it is not in sync: a "
            "follower restarted or let back and not yet caught up",
            aims=("leader", SUCCESSOR),
        ),
        Trigger(
            "txn-outstanding",
            "the first transactional client's commit or abort (EndTxn) was sent and not yet answered",
            aims=("txn-coordinator", "leader"),
            workloads=TRANSACTIONAL,
        ),
        Trigger(
            "request-held",
            "a request fault in force holds a request (hold: one taken and not yet released)",
            aims=("txn-coordinator", "leader"),
            needs_request_hold=True,
        ),
    )
}

#: What `when=` does, in the words `kchaos faults` prints below the table.
WHEN_HELP = (
    f"every fault takes {WHEN}=STATE ({', '.join(TRIGGERS)}): it is armed when the fault before it "
    "starts, fires once STATE has held a seeded moment (up to "
    f"{MAX_AFTER_S:g} s), keeps off what the faults in force hold, and is skipped, recorded, if STATE "
    f"never comes before {ARMED_PAST_END_S:g} s after the fault before it ends. A fault that fires on "
    "state starts while another holds, so it must be one that may overlap."
)


def check_when(fault: str, value: str, overlaps: bool) -> None:
    """Refuses an unknown state, and a state on a fault that may not start while another holds."""
    if value == TIME:
        return
    if value not in TRIGGERS:
        raise SpecError(
            f"{fault}: {WHEN}={value!r} is no state kchaos observes; choose from {TIME} (the default), "
            f"{', '.join(TRIGGERS)} (`kchaos faults` says what each is)"
        )
    if not overlaps:
        raise SpecError(
            f"{fault}: {WHEN}={value} starts it while the fault before it holds, and {fault} needs the "
            f"cluster to itself; leave {WHEN}= out, or fire a fault that may overlap (kill, pause, "
            "isolate, ...) on it"
        )


def trigger_refusal(value: str, workload: str, request_hold: bool) -> str | None:
    """Why state `value` can never hold in a run of `workload` (whose nemesis has a request fault that
    holds, or not), with the fix; None when it can."""
    trigger = TRIGGERS.get(value)
    if trigger is None:
        return None
    if trigger.workloads and workload not in trigger.workloads:
        return (
            f"{WHEN}={value}: only the {', '.join(trigger.workloads)} workloads have a transactional "
            f"client, and --workload is {workload}; pick one of them, or another state"
        )
    if trigger.needs_request_hold and not request_hold:
        return (
            f"{WHEN}={value}: no request fault of the run holds a request; add one (e.g. "
            "hold:api=EndTxn), or another state"
        )
    return None
