"""Faults that hit client processes (`--client java` or `librdkafka-process`) rather than brokers: `kill`,
`pause` and `isolate` aimed at `producer-N`, `member-N`, `processor-N`, `consumer-N` or `clients`.

They are the broker faults' client variants (`kchaos.model.faults.process`, `network`), so this module holds
only the kinds they record. The brokers and the log are untouched, so no rule of the log's promises depends
on them; what a crash costs a group is the group checks' to judge.
"""

from __future__ import annotations

from kchaos.model.fault_definition import FaultDefinition, FaultKind

ORDER = 120
#: Green: a client process dies, not a broker.
CLIENT_CRASH = FaultKind("client-crash", "none", "#2ca02c")
#: Light green: a client process frozen.
CLIENT_PAUSE = FaultKind("client-pause", "none", "#98df8a")
#: Grey-green: a client cut off from every broker.
CLIENT_PARTITION = FaultKind("client-partition", "none", "#637939")

DEFINITIONS: tuple[FaultDefinition, ...] = ()
