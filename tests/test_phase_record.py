"""Phase rows read back: a history recorded before the final read's phase was renamed reads as before."""

from __future__ import annotations

from kchaos.model.events import HARNESS_PROCESS, OK, PHASE
from kchaos.model.phase_record import READ_TO_END, RUN_PHASES, run_phases


def phase_rows(*values: str) -> list[dict[str, object]]:
    return [
        {"index": i, "process": HARNESS_PROCESS, "type": OK, "f": PHASE, "value": value}
        for i, value in enumerate(values)
    ]


def test_the_former_final_read_phase_reads_as_read_to_end() -> None:
    old = ["final-read" if phase == READ_TO_END else phase for phase in RUN_PHASES]
    phases = run_phases(phase_rows(*old))
    assert phases.completed == RUN_PHASES
    assert not phases.partial and phases.has(READ_TO_END)
