"""Faults that change a setting through the cluster: unclean leader election switched on
(`unclean-election`), the topic's min.insync.replicas lowered (`min-isr`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from kchaos.model.fault_definition import FaultDefinition, FaultKind, FaultSpec, RunShape
from kchaos.model.fault_options import Choice, Flag, Number, SpecError
from kchaos.model.fault_record import FaultRecord

ORDER = 40
#: Pink: a promise switched off.
UNCLEAN_ELECTION = FaultKind("unclean-election", "unclean-election", "#e377c2")
#: Olive: a setting changed.
RECONFIGURE = FaultKind("reconfigure", "none", "#bcbd22")


def check_min_isr(spec: FaultSpec, shape: RunShape) -> None:
    """Refuses a min-isr above the replication factor: every acks=all write would fail, whatever the
    fault."""
    value = int(spec.option("value"))
    if value > shape.replication_factor:
        raise SpecError(
            f"{spec}: value {value} exceeds replication_factor ({shape.replication_factor}): every acks=all "
            f"write would fail, whatever the fault; use value=1 to value={shape.replication_factor}"
        )


@dataclass(frozen=True)
class SettingRecord(FaultRecord):
    """What a changed setting records: each scope's value before (restored on stop), and the answer per
    partition to the unclean election it asked for."""

    previous: tuple[str | None, ...] | None = None
    elected: Mapping[str, str] | None = None


DEFINITIONS = (
    FaultDefinition(
        "unclean-election",
        UNCLEAN_ELECTION,
        (
            Choice("scope", "topic", ("topic", "cluster"), "the topic's setting, or every broker's"),
            Flag("trigger", "true"),
        ),
    ),
    FaultDefinition(
        "min-isr",
        RECONFIGURE,
        (
            Number(
                "value",
                "1",
                1,
                None,
                "the topic's min.insync.replicas while the fault holds",
                also="at most the topic's --replication-factor",
            ),
        ),
        check_shape=check_min_isr,
    ),
)
