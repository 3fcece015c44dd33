"""Faults that hit a node's processes: killed (`kill`), killed with its unsynced writes gone
(`power-loss`), shut down in good order (`stop`, `rolling-restart`) or frozen (`pause`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kchaos.model.fault_definition import FaultDefinition, FaultKind
from kchaos.model.fault_options import Choice
from kchaos.model.fault_record import FaultRecord
from kchaos.model.fault_targets import Target
from kchaos.model.faults.clients import CLIENT_CRASH, CLIENT_PAUSE
from kchaos.model.faults.zookeeper import ZOOKEEPER

ORDER = 10
#: Red: a node dies without warning.
CRASH = FaultKind("crash", "crash", "#d62728")
#: Indigo: a crash that takes the page cache too.
POWER_LOSS = FaultKind("power-loss", "power-loss", "#393b79")
#: Brown: a node shut down in good order.
STOP = FaultKind("stop", "failover", "#8c564b")
#: Purple: a node frozen in place.
PAUSE = FaultKind("pause", "failover", "#9467bd")

#: How `power-loss` leaves a file with unsynced bytes: cut at its synced size, cut inside its first unsynced
#: write, or that write's length kept with its second half zeros (powercut.c says how each is made).
TEARS = ("none", "cut", "zeros")
#: Whether `power-loss` keeps the names created since their directory was last synced, or loses them.
DIRENTS = ("kept", "lost")


@dataclass(frozen=True)
class ProcessRecord(FaultRecord):
    """What a fault of a node's processes records: the partition's leader when it struck, whether ZooKeeper
    let go of a killed broker's registration before it restarted, a power loss's dropped bytes per node,
    a rolling restart's progress."""

    leader_before: int | None = None
    registrations_expired: bool | None = None
    dropped: Mapping[str, Mapping[str, Any]] | None = None
    restarted: tuple[int, ...] | None = None
    error: str | None = None


DEFINITIONS = (
    FaultDefinition(
        "kill",
        CRASH,
        (Target("target", "leader"),),
        zookeeper_kind=ZOOKEEPER,
        client_kind=CLIENT_CRASH,
        overlaps=True,
    ),
    FaultDefinition(
        "power-loss",
        POWER_LOSS,
        (
            Target("target", "all"),
            Choice(
                "tear",
                "none",
                TEARS,
                "a file with unsynced bytes is cut at its synced size, cut inside its first unsynced write, "
                "or keeps that write's length with its second half zeros",
            ),
            Choice(
                "dirents",
                "kept",
                DIRENTS,
                "lost: names created since their directory was last synced are gone, as POSIX allows; "
                "renames are kept",
            ),
        ),
        needs_kchaos_image=True,
    ),
    FaultDefinition("stop", STOP, (Target("target", "leader"),), zookeeper_kind=ZOOKEEPER, overlaps=True),
    FaultDefinition(
        "pause",
        PAUSE,
        (Target("target", "leader"),),
        zookeeper_kind=ZOOKEEPER,
        client_kind=CLIENT_PAUSE,
        overlaps=True,
    ),
    FaultDefinition("rolling-restart", STOP, (Target("target", "all"),)),
)
