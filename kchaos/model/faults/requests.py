"""Single Kafka requests held, dropped or delayed (`hold`, `drop`, `delay`) while every other request flows,
by the request proxy each node runs in front of its listeners when a run plans one of these.

A process pause freezes a whole client and a cut link stops every request on it; the sequences that break
transaction protocols need one request late and the rest on time (an EndTxn landing after its producer
began the next transaction, KAFKA-17754). The proxy reads only the framing and the request header, so a
fault names the request by its API (`api=EndTxn`), the node that receives it (`target`, resolved as any
fault's target), and who sent it (`sender`: a client, a broker or controller, or either).
"""

from __future__ import annotations

from dataclasses import dataclass

from kchaos.model.client_targets import CLIENT_TARGET, READER_TARGET
from kchaos.model.fault_definition import FaultDefinition, FaultKind
from kchaos.model.fault_options import Aims, Choice, Number, Option, SpecError
from kchaos.model.fault_record import FaultRecord
from kchaos.model.fault_targets import Target
from kchaos.model.kafka_apis import API_KEYS

ORDER = 35
#: Light olive: one request late or lost on a link that otherwise works. No documented guarantee lets a late
#: request lose an acknowledged write, so it excuses nothing.
REQUEST = FaultKind("request", "none", "#dbdb8d")

#: Who sent a request a fault takes: a client (an address that is no node of the cluster), a broker or
#: controller (a node's own address: replication, the controller's calls, transaction markers), or either.
SENDERS = ("any", "clients", "nodes")
#: `client=any`: a request from any client id.
ANY_CLIENT = "any"


@dataclass(frozen=True)
class ClientId(Option):
    """The client whose requests a fault takes, by the `client.id` it sends in every request header: kchaos
    gives each client its process name (`producer-0`), in every client and workload, so one producer's EndTxn
    can be held while the others flow. The proxy compares the header's client id, nothing else."""

    def check(self, fault: str, value: str, aims: Aims) -> None:
        if value == ANY_CLIENT or CLIENT_TARGET.fullmatch(value) or READER_TARGET.fullmatch(value):
            return
        raise SpecError(
            f"{fault}: client={value!r} names no client; give a client's process name as the history names "
            f"it (producer-N, consumer-N, member-N, processor-N) or {ANY_CLIENT}, "
            f"e.g. {fault}:client=producer-0"
        )

    def accepts(self, aims: Aims) -> str:
        return (
            f"{ANY_CLIENT}, or one client by its process name (producer-N, consumer-N, member-N, "
            "processor-N), the client id it sends"
        )


@dataclass(frozen=True)
class RequestRecord(FaultRecord):
    """What a request fault records beyond every fault's: the API it took, from whom, and (stop row) how
    many requests it took in all; 0 means the requests it aimed at never came while it was in force."""

    api: str | None = None
    sender: str | None = None
    #: The one client whose requests it took (`client=`); None for any client.
    client: str | None = None
    taken: int | None = None


def _request_options(default_api: str) -> tuple[Option, ...]:
    return (
        Target("target", "leader"),
        Choice("api", default_api, tuple(API_KEYS), "the Kafka request API it takes, by its protocol name"),
        Choice("sender", "any", SENDERS, "who sent the request: a client, a broker or controller, or either"),
        ClientId("client", ANY_CLIENT),
        Number("count", "1", 0, 100_000, "matching requests it takes; 0 for every one while in force"),
        Number("percent", "100", 1, 100, "percent of the matching requests it takes, drawn from the seed"),
    )


DEFINITIONS = (
    FaultDefinition("hold", REQUEST, _request_options("Produce"), overlaps=True),
    FaultDefinition("drop", REQUEST, _request_options("Produce"), overlaps=True),
    FaultDefinition(
        "delay",
        REQUEST,
        (
            *_request_options("Produce"),
            Number("ms", "2000", 1, 600_000, "milliseconds each request it takes is held before delivery"),
        ),
        overlaps=True,
    ),
)

#: The requests of a transaction beside its records, which a mix's request faults may take in a
#: transactional run (`kchaos.model.fault_mix`), each with the targets where it arrives: a producer's
#: EndTxn and AddPartitionsToTxn at its coordinator, a coordinator's markers at a partition's replicas. A
#: late one of these is what breaks transaction protocol 1 (docs/findings.md, finding 1); the default
#: `api` (Produce) stays drawable beside them, at every target.
TRANSACTION_REQUESTS: dict[str, tuple[str, ...]] = {
    "EndTxn": ("txn-coordinator",),
    "AddPartitionsToTxn": ("txn-coordinator",),
    "WriteTxnMarkers": ("leader", "followers"),
}

#: The faults that need the request proxy on every node from the start of the run.
REQUEST_FAULTS = frozenset(definition.name for definition in DEFINITIONS)
