"""Faults of the run's client processes (`--client java` or `librdkafka-process`): a producer, group member,
eos processor or (`librdkafka-process`) reader crashed, frozen, or cut off from every broker, by
`target=producer-N`, `member-N`, `processor-N` or `consumer-N` (one client) or `target=clients` (every one).

The brokers and their logs are untouched, so each records a kind of its own (`client-crash`,
`client-pause`, `client-partition`, kchaos/model/faults/clients.py) that excuses nothing the cluster
lost: what a client had acknowledged must still be read. The targets are found through the harness, by the
labels every client container carries (`kchaos.harness.client_container.run_clients`), not through the
workload that started them: the nemesis hits a process as an operator's tooling would, knowing only its
name.

- `kill`: SIGKILL of the client's container, without warning. What the client had in flight is what its
  recorder calls indeterminate (`info`). Nothing is undone at stop: as an application's supervisor restarts
  a crashed client, the workload restarts a client it sees end while the run goes on
  (`kchaos.workloads.processes.client_supervisor`), a new process under the same name; the fault is healed
  once every killed client runs again.
- `pause`: the cgroup freezer (`docker pause`) at start, thawed at stop: sockets stay open, nothing moves,
  as in a stop-the-world pause of the client's JVM.
- `isolate`: every broker drops packets to and from the client's address, by rules in the brokers'
  sidecars, so the client's container needs no privilege; healing deletes exactly those rules.
"""

from __future__ import annotations

import logging
from typing import Any, ClassVar

import docker.errors

from kchaos.harness.client_container import ClientContainer, run_clients
from kchaos.model.client_targets import CLIENTS_TARGET
from kchaos.model.fault_record import FaultRecord
from kchaos.model.faults.clients import ClientRecord
from kchaos.nemesis.fault import Carriers, Fault, FaultUnsupported, TargetUnresolved
from kchaos.nemesis.network import NetworkFault

#: Docker's states of a client container whose process still exists.
ALIVE = ("running", "paused")
#: Attempts at freezing a client: runc's cgroup-v1 freezer gives up (`unable to freeze`, the container left
#: thawed) when a busy machine does not bring every thread of the process to the freezer within its own
#: retries; seen once, a librdkafka worker on two cores that also ran three brokers.
FREEZE_ATTEMPTS = 5

log = logging.getLogger(__name__)


def freeze(client: ClientContainer) -> None:
    """`client.pause()`, asked again while the freezer gives up; its last refusal raised."""
    for attempt in range(1, FREEZE_ATTEMPTS + 1):
        try:
            client.pause()
            return
        except docker.errors.APIError as exc:
            if "unable to freeze" not in str(exc) or attempt == FREEZE_ATTEMPTS:
                raise
            log.warning(
                "%s: the freezer gave up (attempt %d of %d); again", client.name, attempt, FREEZE_ATTEMPTS
            )


class ClientFault(Fault):
    """A fault whose targets are client processes, resolved by name when it starts."""

    RECORD: ClassVar[type[FaultRecord]] = ClientRecord

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        #: The client containers the fault hit, by process name.
        self.clients: dict[str, ClientContainer] = {}

    def resolve_clients(self) -> dict[str, ClientContainer]:
        """The running client processes the target names now; TargetUnresolved if none (a client killed
        and not yet back, or a run whose clients already ended). `target=clients` chooses the ones running
        now, which a replay keeps to (`keep_choice`) while they run and no fault in force holds them; a
        target naming one client chooses nothing."""
        target = self.spec.option("target")
        running = run_clients(self.cluster)
        chosen = running if target == CLIENTS_TARGET else {n: c for n, c in running.items() if n == target}
        if not chosen:
            raise TargetUnresolved(f"{self.key}: no client process {target} runs now")
        if target == CLIENTS_TARGET:
            names = self.keep_choice(
                "clients", sorted(chosen), sorted(running), "the client processes running"
            )
            chosen = {name: running[name] for name in names}
        self.refuse_held(target, sorted(chosen), ", ".join, "clients")
        return dict(sorted(chosen.items()))

    def holds(self) -> tuple[int | str, ...]:
        """The client processes it hit, by name: no broker."""
        return tuple(self.clients)

    def record(self, **extra: Any) -> FaultRecord:
        """The history's row names the clients hit; `nodes` stays empty: no broker was touched."""
        return super().record(clients=sorted(self.clients), **extra)

    def who(self) -> str:
        return ", ".join(self.clients) or self.spec.option("target")


class KillClient(ClientFault):
    """SIGKILL of the client containers; the workload's supervisor brings each back as a new process."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        #: The container each killed client ran in: a client runs again once another container has its name.
        self.killed: dict[str, str] = {}

    def start(self) -> FaultRecord:
        self.clients = self.resolve_clients()
        self.killed = {name: str(client.container.id) for name, client in self.clients.items()}
        self.active = True
        for client in self.clients.values():
            client.kill()
        return self.record()

    def stop(self) -> FaultRecord:
        self.active = False
        return self.record(restarted=self.restarted())

    def restarted(self) -> list[str]:
        """The killed clients that run again, each in a new container under its name."""
        running = run_clients(self.cluster)
        return [
            name for name, old in self.killed.items() if name in running and running[name].container.id != old
        ]

    def effect_reached(self) -> bool:
        return all(client.state() not in ALIVE for client in self.clients.values())

    def healed(self) -> bool:
        return len(self.restarted()) == len(self.killed) and super().healed()

    def describe(self) -> str:
        return f"SIGKILL client {self.who()}; the workload restarts it as a new process under its name"


class PauseClient(ClientFault):
    """Freezes the client containers at start and thaws them at stop."""

    def start(self) -> FaultRecord:
        self.clients = self.resolve_clients()
        self.active = True
        for client in self.clients.values():
            freeze(client)
        return self.record()

    def stop(self) -> FaultRecord:
        if self.active:
            for client in self.clients.values():
                client.unpause()
            self.active = False
        return self.record()

    def effect_reached(self) -> bool:
        return all(client.state() == "paused" for client in self.clients.values())

    def describe(self) -> str:
        return f"pause client {self.who()} (cgroup freezer); thaw on stop"


class IsolateClient(ClientFault, NetworkFault):
    """Cuts the client processes off from every broker, by rules on the brokers' side naming their
    addresses; the brokers still reach each other."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        #: Each client's address on the run's network, as the rules name it.
        self.addresses: dict[str, str] = {}

    def apply(self) -> None:
        network = self.cluster.network
        if network is None:
            raise FaultUnsupported(f"{self.key}: the cluster has no network, so no client to cut off")
        self.clients = self.resolve_clients()
        for name, client in self.clients.items():
            self.addresses[name] = client.ip(network.name)
            for node_id in sorted(self.cluster.nodes):
                self.cuts.cut_address(node_id, self.addresses[name])

    def effect_reached(self) -> bool:
        return True  # Kafka reports nothing about a client it cannot hear; the client's history shows it

    def record(self, **extra: Any) -> FaultRecord:
        return super().record(addresses=dict(self.addresses), **extra)

    def describe(self) -> str:
        return f"cut client {self.who()} off from every broker"


#: The faults this module carries out (`kchaos.model.faults`), by name and aim.
CARRIES_OUT: Carriers = {
    ("kill", "clients"): KillClient,
    ("pause", "clients"): PauseClient,
    ("isolate", "clients"): IsolateClient,
}
