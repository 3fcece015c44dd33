"""A broker's wall clock, moved: the harness's side of the clock shift kchaos images preload.

Containers share the host's kernel clock and cannot set it, so kchaos images start the broker JVM with
`libclockshift.so` preloaded (kchaos/compose/kafka/clockshift.c): it adds an offset to the time of day the
process reads, taken from a one-line file in the container, and writes back the generation of the line
it took. This module writes that line (through Docker's archive API, which reaches a stopped container
too, so a shift set while the broker is down holds when it starts) and reads the generation back. The
paths are the ones kchaos/compose/kafka/entrypoint.sh exports to the library.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePosixPath

from kchaos.harness.cluster_error import ClusterError
from kchaos.harness.kafka_node import KafkaNode
from kchaos.model.faults.clock import ClockMode

#: Under the node's state dir, and (the library) under its Kafka home.
SHIFT_FILE = "clock-shift"
APPLIED_FILE = "clock-applied"
LIBRARY = PurePosixPath("lib/libclockshift.so")

#: The library's number for each mode (the second field of its line).
MODE_NUMBERS: dict[ClockMode, int] = {"jump": 0, "strobe": 1, "drift": 2}


@dataclass(frozen=True)
class ClockShift:
    """One line of the shift file: `generation` tells the library it is new, and comes back once taken.

    `offset_ms` is how far the clock is moved (`jump`), how far it swings every `period_ms` (`strobe`), or
    how much it gains each second (`drift`); negative moves it back."""

    generation: int
    mode: ClockMode
    offset_ms: int
    period_ms: int = 0

    def line(self) -> str:
        return f"{self.generation} {MODE_NUMBERS[self.mode]} {self.offset_ms} {self.period_ms}\n"


def write_shift(node: KafkaNode, shift: ClockShift) -> None:
    """Leaves `shift` for the node's broker to take within a tenth of a second (or when it next starts)."""
    node.put_file(node.state_dir / SHIFT_FILE, shift.line().encode())


def applied_generation(node: KafkaNode) -> int | None:
    """The generation the node's broker last took, None if it has taken none (or is not running)."""
    try:
        text = node.kafka_exec(["cat", str(node.state_dir / APPLIED_FILE)])
    except ClusterError:
        return None
    try:
        return int(text.strip())
    except ValueError:
        return None
