"""Every named scenario kchaos has: a crafted fault sequence a user runs by name (`kchaos run --scenario`).

A scenario drives its faults step by step, each step waiting for Kafka's reaction (an ISR shrink, a new
leader), instead of a timed schedule. This table owns the names and says, for `kchaos scenario list` and
docs/scenarios.md, what each provokes, on which releases it is expected to lose acknowledged writes, and
the KIP it is about. Its settings are the run configuration the sequence is built for; flags given on the
command line (or keywords in a matrix or `chaos_run`) override them.

Pure data (no Docker, no Kafka), like the fault table: the configuration validates a scenario name and
takes its settings before anything starts. `kchaos.nemesis.scenarios` holds the sequences themselves.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kchaos.model.client_names import DEFAULT_CLIENT, LIBRDKAFKA, PROCESS_CLIENTS
from kchaos.model.workload_names import IN_A_GROUP, SENDS


@dataclass(frozen=True)
class ScenarioDefinition:
    """One named scenario: what it provokes, where it loses data, its KIP, the settings it needs."""

    name: str
    provokes: str
    loses_on: str
    kip: str
    settings: Mapping[str, Any]
    #: Why the scenario cannot run with a `--client`, keyed by the client (with the fix in the words):
    #: e.g. a scenario that freezes a client's process needs a client that is a process of its own.
    refused_clients: Mapping[str, str] = field(default_factory=dict)
    #: Its sequence holds the readers back for a while (`readers.hold()`), which Java group members and
    #: eos processors, processes of their own, cannot be yet.
    holds_readers: bool = False


#: The settings of the two last-replica-standing scenarios: the ISR shrinks to the leader alone, which
#: min.insync.replicas=1 lets acknowledge alone, then the leader dies.
_LAST_REPLICA: dict[str, Any] = {
    "nemesis": ("cut-replication", "kill"),
    "acks": "all", "min_insync_replicas": 1, "replication_factor": 3, "unclean_leader_election": False,
    "duration": 30.0, "broker_config": {"replica.lag.time.max.ms": "8000"},
    # Writes to the partition wait out the offline window; a timeout would end the idempotent epoch.
    "message_timeout_ms": 60000,
}  # fmt: skip

_UNCLEAN_AFTER_SHRINK = {**_LAST_REPLICA, "nemesis": ("cut-replication", "kill", "unclean-election")}

_ACKS_1 = {"nemesis": ("isolate",), "acks": "1", "replication_factor": 3, "duration": 30.0}

_LAST_REPLICA_POWER_LOSS: dict[str, Any] = {
    "nemesis": ("cut-replication", "power-loss"),
    "acks": "all", "min_insync_replicas": 2, "replication_factor": 3, "unclean_leader_election": False,
    "duration": 30.0, "consumers": 0, "broker_config": {"replica.lag.time.max.ms": "8000"},
    "message_timeout_ms": 90000,
}  # fmt: skip

_KIP_101: dict[str, Any] = {
    "nemesis": ("one-way", "kill"),
    "acks": "all", "min_insync_replicas": 2, "replication_factor": 3, "partitions": 3,
    "unclean_leader_election": False, "consumers": 0, "duration": 30.0,
    # A record every half second per partition (two producers in step: a pair a second), and followers
    # whose fetch waits up to 5 s for data: after each acknowledgement the follower's high watermark stays
    # a round behind until the next pair arrives, a second in which the leader's kill lands (at 200/s the
    # window was the 20 ms between two records, and a fresh-clone CI run's kill missed it).
    "rate": 6.0, "message_timeout_ms": 120000,
    # The follower left behind must stay in the ISR until it is elected. A killed node answers nothing, so
    # the controller's request to it, its reconnection and the followers' fetches from it each hang for
    # their timeout (30 s by default: 49 s between the second kill and the last replica leading on
    # 0.10.2.2); shorter ones move the same elections along sooner (the fetch's must outlast its wait).
    "broker_config": {"replica.lag.time.max.ms": "60000", "replica.fetch.wait.max.ms": "5000",
                      "replica.socket.timeout.ms": "8000", "request.timeout.ms": "8000",
                      "controller.socket.timeout.ms": "5000"},
}  # fmt: skip

_KIP_101_DIVERGENCE: dict[str, Any] = {
    "nemesis": ("cut-replication", "kill"),
    "acks": "all", "min_insync_replicas": 1, "replication_factor": 3, "unclean_leader_election": True,
    "consumers": 0, "duration": 30.0, "broker_config": {"replica.lag.time.max.ms": "8000"},
    "message_timeout_ms": 120000,
}  # fmt: skip

#: Two replicas, so both elections are between the same two: the partition's replicas are the only
#: candidates, whatever the third node does.
_KIP_279: dict[str, Any] = {**_KIP_101_DIVERGENCE, "replication_factor": 2}

#: The transaction-protocol attacks (kchaos/nemesis/txn_attacks.py): the transactional workload, its two
#: producers (one attacked, the other shows the cluster moving on), three replicas. Every follower's fetch
#: waits a second (the run writes far less than the minimum bytes in that time), so each replicated append,
#: an EndTxn's among them, is answered about a second after it is made: long enough for the
#: nemesis to see its invoke row and freeze or kill a container while it is outstanding.
_TXN_ATTACK: dict[str, Any] = {
    "workload": "txn", "producers": 2, "replication_factor": 3, "duration": 30.0,
    "broker_config": {"replica.fetch.wait.max.ms": "1000", "replica.fetch.min.bytes": "1048576"},
}  # fmt: skip
#: The marker attack (kchaos/nemesis/marker_attacks.py): one producer, so the marker a leader holds is
#: producer-0's, from the coordinator the attack kills.
_MARKER_ATTACK: dict[str, Any] = {
    "workload": "txn",
    "producers": 1,
    "replication_factor": 3,
    "duration": 30.0,
}
_TXN_LOSES_ON = (
    "transaction protocol 1 (every 3.x cluster; librdkafka, which sends EndTxn v1, on any) if a delayed "
    "EndTxn lands on the next transaction (violation: KAFKA-17754); none seen so far, see docs/scenarios.md"
)
#: librdkafka's in-process transactional producers are threads of the harness: nothing the nemesis can
#: freeze alone; as processes (`--client librdkafka-process`) they can be.
_NO_LIBRDKAFKA_PROCESS = {
    "librdkafka": "librdkafka's transactional producers are threads inside the harness process with --client "
    "librdkafka, so there is no client process to pause; use --client librdkafka-process (librdkafka, each "
    "producer a process) or --client java, or txn-coordinator-pause / txn-coordinator-failover, which "
    "attack the coordinator"
}

SCENARIOS: dict[str, ScenarioDefinition] = {
    scenario.name: scenario
    for scenario in (
        ScenarioDefinition(
            "acks-1-failover",
            "the leader is cut off from the other nodes while clients still reach it; with acks=1 it "
            "acknowledges writes its successor never gets",
            "every release (permitted: acks=1)",
            "-",
            _ACKS_1,
        ),
        ScenarioDefinition(
            "unclean-after-isr-shrink",
            "the ISR shrinks to the leader alone, the leader dies, and unclean election elects an "
            "out-of-sync follower",
            "every release (permitted: unclean election)",
            "-",
            _UNCLEAN_AFTER_SHRINK,
            holds_readers=True,
        ),
        ScenarioDefinition(
            "last-replica-standing",
            "the ISR shrinks to the leader alone, the leader dies; with unclean election off the "
            "partition waits for it",
            "none (the partition is unavailable instead)",
            "-",
            _LAST_REPLICA,
        ),
        ScenarioDefinition(
            "last-replica-power-loss",
            "the ISR shrinks to the leader alone (min.insync.replicas=2), then that leader loses power",
            "releases without Eligible Leader Replicas, before 4.1 (permitted: every in-sync replica lost "
            "power)",
            "KIP-966",
            _LAST_REPLICA_POWER_LOSS,
        ),
        ScenarioDefinition(
            "kip-101-hw-truncation",
            "a follower told to follow a new leader truncates to its own high watermark, a fetch round "
            "behind the leader's, and is elected before it fetches the truncated records back",
            "releases before 0.11 (violation: an in-sync replica was alive)",
            "KIP-101",
            _KIP_101,
        ),
        ScenarioDefinition(
            "kip-101-divergence",
            "with unclean election on, an out-of-sync follower leads and writes where the old leader had "
            "other records; the old leader returns and truncates only to its own high watermark",
            "every release (permitted: unclean election); replicas diverge before 0.11 (violation)",
            "KIP-101",
            _KIP_101_DIVERGENCE,
        ),
        ScenarioDefinition(
            "kip-279-fast-failover",
            "two fast unclean elections between two replicas; the follower back last asks for an epoch its "
            "leader never had and, before 2.0, keeps records the leader replaced",
            "every release (permitted: unclean election); before 2.0 the follower keeps records its "
            "leader replaced and never rejoins (the run stops at recovery)",
            "KIP-279",
            _KIP_279,
        ),
        ScenarioDefinition(
            "txn-client-pause",
            "a transactional producer's process is frozen while its commit or abort (EndTxn) is outstanding, "
            "then thawed into its next transaction; ten attempts, each recorded with whether it caught one",
            _TXN_LOSES_ON,
            "KIP-890",
            {**_TXN_ATTACK, "client": "java"},
            refused_clients=_NO_LIBRDKAFKA_PROCESS,
        ),
        ScenarioDefinition(
            "txn-coordinator-pause",
            "a transactional producer's coordinator is frozen while its EndTxn is outstanding, until the "
            "client times out and asks again; the stale EndTxn is handled on thaw; ten attempts",
            _TXN_LOSES_ON,
            "KIP-890",
            _TXN_ATTACK,
        ),
        ScenarioDefinition(
            "txn-coordinator-failover",
            "a transactional producer's coordinator is killed while its EndTxn is outstanding; another "
            "broker takes over the transaction; ten attempts",
            _TXN_LOSES_ON,
            "KIP-890",
            _TXN_ATTACK,
        ),
        ScenarioDefinition(
            "txn-endtxn-held",
            "producer-0's next commit or abort (EndTxn) is held by the request proxy until its application "
            "gave up on it, moved on and its next transaction added its partitions; then it is delivered, "
            "late; ten attempts, each with the broker's answer to the late request",
            _TXN_LOSES_ON,
            "KIP-890",
            _TXN_ATTACK,
        ),
        ScenarioDefinition(
            "txn-add-partitions-held",
            "producer-0's next AddPartitionsToTxn is held until its application moved on and its next "
            "transaction added its partitions; then it is delivered, late; ten attempts",
            _TXN_LOSES_ON,
            "KIP-890",
            _TXN_ATTACK,
        ),
        ScenarioDefinition(
            "txn-produce-held",
            "producer-0's next Produce (to each broker) is held until its transaction ended; then it is "
            "delivered, late: the hanging transaction KIP-890 part 1 (3.6+) closes; ten attempts",
            "releases before 3.6 without KIP-890 part 1's partition verification, if the late records are "
            "appended outside their transaction (a hanging transaction); see docs/scenarios.md",
            "KIP-890",
            _TXN_ATTACK,
        ),
        ScenarioDefinition(
            "txn-markers-held",
            "the coordinator's next WriteTxnMarkers to another partition leader is held, the coordinator is "
            "killed, another broker completes the transaction and producer-0 writes its next one; then the "
            "old coordinator's marker is delivered, late; ten attempts, each with the leader's answer",
            "none seen: each marker carries its coordinator's epoch, which the leader checks (KIP-98); a "
            "late marker taken would end the next transaction early (violation), see docs/scenarios.md",
            "KIP-98",
            _MARKER_ATTACK,
        ),
    )
}

SCENARIO_NAMES = tuple(SCENARIOS)

#: Settings no named scenario reads: its faults are its own sequence, not a plan drawn from these. Given
#: with a scenario they changed nothing, yet `config.json` recorded them (`--nemesis` as faults that never
#: ran), so they are refused.
UNUSED_BY_SCENARIOS = (
    "nemesis", "schedule", "fault_duration", "fault_duration_max", "fault_interval", "fault_interval_max",
    "fault_overlap",
)  # fmt: skip
#: Settings every scenario's sequence is built on: its steps name replicas by their place in the partition's
#: replica list (first, second, last), so with another replication factor a run fails midway or provokes
#: something else than the scenario says.
FIXED_BY_SCENARIOS = ("replication_factor",)


def _flag(field: str) -> str:
    return "--" + field.replace("_", "-")


def scenario_client(name: str, given: Mapping[str, Any]) -> str:
    """The client scenario `name` runs with when `--client` is not `given`: its own, else librdkafka's threads
    when it holds group members or eos processors back (processes cannot be held yet), else the default."""
    scenario = SCENARIOS[name]
    workload = given.get("workload", scenario.settings.get("workload", SENDS))
    if scenario.holds_readers and workload in IN_A_GROUP:
        return str(scenario.settings.get("client", LIBRDKAFKA))
    return str(scenario.settings.get("client", DEFAULT_CLIENT))


def scenario_refusal(name: str, given: Mapping[str, Any], fields: Iterable[str]) -> str | None:
    """Why scenario `name` cannot run with the settings `given`, naming the flags it takes (`fields`: every
    setting there is); None when it can. A fixed setting given at the scenario's own value changes nothing
    and passes."""
    scenario = SCENARIOS[name]
    client = given.get("client", scenario_client(name, given))
    if isinstance(client, str) and client in scenario.refused_clients:
        return f"--scenario {name} --client {client}: {scenario.refused_clients[client]}"
    workload = given.get("workload", scenario.settings.get("workload", SENDS))
    if scenario.holds_readers and client in PROCESS_CLIENTS and workload in IN_A_GROUP:
        return (
            f"--scenario {name} holds its readers back for a while, which group members and eos processors "
            f"that are processes (--client {client}) cannot be yet; with --workload {workload} add --client "
            "librdkafka (threads in the harness), or leave --workload out"
        )
    unused = [field for field in given if field in UNUSED_BY_SCENARIOS]
    fixed = [
        field
        for field in given
        if field in FIXED_BY_SCENARIOS and given[field] != scenario.settings.get(field)
    ]
    if not unused and not fixed:
        return None
    why = []
    if unused:
        why.append(f"it drives its own faults, so {', '.join(map(_flag, unused))} would change nothing")
    if fixed:
        sets = ", ".join(f"{_flag(field)} {scenario.settings[field]}" for field in fixed)
        why.append(f"its steps are built on {sets}")
    taken = [
        _flag(field)
        for field in fields
        if field not in (*UNUSED_BY_SCENARIOS, *FIXED_BY_SCENARIOS, "scenario")
    ]
    return (
        f"--scenario {name}: {'; '.join(why)}: leave {', '.join(map(_flag, [*unused, *fixed]))} out\n"
        f"  the flags a scenario takes: {', '.join(taken)}"
    )


def listing() -> list[tuple[str, str, str, str]]:
    """(name, what it provokes, releases it loses data on, KIP) per scenario, for `kchaos scenario list`."""
    return [(s.name, s.provokes, s.loses_on, s.kip) for s in SCENARIOS.values()]
