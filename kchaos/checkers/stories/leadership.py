"""Who led a partition when a record was acknowledged, and in which ISR, from whichever source shows it.

Three parties say who leads, each with its own lag. The leader watcher asks the cluster's metadata about
once a second and records changes only, so its last row can be many seconds old, and a dead leader stays
"the leader" in it until some broker answers otherwise. The brokers log elections, epochs and ISR changes
as they make them (`kchaos.checkers.stories.broker_log`), and a record's batch carries the leader epoch it
was appended in (the replica dump), which names its leader exactly once the brokers' lines say who led that
epoch. A story may only assert what these show, so the leader is taken from the batch's epoch where the
logs name that epoch's leader, else from the latest source at or before the acknowledgement; the watcher's
view counts only when nothing that could have changed it (a fault on its leader, a broker's line naming
another leader) lies between its row and the acknowledgement, and when it is stale the story says so.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kchaos.checkers.stories.broker_log import partition_lines
from kchaos.checkers.stories.evidence import RunEvidence
from kchaos.checkers.stories.timeline import at, leader_rows, leadership, node_name
from kchaos.model.events import NEMESIS_PROCESS, START
from kchaos.model.history_schema import parse_detail


@dataclass(frozen=True)
class Sighting:
    """One source's word on the partition at `wall_time`: its leader (None: it does not say; -1: none),
    leader epoch and ISR (None: not said), and who said it (`broker` None for the leader watcher)."""

    wall_time: float
    leader: int | None
    epoch: int | None
    isr: tuple[int, ...] | None
    broker: int | None

    def source(self, evidence: RunEvidence) -> str:
        if self.broker is None:
            return f"the leader watcher saw it since {at(evidence, self.wall_time)}"
        return f"broker {self.broker}'s log says at {at(evidence, self.wall_time)}"


def sightings(evidence: RunEvidence, topic: str, partition: int) -> list[Sighting]:
    """Every source's word on who led `topic`-`partition`, in time order: the brokers' lines that name a
    leader or an ISR, and the leader watcher's rows."""
    seen = [
        Sighting(row["wall_time"], *_watched(row), None) for row in leader_rows(evidence, topic, partition)
    ]
    for broker, text in sorted((evidence.broker_logs or {}).items()):
        for line in partition_lines(broker, text, topic, partition):
            said = line.said()
            if said is not None and (said.leader is not None or said.isr is not None):
                seen.append(Sighting(line.wall_time, said.leader, said.epoch, said.isr, broker))
    return sorted(seen, key=lambda sighting: sighting.wall_time)


def _watched(row: Mapping[str, Any]) -> tuple[int, None, tuple[int, ...]]:
    leader, isr = leadership(row)
    return leader, None, tuple(sorted(isr))


def log_ends(evidence: RunEvidence, topic: str, partition: int) -> list[tuple[int, float, int]]:
    """Where each broker's own lines say its log of `topic`-`partition` ended, and when: (broker, time,
    log end offset)."""
    ends = []
    for broker, text in sorted((evidence.broker_logs or {}).items()):
        for line in partition_lines(broker, text, topic, partition):
            said = line.said()
            if said is not None and said.log_end is not None:
                ends.append((broker, line.wall_time, said.log_end))
    return ends


@dataclass(frozen=True)
class Led:
    """Who led at a moment and in which ISR, with the sources that say so (None: unknown), and why the
    leader watcher's view was not taken, if it was stale."""

    leader: Sighting | None
    isr: Sighting | None
    epoch: int | None  # the batch's leader epoch the leader was taken from, if it was
    stale: str | None

    def holders(self, acks_all: bool) -> set[int]:
        """The brokers known to hold the record once it was acknowledged: its leader, and with acks=all the
        ISR the leader waited for."""
        held = {self.leader.leader} if self.leader is not None and self.leader.leader is not None else set()
        if acks_all and self.isr is not None and self.isr.isr is not None:
            held |= set(self.isr.isr)
        return {node for node in held if node >= 0}

    def said(self, evidence: RunEvidence) -> str:
        """`leader 3 (ISR [1, 3]), as broker 3's log says at +29.80s`, or what is unknown and why."""
        if self.leader is None or self.leader.leader is None:
            why = f"; {self.stale}" if self.stale else ""
            return (
                f"an unknown leader (no broker's line or fresh leader watcher row names one before it{why})"
            )
        isr = list(self.isr.isr) if self.isr is not None and self.isr.isr is not None else None
        shown = f"leader {node_name(self.leader.leader)} (ISR {isr if isr is not None else 'unknown'})"
        whose = f"the leader of its batch's leader epoch {self.epoch}" if self.epoch is not None else ""
        if self.isr is None or self.isr == self.leader:
            return f"{shown}{', ' + whose if whose else ''}, as {self.leader.source(evidence)}"
        leader, isr_source = self.leader.source(evidence), self.isr.source(evidence)
        return f"{shown}: {whose or 'the leader'} as {leader}; the ISR as {isr_source}"


