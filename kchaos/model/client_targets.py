"""Client processes as fault targets: `producer-N` (one client, by its process name) and `clients` (every
client process of the run).

A client that is a process of its own (`--client java`) can crash, freeze or lose the network like an
application's client, so the nemesis can hit it as it hits a broker. The brokers and their logs are
untouched by such a fault: the fault table gives each one a kind of its own (`client-crash`,
`client-pause`, `client-partition`) that the guarantee oracle treats as nothing, so a client fault never
excuses what the cluster lost. Pure vocabulary, validated before anything starts: `--client librdkafka`'s
producers are threads of the harness, not processes, so they cannot be targets; `--client
librdkafka-process`'s can.
"""

from __future__ import annotations

import re

from kchaos.model.client_names import PROCESS_CLIENTS
from kchaos.model.events import producer_process

#: Every client process of the run.
CLIENTS_TARGET = "clients"
#: One client process, by its process name in the history.
CLIENT_TARGET = re.compile(r"producer-(0|[1-9][0-9]*)")


def is_client_target(target: str) -> bool:
    """`target` names client processes rather than brokers."""
    return target == CLIENTS_TARGET or CLIENT_TARGET.fullmatch(target) is not None


def client_names(target: str, producers: int) -> tuple[str, ...]:
    """The process names a client target means in a run of `producers` producers (none outside it)."""
    every = tuple(producer_process(n) for n in range(producers))
    return every if target == CLIENTS_TARGET else tuple(name for name in every if name == target)


def client_target_refusal(spec: str, target: str, client: str, producers: int) -> str | None:
    """Why a run of `--client client` with `producers` producers cannot take `spec`'s client `target`,
    with the fix; None when it can."""
    if client not in PROCESS_CLIENTS:
        return (
            f"{spec}: target={target} is a client process, and --client {client}'s producers are threads of "
            "the harness, not processes a fault can hit; use --client java or --client librdkafka-process "
            "(each producer a process of its own), or target brokers"
        )
    if not client_names(target, producers):
        return (
            f"{spec}: --producers {producers} runs {producer_process(0)} to "
            f"{producer_process(producers - 1)}; name one of them, use target={CLIENTS_TARGET}, or raise "
            "--producers"
        )
    return None
