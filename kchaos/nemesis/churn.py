"""The `churn-members` fault: a consumer group's members killed, started again and restarted every few
seconds while the fault holds.

One member crash (`kill-member`) tests one rebalance. A group an autoscaler resizes and whose pods crash
and come back sees rebalance after rebalance, some starting before the last one finished: revocations
overlap commits, a member rejoins under a new member id while its predecessor's session still lives, and
the consumer protocol (KIP-848) fences by member epoch where the classic one fences by the group's
generation.
The steps are drawn with the fault's seed: which action (a member killed and left down, one that was down
started again, or one bounced), which member, and the wait before the next, from half to one and a half
times `every` seconds. A kill leaves at least two members up, so the group never empties and a member's
partitions always have somewhere to go (a bounce takes one down for the moment it is restarted); on stop
every member that is down is started again. The members' own rows (`member-crash`, `member-restart`)
record each step in the history; the stop row lists them.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from kchaos.model.fault_record import FaultRecord
from kchaos.model.faults.churn import CHURN_ACTIONS, ChurnRecord
from kchaos.nemesis.fault import Carriers, TargetUnresolved
from kchaos.nemesis.members import MemberFault

#: Fewest members a kill leaves up: a group of one hands nothing over, and an empty group tests nothing.
MIN_UP = 2
#: Longest stop waits for a step under way (a member's start) to finish.
STEP_WAIT_S = 90.0


class ChurnMembers(MemberFault):
    """Churns the run's group members from start to stop, in a thread of its own, so the start and stop
    rows bracket every step."""

    RECORD = ChurnRecord

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.steps: list[tuple[float, str, str]] = []
        self.down: set[str] = set()
        #: Assignments each member had been given when churn began.
        self.before: dict[str, int] = {}
        self.error: BaseException | None = None
        self._halt = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def every(self) -> int:
        return int(self.spec.option("every"))

    def start(self) -> FaultRecord:
        members = self._group()
        names = members.member_names()
        if len(names) < MIN_UP:
            raise TargetUnresolved(f"{self.key}: a group of {len(names)} has no one to hand partitions to")
        self.before = {name: members.assignments(name) for name in names}
        self.active = True
        self._thread = threading.Thread(
            target=self._churn, args=(names,), name=f"{self.key}-churn", daemon=True
        )
        self._thread.start()
        return self.record(every=self.every)

    def _churn(self, names: list[str]) -> None:
        members = self._group()
        began = time.monotonic()
        try:
            while not self._halt.wait(self.next_wait()):
                action, member = self._draw(names)
                if action == "start":
                    if not members.restart(member):
                        return  # the workload has stopped: nothing left to churn
                    self.down.discard(member)
                else:
                    members.crash(member)
                    if action == "kill":
                        self.down.add(member)
                    elif not members.restart(member):
                        self.down.add(member)
                        return
                self.steps.append((round(time.monotonic() - began, 1), action, member))
        except BaseException as exc:  # reported by stop(); the members are brought back there
            self.error = exc

    def next_wait(self) -> float:
        """Seconds to the next step: from half to one and a half times `every`, drawn with the seed."""
        return self.rng.uniform(self.every / 2, self.every * 1.5)

    def _draw(self, names: list[str]) -> tuple[str, str]:
        """The next step: an action possible now (a kill only while more than `MIN_UP` are up, a start
        only while one is down, a bounce always), then its member, both with the seed."""
        up = [name for name in names if name not in self.down]
        possible = [
            action
            for action in CHURN_ACTIONS
            if (action == "kill" and len(up) > MIN_UP)
            or (action == "start" and self.down)
            or action == "restart"
        ]
        action = self.rng.choice(possible)
        pool = sorted(self.down) if action == "start" else up
        return action, self.rng.choice(pool)

    def stop(self) -> FaultRecord:
        if not self.active:
            return self.record()
        self._halt.set()
        if self._thread is not None:
            self._thread.join(STEP_WAIT_S)
        members = self._group()
        # A member the workload no longer takes back (it has stopped) stays down, as `kill-member`'s does;
        # healing waits for the cluster alone then.
        started = [member for member in sorted(self.down) if members.restart(member)]
        self.down.clear()
        self.active = False
        counts = {action: sum(1 for _, done, _ in self.steps if done == action) for action in CHURN_ACTIONS}
        return self.record(
            every=self.every, steps=tuple(self.steps), counts=counts, started_on_stop=tuple(started),
            error=repr(self.error) if self.error else None,
        )  # fmt: skip

    def effect_reached(self) -> bool:
        """A step was taken and the group rebalanced after it: some member was given a new assignment since
        churn began."""
        members = self._group()
        moved = any(members.assignments(name) > count for name, count in self.before.items())
        return bool(self.steps) and moved

    def describe(self) -> str:
        return (
            f"churn the group's members: kill, start again or restart one every {self.every} s or so (drawn "
            "with the seed), a kill leaving two up; every member up again on stop"
        )


#: The faults this module carries out (`kchaos.model.faults`), by name and aim.
CARRIES_OUT: Carriers = {
    ("churn-members", "nodes"): ChurnMembers,
}
