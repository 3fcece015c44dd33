"""Client processes as fault targets, without a cluster: `producer-N` and `clients` parsed, refused where
the run's clients are no processes or not that one, carried out on the client's container (scripted here)
and judged as client faults, which excuse nothing the cluster lost. The real-cluster counterpart is
tests/cluster/test_client_faults.py."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest

from kchaos.checkers.faults import CRASH_KINDS, DOWN_KINDS, fault_intervals, max_concurrent_crashed
from kchaos.checkers.rules.anomaly_names import LOST_WRITE, UNSEEN
from kchaos.checkers.rules.oracle import FAILOVER_KINDS, GuaranteeContext
from kchaos.checkers.rules.verdicts import judge
from kchaos.harness.client_container import ClientContainer
from kchaos.harness.cluster import KafkaCluster
from kchaos.model.client_targets import client_names, is_client_target
from kchaos.model.config import load_config
from kchaos.model.events import INFO, NEMESIS_PROCESS, PRODUCER_RESTART, START, STOP
from kchaos.model.fault_definition import Shape
from kchaos.model.fault_options import SpecError
from kchaos.model.fault_spec import check_cluster, parse_spec
from kchaos.model.fault_table import FAULTS, KINDS, faults_taking_clients
from kchaos.model.fault_targets import node_ids
from kchaos.model.history import HistoryWriter
from kchaos.model.run_files import RunDir
from kchaos.nemesis import clients
from kchaos.nemesis.carriers import fault_class
from kchaos.nemesis.clients import IsolateClient, KillClient, PauseClient
from kchaos.nemesis.fault import TargetUnresolved
from kchaos.workloads.processes import client_supervisor
from kchaos.workloads.processes.client_process import ClientProcess
from kchaos.workloads.processes.client_supervisor import ClientSupervisor, incarnation_prefix, with_prefix
from kchaos.workloads.processes.java.producer import JavaProducerWorkload
from kchaos.workloads.processes.worker_recorder import WorkerRecorder

CLIENT_FAULTS = {"kill": "client-crash", "pause": "client-pause", "isolate": "client-partition"}


@pytest.mark.parametrize("target", ["producer-0", "producer-11", "clients"])
@pytest.mark.parametrize("fault", list(CLIENT_FAULTS))
def test_a_client_target_is_parsed_and_kinded_as_a_client_fault(fault: str, target: str) -> None:
    spec = parse_spec(f"{fault}:target={target}")
    assert is_client_target(target) and node_ids(target) == ()
    assert FAULTS[fault].kind_for(dict(spec.options)).name == CLIENT_FAULTS[fault]
    cls = fault_class(spec)
    assert cls in (KillClient, PauseClient, IsolateClient)
    made = cls(cast(KafkaCluster, None), "t", 0, f"{fault}#1", spec, random.Random(0))
    assert made.kind == CLIENT_FAULTS[fault]


def test_only_kill_pause_and_isolate_take_client_targets() -> None:
    assert faults_taking_clients() == tuple(CLIENT_FAULTS)
    for text in ("stop:target=producer-0", "latency:target=clients", "one-way:from=producer-0"):
        with pytest.raises(SpecError, match="client process; client processes can be the target of kill"):
            parse_spec(text)
    for text in ("kill:target=producer-01", "pause:target=producer-", "kill:target=member-x"):
        with pytest.raises(SpecError, match="not understood"):
            parse_spec(text)


def test_a_client_target_with_librdkafka_is_refused_naming_java() -> None:
    with pytest.raises(ValueError, match=r"threads of the harness.*use --client java"):
        load_config(client="librdkafka", nemesis="pause:target=producer-0")
    with pytest.raises(SpecError, match="--client librdkafka"):
        check_cluster(parse_spec("kill:target=clients"), Shape(3, 3, client="librdkafka"))


def test_a_producer_the_run_does_not_have_is_refused_naming_the_range() -> None:
    with pytest.raises(ValueError, match=r"--producers 2 runs producer-0 to producer-1"):
        load_config(client="java", producers=2, nemesis="kill:target=producer-2", duration=60)
    config = load_config(client="java", producers=3, nemesis="kill:target=producer-2", duration=60)
    assert config.nemesis == ("kill:target=producer-2",)
    assert client_names("clients", 3) == ("producer-0", "producer-1", "producer-2")


def test_group_members_and_eos_processors_are_client_targets_of_their_own_workload() -> None:
    config = load_config(
        client="java", workload="group", consumers=3, nemesis="pause:target=member-2", duration=60
    )
    assert config.nemesis == ("pause:target=member-2",)
    assert client_names("clients", 1, "group", 3) == ("producer-0", "member-0", "member-1", "member-2")
    assert client_names("processor-1", 1, "eos", 2) == ("processor-1",)
    load_config(client="java", workload="eos", consumers=2, nemesis="isolate:target=processor-1", duration=60)
    with pytest.raises(ValueError, match=r"--consumers 3 runs member-0 to member-2; name one of them"):
        load_config(client="java", workload="group", consumers=3, nemesis="kill:target=member-3", duration=60)
    with pytest.raises(ValueError, match=r"group member of --workload eos, and --workload group runs no"):
        load_config(client="java", workload="group", consumers=3, nemesis="kill:target=processor-0",
                    duration=60)  # fmt: skip
    with pytest.raises(ValueError, match=r"threads of the harness"):
        load_config(
            client="librdkafka", workload="group", consumers=3, nemesis="pause:target=member-0", duration=60
        )


@pytest.mark.parametrize("client", ["librdkafka-process", "java"])
@pytest.mark.parametrize("workload", ["sends", "txn"])
def test_a_plain_reader_is_a_client_target_where_it_is_a_process(workload: str, client: str) -> None:
    """`--client librdkafka-process` and `java` run their readers as processes (kchaos/workloads/
    rdkafka_reader.py, java_reader.py): `consumer-N` below `--consumers` is a target, and `clients` hits
    them too."""
    config = load_config(
        client=client, workload=workload, consumers=2, nemesis="kill:target=consumer-1", duration=60,
    )  # fmt: skip
    assert config.nemesis == ("kill:target=consumer-1",)
    every = client_names("clients", 1, workload, 2, client)
    assert every == ("producer-0", "consumer-0", "consumer-1")
    with pytest.raises(ValueError, match=r"--consumers 2 runs consumer-0 to consumer-1; name one of them"):
        load_config(client=client, workload=workload, consumers=2,
                    nemesis="pause:target=consumer-2", duration=60)  # fmt: skip
    with pytest.raises(ValueError, match=r"--consumers 0 runs no consumer; raise --consumers"):
        load_config(client=client, workload=workload, consumers=0,
                    nemesis="pause:target=consumer-0", duration=60)  # fmt: skip


def test_a_plain_reader_that_is_a_thread_of_the_harness_is_refused_naming_the_process_clients() -> None:
    assert client_names("clients", 1, "sends", 2, "librdkafka") == ("producer-0",)
    with pytest.raises(
        ValueError,
        match=r"target=consumer-0 is a reader .*--client librdkafka's readers are librdkafka threads of the "
        r"harness.*use --client librdkafka-process or --client java",
    ):
        load_config(client="librdkafka", nemesis="pause:target=consumer-0", duration=60)


def test_a_plain_reader_of_a_group_workload_is_refused_naming_its_members() -> None:
    with pytest.raises(ValueError, match=r"--workload group's readers are members: name member-0 to"):
        load_config(client="librdkafka-process", workload="group", consumers=3,
                    nemesis="kill:target=consumer-0", duration=60)  # fmt: skip
    with pytest.raises(ValueError, match=r"--workload group, and --workload sends runs no members"):
        load_config(client="librdkafka-process", consumers=3, nemesis="kill:target=member-0", duration=60)


def test_client_faults_excuse_nothing_the_cluster_lost() -> None:
    kinds = {KINDS[name] for name in CLIENT_FAULTS.values()}
    assert all(kind.treated_as == "none" for kind in kinds)
    names = {kind.name for kind in kinds}
    assert not names & (FAILOVER_KINDS | CRASH_KINDS | DOWN_KINDS)
    # Even acks=1, whose losses a failover excuses: a frozen or dead client is no failover.
    acks_1 = GuaranteeContext(
        acks="1", replication_factor=3, unclean_leader_election=False, idempotence=False,
        fault_kinds=frozenset(names), max_concurrent_crashed=0,
    )  # fmt: skip
    assert judge(LOST_WRITE, 1, acks_1).verdict == "violation"
    assert judge(UNSEEN, 1, replace(acks_1, acks="all")).verdict == "violation"


def test_a_killed_client_counts_as_no_node_down() -> None:
    detail = {
        "kind": "client-crash",
        "nodes": [],
        "clients": ["producer-0"],
        "spec": "kill:target=producer-0",
    }
    rows = [
        {"index": i, "wall_time": float(i), "process": NEMESIS_PROCESS, "f": "kill", "key": "kill#1",
         "value": value, "detail": json.dumps(detail)}
        for i, value in ((1, START), (2, STOP))
    ]  # fmt: skip
    faults = fault_intervals(rows)
    assert [(fault.kind, fault.nodes) for fault in faults] == [("client-crash", ())]
    assert max_concurrent_crashed(faults) == 0


# --- the faults on scripted containers -------------------------------------------------------------------


@dataclass
class FakeContainer:
    id: str
    status: str = "running"
    calls: list[str] = field(default_factory=list)

    def kill(self, signal: str) -> None:
        self.calls.append(signal)
        self.status = "exited"

    def pause(self) -> None:
        self.calls.append("pause")
        self.status = "paused"

    def unpause(self) -> None:
        self.calls.append("unpause")
        self.status = "running"

    def reload(self) -> None:
        pass

    @property
    def attrs(self) -> dict[str, Any]:
        return {"NetworkSettings": {"Networks": {"net": {"IPAddress": f"10.0.0.{self.id}"}}}}


def fake_clients(monkeypatch: pytest.MonkeyPatch, *containers: FakeContainer) -> dict[str, FakeContainer]:
    """`run_clients` answers with the containers (producer-0, producer-1, ...) that have not ended."""
    named = {f"producer-{n}": container for n, container in enumerate(containers)}

    def running(cluster: object) -> dict[str, ClientContainer]:
        return {
            name: ClientContainer(name, cast(Any, container))
            for name, container in named.items()
            if container.status in ("running", "paused")
        }

    monkeypatch.setattr(clients, "run_clients", running)
    return named


class Sidecar:
    """A broker whose sidecar keeps the iptables rules it was told to add and delete."""

    def __init__(self) -> None:
        self.rules: list[list[str]] = []

    def network_exec(self, command: list[str]) -> None:
        rule = command[3:]
        if command[2] == "-A":
            self.rules.append(rule)
        else:
            self.rules.remove(rule)


def cluster(nodes: int = 3) -> Any:
    sidecars = {n: Sidecar() for n in range(1, nodes + 1)}
    return SimpleNamespace(
        nodes=sidecars,
        node=sidecars.__getitem__,
        network=SimpleNamespace(name="net"),
        metadata=SimpleNamespace(is_recovered=lambda topic: True, leader_of=lambda topic, partition: 1),
        run_id="r",
    )


def make(cls: type[Any], text: str, on: Any = None) -> Any:
    return cls(on if on is not None else cluster(), "t", 0, "f#1", parse_spec(text), random.Random(0))


def test_kill_sigkills_the_named_client_and_is_healed_once_a_new_process_has_its_name(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    named = fake_clients(monkeypatch, FakeContainer("1"), FakeContainer("2"))
    fault = make(KillClient, "kill:target=producer-0")
    detail = fault.start().to_detail()
    assert (detail["clients"], detail["nodes"], detail["kind"]) == (["producer-0"], [], "client-crash")
    assert named["producer-0"].calls == ["SIGKILL"] and named["producer-1"].calls == []
    assert fault.effect_reached() and not fault.healed()
    assert fault.stop().to_detail()["restarted"] == []
    named["producer-0"] = FakeContainer("3")  # the supervisor's new process
    assert fault.healed()


def test_a_client_that_does_not_run_is_no_target(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_clients(monkeypatch, FakeContainer("1", status="exited"))
    with pytest.raises(TargetUnresolved, match="no client process producer-0 runs now"):
        make(PauseClient, "pause:target=producer-0").start()


def test_pause_freezes_every_client_and_thaws_them_on_stop(monkeypatch: pytest.MonkeyPatch) -> None:
    named = fake_clients(monkeypatch, FakeContainer("1"), FakeContainer("2"))
    fault = make(PauseClient, "pause:target=clients")
    assert fault.start().to_detail()["clients"] == ["producer-0", "producer-1"]
    assert fault.effect_reached()
    fault.stop()
    fault.stop()  # idempotent
    assert [c.calls for c in named.values()] == [["pause", "unpause"]] * 2


def test_a_client_stopped_while_frozen_is_thawed_to_drain() -> None:
    container = FakeContainer("1", status="paused")
    ClientContainer("producer-0", cast(Any, container)).terminate()
    assert container.calls == ["unpause", "SIGTERM"]


def test_isolate_cuts_the_client_off_every_broker_and_its_heal_leaves_no_rule(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fake_clients(monkeypatch, FakeContainer("7"))
    on = cluster()
    fault = make(IsolateClient, "isolate:target=producer-0", on)
    detail = fault.start().to_detail()
    assert (detail["clients"], detail["addresses"], detail["kind"]) == (
        ["producer-0"], {"producer-0": "10.0.0.7"}, "client-partition",
    )  # fmt: skip
    for node in on.nodes.values():
        assert [rule[:3] for rule in node.rules] == [
            ["INPUT", "-s", "10.0.0.7"],
            ["OUTPUT", "-d", "10.0.0.7"],
        ]
    fault.stop()
    assert all(node.rules == [] for node in on.nodes.values())


# --- the supervisor ------------------------------------------------------------------------------------


def test_a_restarted_client_writes_values_of_its_own() -> None:
    assert incarnation_prefix("producer-0", 0) == "producer-0"
    assert incarnation_prefix("producer-0", 2) == "producer-0.2"
    command = ["kchaos.process=producer-0", "kchaos.topic=t", "client.id=producer-0"]
    assert with_prefix(command, "producer-0.1") == [
        "kchaos.process=producer-0.1",
        "kchaos.topic=t",
        "client.id=producer-0",
    ]


class EndedClient:
    """A client container whose process has ended with `code`, having printed `lines`."""

    def __init__(self, code: int, lines: tuple[str, ...] = ()) -> None:
        self.code = code
        self.said = lines
        self.removed = False

    def batches(self) -> Iterator[list[str]]:
        return iter([list(self.said)] if self.said else [])

    def exit_code(self, timeout: float) -> int:
        return self.code

    def stderr(self) -> bytes:
        return b"its last words"

    def remove(self) -> None:
        self.removed = True


def ended_producer(history: HistoryWriter, client: EndedClient) -> ClientProcess:
    producer = ClientProcess(WorkerRecorder("producer-0", "t", history), cast(ClientContainer, client))
    producer.thread.join(5)
    return producer


def test_the_supervisor_restarts_a_killed_client_under_its_name_and_leaves_a_finished_one(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    history = HistoryWriter(RunDir(tmp_path), "r")
    started: list[tuple[str, list[str]]] = []

    def start_client(cluster: object, image: str, name: str, command: list[str]) -> EndedClient:
        started.append((name, command))
        return EndedClient(0)

    monkeypatch.setattr(client_supervisor, "start_client", start_client)
    workload = cast(
        JavaProducerWorkload, SimpleNamespace(producers=[], history=history, cluster=None, image="img")
    )
    supervisor = ClientSupervisor(
        workload,
        lambda n: [f"kchaos.process=producer-{n}", "acks=all"],
        lambda process: WorkerRecorder(process, "t", history),
    )
    killed = ended_producer(history, EndedClient(137, ("started\t7\t4.3.1",)))
    workload.producers.append(killed)
    supervisor._after_end(0, killed)
    assert started == [("producer-0", ["kchaos.process=producer-0.1", "acks=all"])]
    assert cast(EndedClient, killed.client).removed and workload.producers[0] is not killed
    assert (history.files.logs / "producer-0.0.log").read_bytes() == b"its last words"
    assert history.count(PRODUCER_RESTART, INFO) == 1
    # Exit 0 is a worker that made its sends; one that never started would not start the next time.
    for client in (EndedClient(0, ("started\t7\t4.3.1",)), EndedClient(1)):
        supervisor.ended.clear()
        supervisor._after_end(0, ended_producer(history, client))
        assert supervisor.ended == {"producer-0"} and len(started) == 1
    supervisor.stop()  # never started: nothing to wait for
