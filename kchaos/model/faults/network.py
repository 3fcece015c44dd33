"""Faults that cut links (iptables in each node's namespace): a node cut off (`isolate`), followers from
their leader (`cut-replication`), the cluster split (`halves`, `ring`, `bridge`), clients from a node
(`cut-clients`), or one direction of a link (`one-way`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from kchaos.model.fault_definition import FaultDefinition, FaultKind, FaultSpec, RunShape
from kchaos.model.fault_options import Choice, SpecError
from kchaos.model.fault_record import FaultRecord
from kchaos.model.fault_targets import Target, node_ids
from kchaos.model.faults.clients import CLIENT_PARTITION

ORDER = 20
#: Blue: links cut.
PARTITION = FaultKind("partition", "failover", "#1f77b4")

#: What a one-way fault drops: every packet, or only the senders' answers on their inter-broker listener
#: (records a follower fetched, a controller request's acknowledgement) while everything else still flows.
ONE_WAY_PORTS = ("any", "inter-broker")

#: Faults that split the cluster and the fewest brokers each needs to: `halves` two sides, `ring` and
#: `bridge` three nodes (kchaos.nemesis.network skips them on fewer, so the run would report faults that
#: never ran).
SPLITS_NEED = {"halves": 2, "ring": 3, "bridge": 3}


def check_split(spec: FaultSpec, shape: RunShape) -> None:
    """Refuses a split of fewer brokers than it needs."""
    fewest = SPLITS_NEED[spec.name]
    if shape.brokers < fewest:
        raise SpecError(
            f"{spec}: needs at least {fewest} nodes, the cluster has {shape.brokers}; use --brokers {fewest} "
            "or more, or another fault"
        )


def check_directions(options: Mapping[str, str]) -> None:
    """Refuses a one-way cut whose `from` and `to` are the same node or role: a node's link to itself is
    no link, and the fault would cut nothing while the run reported it held."""
    source, sink = options["from"], options["to"]
    shared = set(node_ids(source)) & set(node_ids(sink))
    if (source == sink and source != "random") or shared:
        same = "+".join(map(str, sorted(shared))) if shared else source
        raise SpecError(
            f"one-way: from={source} and to={sink} name the same node ({same}), and a node has no link to "
            "itself to cut; name two different ones, e.g. one-way:from=leader:to=followers"
        )


@dataclass(frozen=True)
class CutRecord(FaultRecord):
    """What a cut records: the sides it split the nodes into and every directed link it cut."""

    sides: tuple[tuple[int, ...], ...] | None = None
    links: tuple[tuple[int, int], ...] | None = None


DEFINITIONS = (
    FaultDefinition(
        "isolate", PARTITION, (Target("target", "leader"),), client_kind=CLIENT_PARTITION, overlaps=True
    ),
    FaultDefinition("cut-replication", PARTITION),
    *(FaultDefinition(name, PARTITION, check_shape=check_split) for name in SPLITS_NEED),
    FaultDefinition("cut-clients", PARTITION, (Target("target", "leader"),), overlaps=True),
    FaultDefinition(
        "one-way",
        PARTITION,
        (
            Target("from", "leader"),
            Target("to", "followers"),
            Choice(
                "port",
                "any",
                ONE_WAY_PORTS,
                "inter-broker drops only what the senders answer on their inter-broker listener",
            ),
        ),
        check_options=check_directions,
    ),
)