def _stale(
    evidence: RunEvidence, watched: Sighting, later: Sequence[Sighting], wall_time: float
) -> str | None:
    """Why the watcher's row `watched` no longer held at `wall_time`, if something between says so: a fault
    that began on its leader, or a broker's line naming another leader."""
    reasons: list[tuple[float, str]] = []
    for row in evidence.cluster_rows:
        if row["process"] != NEMESIS_PROCESS or row["value"] != START:
            continue
        if not watched.wall_time < row["wall_time"] <= wall_time:
            continue
        nodes = parse_detail(row.get("detail")).get("nodes")
        if isinstance(nodes, list) and watched.leader in nodes:
            reasons.append(
                (
                    row["wall_time"],
                    f"fault {row['key']} at {at(evidence, row['wall_time'])} hit node {watched.leader}",
                )
            )
    for sighting in later:
        if sighting.broker is not None and sighting.leader not in (None, watched.leader):
            said = f"broker {sighting.broker}'s log at {at(evidence, sighting.wall_time)}"
            reasons.append((sighting.wall_time, f"{said} names leader {node_name(sighting.leader)}"))
    if not reasons:
        return None
    isr = list(watched.isr or ())
    leader = node_name(-1 if watched.leader is None else watched.leader)
    return (
        f"the leader watcher last saw leader {leader} (ISR {isr}) at "
        f"{at(evidence, watched.wall_time)}, before {min(reasons)[1]}: stale"
    )


def _news(seen: Sequence[Sighting]) -> list[Sighting]:
    """`seen` without the lines that name an older leader epoch than one named before them: a broker coming
    back logs the epoch it rejoins, which says nothing of a later one."""
    newest = -1
    kept = []
    for sighting in seen:
        if sighting.epoch is not None and sighting.epoch < newest:
            continue
        newest = max(newest, sighting.epoch if sighting.epoch is not None else -1)
        kept.append(sighting)
    return kept


def led_at(
    evidence: RunEvidence, seen: Sequence[Sighting], wall_time: float, batch_epoch: int | None = None
) -> Led:
    """Who led at `wall_time` (an acknowledgement's time) and in which ISR, from the sightings `seen`: the
    leader the brokers' lines name for `batch_epoch` (the record's batch's leader epoch) where they name
    one, else the latest source at or before it; the leader watcher's row only where it is not stale."""
    before = [sighting for sighting in seen if sighting.wall_time <= wall_time]
    watched = [sighting for sighting in before if sighting.broker is None]
    stale = None
    if watched:
        later = [sighting for sighting in before if sighting.wall_time > watched[-1].wall_time]
        stale = _stale(evidence, watched[-1], later, wall_time)
    usable = [sighting for sighting in before if sighting.broker is not None]
    if watched and stale is None:
        usable = sorted([*usable, watched[-1]], key=lambda sighting: sighting.wall_time)
    usable = _news(usable)
    named = [sighting for sighting in seen if batch_epoch is not None and sighting.broker is not None
             and sighting.epoch == batch_epoch and sighting.leader is not None]  # fmt: skip
    leaders = [sighting for sighting in usable if sighting.leader is not None]
    leader = named[0] if named else (leaders[-1] if leaders else None)
    isrs = [sighting for sighting in usable if sighting.isr is not None]
    return Led(leader, isrs[-1] if isrs else None, batch_epoch if named else None, stale)
