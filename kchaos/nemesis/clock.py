"""The `clock` fault: one broker's wall clock jumps, strobes or drifts while the others keep time.

Kafka times much with the wall clock (`System.currentTimeMillis`): a follower's lag for the ISR, group
members' sessions, transaction timeouts, retention, `LogAppendTime` timestamps. A node whose clock is off
is what a failed NTP daemon, a VM resumed from a snapshot or a leap smear gives. The shift is made by the
library kchaos images preload into the broker (`kchaos.harness.clock_shift`), so the fault needs one of
those images; another image is refused before the run (the table's `needs_kchaos_image`) and skipped, with
the reason, if a node turns out to lack the library.

Its effect is the library's own word that the JVM took the shift (it asked for the time after the change),
not that Kafka did anything: what a skewed clock does to Kafka is what the run is for. On stop the clock is
set right again (the broker's clock jumps back to the real time, as an NTP step would), and the fault
waits for the broker to take that too, so the next fault starts on true time.
"""

from __future__ import annotations

import time
from typing import Any

from kchaos.harness.clock_shift import (
    LIBRARY,
    ClockShift,
    applied_generation,
    write_shift,
)
from kchaos.model.fault_record import FaultRecord
from kchaos.model.faults.clock import CLOCK_MODES, ClockMode, ClockRecord
from kchaos.model.waiting import WaitTimeout, wait_until
from kchaos.nemesis.fault import Carriers, Fault, describe_nodes

#: How long stop waits for each broker to take the true time back; a broker that is down (another fault)
#: takes it when it starts, since the file stays.
RESET_TIMEOUT = 10.0


class ClockFault(Fault):
    """Moves the wall clock of every target broker by the spec's offset, in its mode, until stop."""

    RECORD = ClockRecord

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.generation = 0

    @property
    def mode(self) -> ClockMode:
        mode = self.spec.option("mode")
        for known in CLOCK_MODES:  # its definition refuses any other
            if mode == known:
                return known
        raise ValueError(f"{self.key}: clock mode {mode!r}")

    def shift(self) -> ClockShift:
        period = int(self.spec.option("period")) if self.mode == "strobe" else 0
        return ClockShift(self.generation, self.mode, int(self.spec.option("offset")), period)

    def start(self) -> FaultRecord:
        self.remember_leader()
        self.nodes = self.resolve(self.spec.option("target"))
        self.require_files("clock shift library, so its clock cannot be moved", LIBRARY)
        # Unlike any generation an earlier clock fault of this run left: the library takes a line only
        # when its generation is new, and the harness waits for this number to come back.
        self.generation = time.time_ns()
        for node_id in self.nodes:
            write_shift(self.cluster.node(node_id), self.shift())
        self.active = True
        return self.record(leader_before=self.leader_before, shift=self.shift().line().strip())

    def effect_reached(self) -> bool:
        return all(applied_generation(self.cluster.node(n)) == self.generation for n in self.nodes)

    def stop(self) -> FaultRecord:
        if not self.active:
            return self.record()
        self.generation = time.time_ns()
        reset = ClockShift(self.generation, "jump", 0)
        for node_id in self.nodes:
            write_shift(self.cluster.node(node_id), reset)
        self.active = False
        try:
            wait_until(self.effect_reached, RESET_TIMEOUT, f"{self.key}: the true time back on its nodes")
            reset_taken = True
        except WaitTimeout:
            reset_taken = False  # a node down now takes it as it starts: the file stays
        return self.record(reset_taken=reset_taken)

    def describe(self) -> str:
        who = describe_nodes(self.nodes) if self.nodes else self.spec.option("target")
        offset = int(self.spec.option("offset"))
        direction = "ahead" if offset > 0 else "behind"
        if self.mode == "jump":
            what = f"clock of {who} jumps {abs(offset)} ms {direction}"
        elif self.mode == "strobe":
            what = (
                f"clock of {who} strobes between true time and {abs(offset)} ms {direction} every "
                f"{self.spec.option('period')} ms"
            )
        else:
            what = f"clock of {who} drifts {abs(offset)} ms {direction} per second"
        return f"{what}; true time again on stop"


#: The faults this module carries out (`kchaos.model.faults`), by name and aim.
CARRIES_OUT: Carriers = {
    ("clock", "nodes"): ClockFault,
}
