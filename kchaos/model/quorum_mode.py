"""How a KRaft controller quorum is formed, static or dynamic (KIP-853), and what each release allows.

A static quorum lists its voters in every node's `controller.quorum.voters`; a dynamic one is formatted with
`--initial-controllers` and changes its voters while it runs (`kafka-metadata-quorum add-controller` and
`remove-controller`), from Kafka 3.9. A static quorum can be made dynamic (`kafka-features upgrade --feature
kraft.version=1`) only from Kafka 4.1: on 3.9 and 4.0 the quorum faults need one formatted dynamic.

Pure data and checks (no Docker, no Kafka): the configuration refuses what a release cannot do before
anything starts.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from kchaos.model.releases import Release

QuorumMode = Literal["static", "dynamic"]

#: The first release whose quorums can be formatted dynamic (KIP-853).
DYNAMIC_SINCE = (3, 9)
#: The first release that turns a static quorum dynamic (KAFKA-16538 in 4.1's upgrade notes).
UPGRADE_SINCE = (4, 1)
#: The faults that change the quorum's voters, so need it dynamic, or made so.
VOTER_FAULTS = frozenset({"add-voter", "remove-voter"})


def quorum_refusal(
    quorum: QuorumMode, metadata: str, kafka_version: str, faults: Iterable[str]
) -> str | None:
    """Why a run with this `quorum` and these fault names cannot run on `kafka_version`, with the fix;
    None when it can. `faults` are fault names (a spec's options are ignored)."""
    release = Release.parse(kafka_version).parts[:2]
    if quorum == "dynamic" and metadata != "kraft":
        return "quorum: --quorum dynamic forms a KRaft controller quorum, and --metadata zookeeper has none"
    if quorum == "dynamic" and release < DYNAMIC_SINCE:
        return (
            f"quorum: --quorum dynamic needs Kafka 3.9 or later (KIP-853); --kafka-version {kafka_version} "
            "is older: leave --quorum out or use a release from 3.9 on"
        )
    changing = sorted({name.partition(":")[0] for name in faults} & VOTER_FAULTS)
    # Before 3.9 the faults themselves are refused (the fault table's `since`), in their own words.
    if changing and metadata == "kraft" and quorum == "static" and DYNAMIC_SINCE <= release < UPGRADE_SINCE:
        return (
            f"nemesis: {', '.join(changing)} changes the quorum's voters, which needs a dynamic quorum, and "
            f"Kafka {kafka_version} cannot make a static one dynamic (Kafka 4.1 can): pass --quorum dynamic"
        )
    return None
