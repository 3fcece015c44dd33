"""Client processes as fault targets: one client by its process name (`producer-N`, a group's `member-N`,
an eos run's `processor-N`) and `clients` (every client process of the run).

A client that is a process of its own (`--client java` or `librdkafka-process`) can crash, freeze or lose
the network like an application's client, so the nemesis can hit it as it hits a broker. The brokers and
their logs are untouched by such a fault: the fault table gives each one a kind of its own
(`client-crash`, `client-pause`, `client-partition`) that the guarantee oracle treats as nothing, so a
client fault never excuses what the cluster lost. Pure vocabulary, validated before anything starts:
`--client librdkafka`'s clients are threads of the harness, not processes, so they cannot be targets. The
plain readers (`consumer-N`) of the sends and txn workloads are processes of `--client librdkafka-process`
(kchaos/workloads/processes/rdkafka/reader.py) and targets there; with `--client java` they are still
librdkafka threads of the harness, so refused.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from kchaos.model.client_names import JAVA, LIBRDKAFKA_PROCESS, PROCESS_CLIENTS
from kchaos.model.events import consumer_process, group_process, processor_process, producer_process
from kchaos.model.workload_names import EOS, GROUP, SENDS, TXN

#: Every client process of the run.
CLIENTS_TARGET = "clients"
#: One client process, by its process name in the history.
CLIENT_TARGET = re.compile(r"(producer|member|processor)-(0|[1-9][0-9]*)")
#: A plain reader's name (`consumer-N` of the sends and txn workloads).
READER_TARGET = re.compile(r"consumer-(0|[1-9][0-9]*)")
#: How each workload with group members names them (`kchaos.model.events`).
MEMBER_NAMES: dict[str, Callable[[int], str]] = {GROUP: group_process, EOS: processor_process}
#: The workloads whose readers are plain assigned readers, `consumer-N`.
READER_WORKLOADS = (SENDS, TXN)
#: The clients whose plain readers are processes (the threads client's are threads of the harness).
READER_PROCESS_CLIENTS = (LIBRDKAFKA_PROCESS, JAVA)


def is_client_target(target: str) -> bool:
    """`target` names client processes rather than brokers (a reader too, refused where it is none)."""
    return (
        target == CLIENTS_TARGET
        or CLIENT_TARGET.fullmatch(target) is not None
        or READER_TARGET.fullmatch(target) is not None
    )


def reader_names(workload: str, client: str) -> Callable[[int], str] | None:
    """How a run of `workload` with `client` names its readers that are processes: its group members, its
    plain readers where they are processes, else None (no reader is a process)."""
    named = MEMBER_NAMES.get(workload)
    if named is None and workload in READER_WORKLOADS and client in READER_PROCESS_CLIENTS:
        return consumer_process
    return named


def run_client_names(
    producers: int, workload: str = "", members: int = 0, client: str = ""
) -> tuple[str, ...]:
    """Every client process a process-client run has: its producers, then its readers that are processes
    (`members` of them: group members, eos processors, or `client`'s plain readers)."""
    named = reader_names(workload, client)
    found = tuple(named(n) for n in range(members)) if named is not None else ()
    return (*(producer_process(n) for n in range(producers)), *found)


def client_names(
    target: str, producers: int, workload: str = "", members: int = 0, client: str = ""
) -> tuple[str, ...]:
    """The process names a client target means in a run of `producers` producers and `members` readers
    (group members, eos processors, or the plain readers of a `client` whose readers are processes)."""
    every = run_client_names(producers, workload, members, client)
    return every if target == CLIENTS_TARGET else tuple(name for name in every if name == target)


def client_target_refusal(
    spec: str, target: str, client: str, producers: int, workload: str = "", members: int = 0
) -> str | None:
    """Why a run of `--client client` with `producers` producers (and `members` group members of
    `workload`) cannot take `spec`'s client `target`, with the fix; None when it can."""
    reader = READER_TARGET.fullmatch(target) is not None
    if reader and client not in READER_PROCESS_CLIENTS:
        return (
            f"{spec}: target={target} is a reader of --workload sends or txn, and --client {client}'s "
            "readers are librdkafka threads of the harness, not processes a fault can hit; use --client "
            "librdkafka-process or --client java (their readers are processes), or hit a group member with "
            "--workload group (target=member-N) or an eos processor with --workload eos (target=processor-N)"
        )
    if reader and workload not in READER_WORKLOADS:
        member = MEMBER_NAMES[workload]
        return (
            f"{spec}: target={target} is a reader of --workload sends or txn, and --workload {workload}'s "
            f"readers are {member(0).rpartition('-')[0]}s: name {member(0)} to {member(members - 1)}, or "
            "use --workload sends or txn"
        )
    if client not in PROCESS_CLIENTS:
        return (
            f"{spec}: target={target} is a client process, and --client {client}'s clients are threads of "
            "the harness, not processes a fault can hit; use --client java or --client librdkafka-process "
            "(each client a process of its own), or target brokers"
        )
    if client_names(target, producers, workload, members, client):
        return None
    kind = target.rpartition("-")[0]
    if kind == "producer":
        return (
            f"{spec}: --producers {producers} runs {producer_process(0)} to "
            f"{producer_process(producers - 1)}; name one of them, use target={CLIENTS_TARGET}, or raise "
            "--producers"
        )
    named = reader_names(workload, client)
    if named is None or named(0).rpartition("-")[0] != kind:
        which = "--workload group" if kind == "member" else "--workload eos"
        return (
            f"{spec}: target={target} is a group member of {which}, and --workload {workload} runs no "
            f"{kind}s; use {which}, or name a producer-N or {CLIENTS_TARGET}"
        )
    if members == 0:
        return f"{spec}: --consumers 0 runs no {kind}; raise --consumers, or name a producer-N or clients"
    return (
        f"{spec}: --consumers {members} runs {named(0)} to {named(members - 1)}; name one of them, use "
        f"target={CLIENTS_TARGET}, or raise --consumers"
    )
