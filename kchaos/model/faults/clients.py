"""Faults that hit client processes (`--client java` or `librdkafka-process`) rather than brokers: `kill`,
`pause` and `isolate` aimed at `producer-N`, `member-N`, `processor-N`, `consumer-N` or `clients`.

They are the broker faults' client variants (`kchaos.model.faults.process`, `network`), so this module holds
only the kinds they record. The brokers and the log are untouched, so no rule of the log's promises depends
on them; what a crash costs a group is the group checks' to judge.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from kchaos.model.fault_definition import FaultDefinition, FaultKind
from kchaos.model.fault_record import FaultRecord

ORDER = 120
#: Green: a client process dies, not a broker.
CLIENT_CRASH = FaultKind("client-crash", "none", "#2ca02c")
#: Light green: a client process frozen.
CLIENT_PAUSE = FaultKind("client-pause", "none", "#98df8a")
#: Grey-green: a client cut off from every broker.
CLIENT_PARTITION = FaultKind("client-partition", "none", "#637939")


@dataclass(frozen=True)
class ClientRecord(FaultRecord):
    """What a fault of client processes records: the clients it hit (its `nodes` stay empty: no broker
    was touched), the addresses it cut off, the killed clients brought back as new processes."""

    clients: tuple[str, ...] | None = None
    addresses: Mapping[str, str] | None = None
    restarted: tuple[str, ...] | None = None
    #: What an isolated client's cut records, as a cut of brokers does (`kchaos.model.faults.network`).
    sides: tuple[tuple[int, ...], ...] | None = None
    links: tuple[tuple[int, int], ...] | None = None


DEFINITIONS: tuple[FaultDefinition, ...] = ()
