"""A node's wall clock moved (`clock`), as its broker JVM reads it, through the clock shift images kchaos
builds preload into the broker."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from kchaos.model.fault_definition import FaultDefinition, FaultKind
from kchaos.model.fault_options import Choice, Described, Number, SpecError, is_whole_number
from kchaos.model.fault_record import FaultRecord
from kchaos.model.fault_targets import Target

ORDER = 80
#: Dark yellow: a node's wall clock off. Kafka's replication does not run on wall clocks, and no document
#: lets a skewed clock lose an acknowledged write, so it excuses nothing.
CLOCK = FaultKind("clock", "none", "#bd9e39")

#: How `clock` moves a clock, and how far `offset` may go in each mode (milliseconds; per second for drift):
#: a jump past a day would reach the topics' 7-day retention, and a drift past 1,000 ms a second would
#: stop or reverse time.
ClockMode = Literal["jump", "strobe", "drift"]
CLOCK_MODES: dict[ClockMode, int] = {"jump": 86_400_000, "strobe": 86_400_000, "drift": 1_000}


def check_offset(options: Mapping[str, str]) -> None:
    """Refuses an offset that is not a signed whole number of milliseconds other than 0 within the mode's
    bound."""
    mode, offset = options["mode"], options["offset"]
    bound = CLOCK_MODES[mode]  # type: ignore[index]  # the mode's own option has checked it
    digits = offset[1:] if offset[:1] in ("-", "+") else offset
    if not is_whole_number(digits) or int(offset) == 0 or abs(int(offset)) > bound:
        drift = mode == "drift"
        unit = "gained each second (negative: lost)" if drift else "ahead (negative: behind)"
        example = -100 if drift else -60000
        raise SpecError(
            f"clock: offset must be a whole number of milliseconds {unit} from -{bound} to {bound}, not 0, "
            f"for mode={mode}; got {offset!r}; e.g. clock:mode={mode}:offset={example}"
        )


@dataclass(frozen=True)
class ClockRecord(FaultRecord):
    """What a clock fault records: the partition's leader when it struck, the shift the nodes were given
    (as the clock library reads it), and whether they took the reset on stop."""

    leader_before: int | None = None
    shift: str | None = None
    reset_taken: bool | None = None


DEFINITIONS = (
    FaultDefinition(
        "clock",
        CLOCK,
        (
            Target("target", "leader"),
            Choice(
                "mode",
                "jump",
                tuple(CLOCK_MODES),
                "the clock jumps by offset, swings between true time and offset every period ms, or gains "
                "offset ms each second",
            ),
            Described(
                "offset",
                "60000",
                "a whole number of milliseconds other than 0, negative for behind: "
                + ", ".join(f"{mode} within ±{bound:,}" for mode, bound in CLOCK_MODES.items()),
            ),
            Number("period", "1000", 100, 60_000, "milliseconds between a strobing clock's swings"),
        ),
        needs_kchaos_image=True,
        overlaps=True,
        check_options=check_offset,
    ),
)
