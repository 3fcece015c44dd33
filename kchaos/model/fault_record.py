"""What a fault's start and stop rows say about it: the typed record the nemesis writes into the row's
`detail` and the judge reads back.

Every fault records its kind (what the oracle reasons about), the nodes it hit, its spec and one sentence;
the schedule adds when it ran beside others, how long its effect took and what healed it. A kind of fault
that has more to say (a power loss's dropped bytes, a clock's shift) records it in a subclass defined beside
its definition (`kchaos.model.faults.<kind>`), each field typed, so a misspelt field is an error where it is
written rather than a key nobody reads. The judge reads only what every fault records (`FaultRecord.read`):
a history written by an older kchaos, or by hand, keeps being judged.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

#: The kind of a start row that records none (a history written elsewhere); no fault has it.
UNKNOWN_KIND = "unknown"
#: What every row carries, even where it is empty.
ALWAYS = ("kind", "nodes", "spec", "description")


@dataclass(frozen=True)
class FaultRecord:
    """What every fault's start and stop rows record."""

    kind: str
    #: The nodes it hit (broker and controller ids); none for a fault of client processes.
    nodes: tuple[int, ...] = ()
    spec: str = ""
    description: str = ""
    #: The faults in force it started beside (`--fault-overlap`, or fired on state beside them).
    beside: tuple[str, ...] | None = None
    #: A fault that fired on state (`when=`): the state, as it was seen when it fired, and the seconds
    #: from its arming until then.
    fired_on: str | None = None
    armed_for_s: float | None = None
    #: Seconds from its start until Kafka reacted as expected (on the stop row).
    effect_seen_after_s: float | None = None
    #: What stopped it, when not its plan: `heal-all` at the end of a run.
    healed_by: str | None = None
    #: The last history row recorded before it began to be lifted, for a scenario that judges what came
    #: before and after (`kchaos.nemesis.txn_attacks`).
    held_through_row: int | None = None
    #: In a replay (`kchaos run --replay`), why it hit other nodes, or chose otherwise (`chose`), than the
    #: original run's fault of its key: what the original hit or chose was no longer valid for its target
    #: (gone, down, held by another fault, or no longer playing the role the target names), or its rows
    #: record no such choice. None when it hit and chose the same, or replays nothing.
    re_chosen: str | None = None
    #: The choices it made beyond its nodes, by name, each what it named (node ids, or client processes by
    #: name): a one-way cut's `receivers`, the replica `add-broker` moved of each partition, the broker
    #: that took each replica a drained broker held, the `clients` a client fault hit. A replay of the run
    #: keeps to them while they are valid (`kchaos.nemesis.pinning`); those made after its start are on its
    #: stop row. None when it made none, or was written before kchaos recorded them.
    chose: Mapping[str, tuple[int | str, ...]] | None = None

    def to_detail(self) -> dict[str, Any]:
        """The row's `detail`: every field that says something (a None is left out), tuples as lists."""
        detail: dict[str, Any] = {}
        for field in fields(self):
            value = getattr(self, field.name)
            if value is None and field.name not in ALWAYS:
                continue
            if isinstance(value, Mapping):
                value = {key: list(item) if isinstance(item, tuple) else item for key, item in value.items()}
            detail[field.name] = list(value) if isinstance(value, tuple) else value
        return detail

    @classmethod
    def read(cls, detail: Mapping[str, Any]) -> FaultRecord:
        """What every fault records, from a row's parsed `detail`; what is missing or malformed reads as
        unknown or empty rather than failing the check of a history written elsewhere."""
        nodes = detail.get("nodes") or []
        beside = detail.get("beside")
        re_chosen = detail.get("re_chosen")
        chose = detail.get("chose")
        return cls(
            kind=str(detail.get("kind") or UNKNOWN_KIND),
            nodes=tuple(nodes) if isinstance(nodes, list) else (nodes,),
            spec=str(detail.get("spec") or ""),
            description=str(detail.get("description") or ""),
            beside=tuple(map(str, beside)) if isinstance(beside, list) else None,
            re_chosen=str(re_chosen) if re_chosen else None,
            chose=(
                {str(name): tuple(named) for name, named in chose.items() if isinstance(named, list)}
                if isinstance(chose, dict)
                else None
            ),
        )
