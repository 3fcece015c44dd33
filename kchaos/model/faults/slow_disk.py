"""A broker's disk slow (`slow-disk`): every sync, or every write too, of the files under its log dirs
takes longer, by a fixed delay or with a tail, applied and healed while the broker runs."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from kchaos.model.fault_definition import FaultDefinition, FaultKind
from kchaos.model.fault_options import Choice, Number, SpecError
from kchaos.model.fault_record import FaultRecord
from kchaos.model.fault_targets import Target

ORDER = 91
#: Pale olive: a node's disk slow. The broker keeps running and keeps its data; no rule depends on it.
SLOW_DISK = FaultKind("slow-disk", "none", "#cedb9c")


def check_slowness(options: Mapping[str, str]) -> None:
    """Some call must be delayed: by `ms`, or by a `tail` that a `share` of the calls take."""
    ms, tail, share = int(options["ms"]), int(options["tail"]), int(options["share"])
    if ms == 0 and (tail == 0 or share == 0):
        raise SpecError(
            f"slow-disk: ms=0 with tail={tail} and share={share} slows nothing (share percent of the calls "
            "take tail ms instead of ms); e.g. slow-disk:ms=100, or slow-disk:ms=5:tail=500:share=1"
        )


@dataclass(frozen=True)
class SlowDiskRecord(FaultRecord):
    """What a slow disk records: the calls each node's library delayed, and the first of them."""

    delayed: Mapping[str, int] | None = None
    first_delayed: Mapping[str, str | None] | None = None


DEFINITIONS = (
    FaultDefinition(
        "slow-disk",
        SLOW_DISK,
        (
            Target("target", "leader"),
            Choice(
                "on",
                "sync",
                ("sync", "write"),
                "sync: each fsync and fdatasync; write: each write too (every append)",
            ),
            Number("ms", "100", 0, 60_000, "milliseconds added to each call"),
            Number(
                "tail", "0", 0, 60_000, "milliseconds a share of the calls take instead", also="with share"
            ),
            Number("share", "0", 0, 100, "percent of the calls that take tail", also="with tail"),
        ),
        needs_kchaos_image=True,
        overlaps=True,
        check_options=check_slowness,
    ),
)
