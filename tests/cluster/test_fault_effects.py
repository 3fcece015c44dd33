"""Each fault, applied to a real cluster, shows its real effect on Kafka, and healing undoes it.

One cluster serves the module (starting one costs half a minute); after every test the cluster must be
whole again, so the tests do not depend on each other's order. The release under test decides the mode
(`--kchaos-kafka-version 2.6.3` runs ZooKeeper mode), and where the two modes differ a test asserts what
Kafka does in the mode the cluster runs.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import TIMESTAMP_LOG_APPEND_TIME, Consumer, Message, Producer
from confluent_kafka.admin import AdminClient

from kchaos.harness.cluster import KafkaCluster
from kchaos.harness.dump_text import parse_dump
from kchaos.harness.kafka_node import INTERNAL_PORT
from kchaos.harness.replicas import dump_node
from kchaos.model.events import START, first_transactional_process, group_name, transactional_name
from kchaos.model.fault_plan import PlannedFault
from kchaos.model.history import HistoryWriter
from kchaos.model.releases import Release
from kchaos.model.run_files import RunDir
from kchaos.model.waiting import wait_for, wait_until
from kchaos.nemesis.history_reading import HistoryRows
from kchaos.nemesis.schedule import Nemesis
from kchaos.runner.pytest_plugin import ClusterFactory, SessionOptions
from tests.cluster.fault_steps import (
    EFFECT_TIMEOUT,
    HEAL_TIMEOUT,
    PARTITION,
    QUICK_TIMERS,
    TOPIC,
    agreed_leader,
    begin,
    end,
    heal,
    isr,
    leader,
    leader_apart_from_the_controller,
    others,
    shrunk_to,
    steady_writes,
    view,
    wait_effect,
    zookeeper_mode,
)

pytestmark = pytest.mark.cluster

#: Tries of a sequence whose window is a race this busy machine may lose (see its test).
ATTEMPTS = 3


@pytest.fixture(scope="module")
def kafka_cluster(kafka_cluster_factory: ClusterFactory) -> Iterator[KafkaCluster]:
    with kafka_cluster_factory.started("effects", broker_config=QUICK_TIMERS) as cluster:
        yield cluster


@pytest.fixture(scope="module")
def cluster(kafka_cluster: KafkaCluster) -> KafkaCluster:
    return kafka_cluster


@pytest.fixture(scope="module", autouse=True)
def background_writes(cluster: KafkaCluster) -> Iterator[None]:
    """Writes flow all module long: see `steady_writes`."""
    with steady_writes(cluster):
        yield


def test_targets_resolve_to_the_nodes_they_name(cluster: KafkaCluster, nemesis: Nemesis) -> None:
    fault = begin(nemesis, "min-isr:value=2")  # any fault gives access to target resolution
    nemesis.end(fault)
    current = agreed_leader(cluster)
    assert fault.resolve("leader") == (current,)
    assert current not in fault.resolve("followers") and len(fault.resolve("followers")) == 2
    assert fault.resolve("controller")[0] in cluster.nodes
    assert len(fault.resolve("random")) == 1
    assert len(fault.resolve("minority")) == 1 and len(fault.resolve("majority")) == 2
    assert fault.resolve("all") == (1, 2, 3) and fault.resolve("1+3") == (1, 3)


def test_coordinator_targets_are_the_coordinators_kafka_names(
    cluster: KafkaCluster, nemesis: Nemesis, kchaos_options: SessionOptions
) -> None:
    """`txn-coordinator` and `group-coordinator` resolve to the brokers Kafka itself names: the group's
    coordinator as the admin API describes it, the transactional client's as Kafka's transactions tool
    does (from 2.8, KIP-664), for a txn run's first producer and an eos run's first processor. Both are
    found by hashing the id onto an internal topic's partitions, as the brokers place it; a wrong hash
    would aim coordinator faults at some other broker."""
    release = Release.parse(kchaos_options.kafka_version)
    if not release.idempotent_producer:
        pytest.skip(f"{release.text} has no transactions (KIP-98 came in 0.11)")
    transactional_ids = {
        workload: transactional_name(cluster.run_id, first_transactional_process(workload))
        for workload in ("txn", "eos")
    }
    for transactional_id in transactional_ids.values():
        producer = Producer({"bootstrap.servers": cluster.bootstrap, "transactional.id": transactional_id,
                             "log_level": 0})  # fmt: skip
        producer.init_transactions(30)
        producer.begin_transaction()
        producer.produce(TOPIC, value=b"t", partition=0)
        producer.commit_transaction(30)
    group = group_name(cluster.run_id)
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": group, "log_level": 0})
    try:
        consumer.subscribe([TOPIC])
        wait_until(lambda: consumer.poll(0.5) is not None or bool(consumer.assignment()), 60, "an assignment")
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})  # kept: its futures die with it
        group_coordinator = admin.describe_consumer_groups([group])[group].result(30).coordinator.id
    finally:
        consumer.close()
    fault = begin(nemesis, "min-isr:value=2")  # any fault gives access to target resolution
    nemesis.end(fault)
    assert fault.resolve("group-coordinator") == (group_coordinator,)
    if release.parts < (2, 8):
        return  # the group's coordinator is checked; the transactions tool came in 2.8
    for workload, transactional_id in transactional_ids.items():
        fault.workload = workload
        node = cluster.nodes[fault.resolve("txn-coordinator")[0]]
        output = node.run_tool(
            "org.apache.kafka.tools.TransactionsCommand", "--bootstrap-server",
            f"{node.hostname}:{INTERNAL_PORT}", "describe", "--transactional-id", transactional_id,
        )  # fmt: skip
        header, row = output.strip().splitlines()[-2:]
        named = dict(zip(header.split(), row.split(), strict=False))
        assert fault.resolve("txn-coordinator") == (int(named["CoordinatorId"]),), (workload, output)


# `stop` nightly (7 s of CI): CI stops and starts a node's process in the kill and pause cases beside it.
@pytest.mark.parametrize(
    "spec",
    [
        "kill:target=leader",
        pytest.param("stop:target=leader", marks=pytest.mark.nightly),
        "pause:target=leader",
    ],
)
def test_process_fault_on_the_leader_moves_leadership_and_heals(
    cluster: KafkaCluster, nemesis: Nemesis, spec: str
) -> None:
    old = agreed_leader(cluster)
    fault = begin(nemesis, spec)
    assert fault.nodes == (old,)
    wait_effect(fault)
    survivors = others(cluster, fault.nodes)
    assert leader(cluster, survivors) not in (old, -1), f"{spec}: leadership did not move away from {old}"
    for node in survivors:
        assert old not in view(cluster, node).brokers, f"{spec}: node {old} was not fenced"
    heal(nemesis, fault)
    assert set(isr(cluster, old)) == {1, 2, 3}


def test_a_fault_armed_on_leader_down_hits_the_successor_before_the_failover(
    cluster: KafkaCluster, tmp_path: Path
) -> None:
    """`pause:target=successor:when=leader-down` beside a leader's kill fires while the running nodes
    still name the killed leader (Kafka has not yet noticed: a broker session lasts 4 s here) and freezes
    the replica the controller is about to elect; its start row says which state it fired on.

    The window is the broker session, polled every quarter second: a fresh-clone CI run on this busy
    machine once saw no poll agree inside it (the armed fault was then skipped, recorded, as it should be),
    so the sequence is given up to three attempts and must fire in one. About 15 s an attempt.

    The successor is the first in-sync replica in assignment order at the moment the fault fires. A CI run
    once saw that replica fall out of the ISR (5 s of lag on this busy machine) between this test's reading
    and the fire, so the survivors' ISR is sampled all along, and a later replica is right only if a
    survivor said every one before it was out of the ISR."""
    attempts: list[str] = []
    for attempt in range(ATTEMPTS):
        old = agreed_leader(cluster)
        replicas = view(cluster, old).partitions[PARTITION].replicas
        history = HistoryWriter(RunDir(tmp_path / str(attempt)), cluster.run_id)
        nemesis = Nemesis(cluster, history, TOPIC, PARTITION, [], seed=3)
        nemesis.planned = [
            PlannedFault("kill#1", "kill:target=leader", 0.0, 6.0),
            PlannedFault(
                "pause#2", "pause:target=successor:when=leader-down", 0.0, 3.0, armed_s=16.0, after_s=0.5
            ),
        ]
        with sampled_isr(cluster, [node for node in replicas if node != old]) as samples:
            nemesis.start()
            try:
                assert nemesis.finished.wait(EFFECT_TIMEOUT + HEAL_TIMEOUT), "the plan did not end"
                assert nemesis.error is None, nemesis.error
            finally:
                nemesis.heal_all()
                history.finish()
                cluster.metadata.await_recovery(TOPIC, HEAL_TIMEOUT, "the cluster to recover")
        starts = {row.key: row for row in HistoryRows(nemesis.history)() if row.value == START}
        assert starts["kill#1"].detail["nodes"] == [old]
        if "pause#2" not in starts:
            assert any("the state leader-down did not hold" in why for why in nemesis.skipped), (
                nemesis.skipped
            )
            attempts.append("missed")
            continue
        fired = starts["pause#2"].detail
        assert fired["fired_on"] == (
            f"partition {PARTITION}'s leader, node {old}, is held by kill#1 and the running nodes "
            "still name it"
        )
        fired_ns = starts["pause#2"].time_ns
        assert fired_ns is not None
        assert len(fired["nodes"]) == 1 and fired["beside"] == ["kill#1"], fired
        assert fired["nodes"][0] in successors(replicas, old, samples, fired_ns), (fired, replicas, samples)
        # Held the half second asked; the sentence above was read from the survivors' answers, so they
        # still named the killed leader then (Kafka fences it once its 4 s session ends and the controller
        # next looks: 4.3-4.5 s after the kill was seen here).
        assert fired["armed_for_s"] >= 0.5, fired
        attempts.append("fired")
        break
    print(f"leader-down fired on attempt {len(attempts)} of {ATTEMPTS}: {attempts}")
    assert attempts[-1] == "fired", f"the state leader-down never held in {ATTEMPTS} attempts"


@contextlib.contextmanager
def sampled_isr(cluster: KafkaCluster, survivors: list[int]) -> Iterator[list[tuple[int, set[int]]]]:
    """When (the host's monotonic clock, as history rows stamp) and which replicas any of `survivors`
    reported out of partition 0's ISR while the block ran, polled every fifth of a second; a node that does
    not answer (paused, killed) is skipped for that poll."""
    samples: list[tuple[int, set[int]]] = []
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            for node in survivors:
                found = cluster.metadata.view_from(node, TOPIC, timeout=1.0)
                state = found.partitions.get(PARTITION) if found is not None else None
                if state is not None:
                    out = {n for n in state.replicas if n not in state.isr}
                    samples.append((time.monotonic_ns(), out))
            stop.wait(0.2)

    sampler = threading.Thread(target=sample, name="isr-sampler", daemon=True)
    sampler.start()
    try:
        yield samples
    finally:
        stop.set()
        sampler.join(10)


def successors(
    replicas: tuple[int, ...], old: int, samples: list[tuple[int, set[int]]], fired_ns: int
) -> set[int]:
    """The replicas the fault may rightly have hit: the first other than `old` in assignment order, and the
    first in the ISR as each sample before the fault fired read it (what was seen after it, the paused
    replica dropping out, does not count)."""
    candidates = [node for node in replicas if node != old]
    views = [set[int]()] + [out for at_ns, out in samples if at_ns < fired_ns]
    return {next(node for node in candidates if node not in out) for out in views}


def test_stopping_the_active_controller_elects_another(cluster: KafkaCluster, nemesis: Nemesis) -> None:
    """With KRaft the quorum elects a new leader; in ZooKeeper mode the stopped broker's session ends and
    ZooKeeper elects another broker controller."""
    controller = cluster.metadata.active_controller()
    fault = begin(nemesis, "stop:target=controller")
    assert fault.nodes == (controller,)
    wait_effect(fault)
    assert cluster.metadata.active_controller() != controller
    heal(nemesis, fault)


def test_killing_a_majority_stops_the_quorum_and_all_return_with_their_data(
    cluster: KafkaCluster, nemesis: Nemesis
) -> None:
    if zookeeper_mode(cluster):
        pytest.skip("ZooKeeper mode has no quorum of brokers to lose: ZooKeeper's stays up (next test)")
    fault = begin(nemesis, "kill:target=majority")
    assert len(fault.nodes) == 2
    survivor = others(cluster, fault.nodes)[0]
    # Without a quorum nothing can be fenced: the survivor keeps serving what it last knew.
    assert set(fault.nodes) <= view(cluster, survivor).brokers
    heal(nemesis, fault)


def test_killing_a_majority_leaves_zookeeper_to_fence_them_and_the_survivor_leads(
    cluster: KafkaCluster, nemesis: Nemesis
) -> None:
    """In ZooKeeper mode killing brokers takes nothing from the quorum: the dead brokers' sessions expire,
    the survivor is (or becomes) the controller, fences them, and leads every partition, having been in
    every ISR."""
    if not zookeeper_mode(cluster):
        pytest.skip("KRaft: a majority of nodes is the quorum, whose loss the previous test covers")
    fault = begin(nemesis, "kill:target=majority")
    assert len(fault.nodes) == 2
    survivor = others(cluster, fault.nodes)[0]
    wait_effect(fault)
    seen = view(cluster, survivor)
    assert seen.brokers == {survivor}, f"the survivor still knows {sorted(seen.brokers)}"
    assert cluster.metadata.active_controller() == survivor
    assert all(state.leader == survivor for state in seen.partitions.values()), seen.partitions
    heal(nemesis, fault)


@pytest.mark.parametrize("spec", ["kill:target=zookeeper", "stop:target=zookeeper", "pause:target=zookeeper"])
def test_with_zookeeper_down_the_brokers_keep_serving_and_leading(
    cluster: KafkaCluster, nemesis: Nemesis, spec: str
) -> None:
    """Without ZooKeeper no leader can change, but the brokers serve what they know: an acks=all write to
    the partition is acknowledged by the same leader, and when ZooKeeper is back the cluster is whole."""
    if not zookeeper_mode(cluster):
        pytest.skip("a KRaft cluster has no ZooKeeper node")
    assert cluster.zookeeper is not None
    old = agreed_leader(cluster)
    fault = begin(nemesis, spec)
    assert fault.kind == "zookeeper" and fault.nodes == ()
    wait_effect(fault)
    assert not cluster.zookeeper.answers()
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all", "log_level": 0,
                         "message.timeout.ms": 20000})  # fmt: skip
    acknowledged: list[bool] = []
    producer.produce(TOPIC, b"zookeeper down", partition=PARTITION,
                     on_delivery=lambda err, _msg: acknowledged.append(err is None))  # fmt: skip
    producer.flush(30)
    assert acknowledged == [True], "an acks=all write was not acknowledged while ZooKeeper was down"
    assert agreed_leader(cluster) == old
    heal(nemesis, fault)
    assert cluster.zookeeper.answers()


def test_a_controller_cut_off_from_zookeeper_is_replaced_and_fenced(
    cluster: KafkaCluster, nemesis: Nemesis
) -> None:
    """Seed 002's controller failover: the controller's session expires, ZooKeeper elects another broker,
    which fences the old one (that still reaches every broker, and still believes it is controller)."""
    if not zookeeper_mode(cluster):
        pytest.skip("a KRaft cluster has no ZooKeeper: its controller quorum is cut with isolate")
    controller = cluster.metadata.active_controller()
    fault = begin(nemesis, "cut-zookeeper:target=controller")
    assert fault.nodes == (controller,)
    wait_effect(fault)
    rest = others(cluster, fault.nodes)

    def names_another_controller(node: int) -> bool:
        answer = cluster.metadata.answer_of(node, None)  # None for a moment when a node is slow to answer
        return answer is not None and answer.controller_id not in (controller, -1)

    wait_until(lambda: all(map(names_another_controller, rest)), 30, "the others to name a new controller")
    for node in rest:
        assert controller not in view(cluster, node).brokers, f"node {node} still lists node {controller}"
    heal(nemesis, fault)
    assert controller in view(cluster, others(cluster, fault.nodes)[0]).brokers


def test_a_leader_cut_off_from_zookeeper_loses_its_leadership(
    cluster: KafkaCluster, nemesis: Nemesis
) -> None:
    """The leader still reaches its followers and clients, but without its session the controller moves
    the partition to another in-sync replica."""
    if not zookeeper_mode(cluster):
        pytest.skip("a KRaft cluster has no ZooKeeper")
    old = agreed_leader(cluster)
    fault = begin(nemesis, "cut-zookeeper:target=leader")
    assert fault.nodes == (old,)
    wait_effect(fault)
    survivors = others(cluster, (old,))
    assert leader(cluster, survivors) in survivors
    heal(nemesis, fault)
    assert set(isr(cluster, old)) == {1, 2, 3}


# Nightly (20 s of CI, paying for tests/cluster/test_ssh_nodes.py): CI restarts a killed node back into the
# ISR in test_process_fault_on_the_leader_moves_leadership_and_heals[kill], and test_ssh_nodes.py's kill.
@pytest.mark.nightly
def test_rolling_restart_restarts_every_node_and_recovers(cluster: KafkaCluster, nemesis: Nemesis) -> None:
    def started_at() -> dict[int, str]:
        times = {}
        for n, node in cluster.nodes.items():
            container = node.kafka.get_wrapped_container()
            container.reload()
            times[n] = container.attrs["State"]["StartedAt"]
        return times

    before = started_at()
    fault = begin(nemesis, "rolling-restart")
    wait_until(fault.effect_reached, 3 * HEAL_TIMEOUT, "every node restarted in turn")
    after = started_at()
    assert all(after[n] != before[n] for n in cluster.nodes), f"not every node restarted: {before} -> {after}"
    heal(nemesis, fault)  # waits for full recovery


#: What a broker says when recovery finds the damage: the log's own check (`Found invalid messages in log
#: segment ... at byte offset`), a record's CRC (`CorruptRecordException`), or an index it rebuilds.
DAMAGE_FOUND = ("Found invalid messages", "CorruptRecordException", "Corrupt", "corrupt")


# The index nightly (8 s of CI): CI repairs the damaged segment itself, the case that loses records.
@pytest.mark.parametrize("file", ["segment", pytest.param("index", marks=pytest.mark.nightly)])
def test_a_corrupted_follower_is_repaired_from_the_leader_and_says_so(
    cluster: KafkaCluster, nemesis: Nemesis, file: str
) -> None:
    """`corrupt` kills a follower, damages its last segment (or that segment's index) while it is down and
    starts it again: recovery checks the batches, cuts the log at the damage, and the follower fetches the
    rest from the leader and rejoins the ISR. Every record acknowledged to acks=all before the damage is then
    on the damaged replica's disk at its offset, and the broker's own words about the damage are recorded."""
    acked: dict[int, str] = {}
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all", "log_level": 0})
    for i in range(200):
        value = f"corrupt-{file}-{i}"

        def delivered(error: object, message: Message, value: str = value) -> None:
            offset = message.offset()
            if error is None and offset is not None:
                acked[offset] = value

        producer.produce(TOPIC, value=value.encode(), partition=PARTITION, on_delivery=delivered)
    assert producer.flush(30) == 0 and len(acked) == 200
    leader_id = agreed_leader(cluster)
    fault = begin(nemesis, f"corrupt:file={file}")
    (damaged,) = fault.nodes
    assert damaged != leader_id
    corruption = fault.corruption  # type: ignore[attr-defined]
    assert corruption["changed"] and corruption["before"] != corruption["after"], corruption
    wait_effect(fault)  # back in the ISR
    detail = end(nemesis, fault)
    assert detail is not None and detail["back_in_sync"], detail
    wait_until(fault.healed, HEAL_TIMEOUT, f"healing after {fault.key}")
    said = "\n".join(detail["broker_said"])
    if file == "segment":
        assert any(words in said for words in DAMAGE_FOUND), said
    else:  # a crashed broker rebuilds the active segment's indexes as it recovers it
        assert "ecover" in said, said
    dump = parse_dump(dump_node(cluster, cluster.nodes[damaged], [TOPIC]), damaged)
    replica = {r.offset: r.value for r in dump if r.partition == PARTITION}
    lost = {offset: value for offset, value in acked.items() if replica.get(offset) != value}
    assert not lost, f"node {damaged} lacks acknowledged records after its repair: {sorted(lost)[:10]}"


@pytest.mark.nightly
def test_a_malformed_leader_epoch_checkpoint_stops_the_broker_until_the_file_is_put_back(
    cluster: KafkaCluster, nemesis: Nemesis
) -> None:
    """Kafka reads a partition's leader-epoch checkpoint as it loads the log and has no copy to repair it
    from: a damaged one fails the log dir, and a broker whose every log dir failed shuts down. `corrupt`
    records the broker's words and, finding the broker stopped, puts the file back on stop, so the node
    returns and the cluster heals."""
    fault = begin(nemesis, "corrupt:file=leader-epoch-checkpoint")
    (damaged,) = fault.nodes
    wait_until(lambda: cluster.nodes[damaged].exit_code() is not None, EFFECT_TIMEOUT, "the broker to stop")
    detail = end(nemesis, fault)
    assert detail is not None and detail["original_put_back"] and not detail["back_in_sync"], detail
    said = "\n".join(detail["broker_said"])
    assert "leader-epoch-checkpoint" in said and "log dirs" in said, said
    wait_until(fault.healed, HEAL_TIMEOUT, f"healing after {fault.key}")


# `halves` nightly (8 s of CI): CI cuts off a minority with `isolate` of the leader beside it.
@pytest.mark.parametrize("spec", ["isolate:target=leader", pytest.param("halves", marks=pytest.mark.nightly)])
def test_cut_off_minority_is_fenced_and_replaced(cluster: KafkaCluster, nemesis: Nemesis, spec: str) -> None:
    old = agreed_leader(cluster)
    fault = begin(nemesis, spec)
    wait_effect(fault)
    cut_off = fault.nodes
    assert len(cut_off) == 1
    majority = others(cluster, cut_off)
    for node in majority:
        assert cut_off[0] not in view(cluster, node).brokers
    if old in cut_off:
        assert leader(cluster, majority) in majority
    heal(nemesis, fault)
    assert set(isr(cluster, cut_off[0])) == {1, 2, 3}


# `cut-replication` has a test of its own below, which asserts more of the same fault's effect.
# `ring` and `bridge` nightly (15 s of CI): CI cuts links with `one-way` beside them, and with `isolate`
# and `cut-replication` in the tests around; these two shapes of cut run nightly.
@pytest.mark.parametrize(
    "spec",
    [
        pytest.param("ring", marks=pytest.mark.nightly),
        pytest.param("bridge", marks=pytest.mark.nightly),
        "one-way",
    ],
)
def test_cut_links_shrink_an_isr_or_fence_a_node(cluster: KafkaCluster, nemesis: Nemesis, spec: str) -> None:
    fault = begin(nemesis, spec)
    assert fault.cuts.links, f"{spec} cut no link"  # type: ignore[attr-defined]
    wait_effect(fault)
    heal(nemesis, fault)


def test_cut_replication_leaves_the_leader_alone_in_the_isr(cluster: KafkaCluster, nemesis: Nemesis) -> None:
    old = agreed_leader(cluster)
    fault = begin(nemesis, "cut-replication")
    wait_until(lambda: shrunk_to(cluster, old), EFFECT_TIMEOUT, "the ISR to shrink to the leader alone")
    assert agreed_leader(cluster) == old, "the leader must keep leading: the controller quorum is intact"
    heal(nemesis, fault)


def test_cutting_clients_off_a_broker_keeps_it_in_the_cluster(
    cluster: KafkaCluster, nemesis: Nemesis
) -> None:
    fault = begin(nemesis, "cut-clients:target=leader")
    wait_effect(fault)
    target = fault.nodes[0]
    assert cluster.metadata.view_from(target, TOPIC) is None
    other = view(cluster, others(cluster, fault.nodes)[0])
    assert target in other.brokers
    assert set(other.partitions[PARTITION].isr) == {1, 2, 3}, "replication must go on between brokers"
    heal(nemesis, fault)


def test_degraded_links_apply_or_are_skipped_with_the_reason(cluster: KafkaCluster, nemesis: Nemesis) -> None:
    fault = nemesis.begin("latency:ms=100:jitter=10")
    if fault is None:
        assert nemesis.skipped and "netem" in nemesis.skipped[0] and "skipped" in nemesis.skipped[0]
        return
    node = cluster.nodes[fault.nodes[0]]
    assert "netem" in node.network_exec(["tc", "qdisc", "show", "dev", "eth0"])
    heal(nemesis, fault)
    assert "netem" not in node.network_exec(["tc", "qdisc", "show", "dev", "eth0"])


def test_min_isr_change_is_applied_and_restored(cluster: KafkaCluster, nemesis: Nemesis) -> None:
    fault = begin(nemesis, "min-isr:value=3")
    wait_effect(fault)
    assert fault.previous == ["2"]  # type: ignore[attr-defined]
    heal(nemesis, fault)  # until a broker describes the old value again: a broker applies it a moment late


def test_unclean_election_lets_an_out_of_sync_replica_lead(cluster: KafkaCluster, nemesis: Nemesis) -> None:
    # With min.insync.replicas=2 the followers dropped from the ISR would be Eligible Leader Replicas
    # (KIP-966: the high watermark stops while the ISR is below min ISR) and one would be elected cleanly.
    # At 1 the high watermark keeps moving with the leader alone, so only an unclean election helps.
    leader_apart_from_the_controller(cluster, nemesis)
    min_isr = begin(nemesis, "min-isr:value=1")
    wait_effect(min_isr)
    cut = begin(nemesis, "cut-replication")
    old = cut.nodes[0]  # the leader it cut off, whichever it is now
    wait_until(lambda: shrunk_to(cluster, old), EFFECT_TIMEOUT, "the ISR to shrink to the leader alone")
    kill = begin(nemesis, f"kill:target={old}")
    survivors = others(cluster, (old,))
    # Unclean election off: no in-sync replica is alive, so the partition has no leader.
    wait_until(
        lambda: cluster.metadata.leaderless(TOPIC, PARTITION, survivors),
        EFFECT_TIMEOUT,
        "partition 0 to go offline",
    )
    unclean = begin(nemesis, "unclean-election")
    wait_effect(unclean)
    new = leader(cluster, survivors)
    assert new in survivors, f"an out-of-sync replica should lead, leader is {new}"
    nemesis.end(cut)
    nemesis.end(kill)
    nemesis.end(min_isr)
    heal(nemesis, unclean)


def test_eligible_leader_replicas_keep_a_partition_available_without_unclean_election(
    cluster: KafkaCluster, nemesis: Nemesis
) -> None:
    """KIP-966 (on by default since Kafka 4.1): with min.insync.replicas=2, followers that fell out of the
    ISR while it was below min ISR hold every committed record, so one is elected cleanly when the last
    in-sync replica dies; the partition stays available with unclean election off."""
    if zookeeper_mode(cluster):
        pytest.skip("eligible leader replicas (KIP-966) are a KRaft feature of Kafka 4.x; ZooKeeper has none")
    old = agreed_leader(cluster)
    cut = begin(nemesis, "cut-replication")
    wait_until(lambda: shrunk_to(cluster, old), EFFECT_TIMEOUT, "the ISR to shrink to the leader alone")
    kill = begin(nemesis, f"kill:target={old}")
    survivors = others(cluster, (old,))
    wait_until(lambda: leader(cluster, survivors) in survivors, EFFECT_TIMEOUT, "an eligible replica to lead")
    nemesis.end(cut)
    heal(nemesis, kill)


def test_cluster_wide_unclean_election_default_is_set_and_restored(
    cluster: KafkaCluster, nemesis: Nemesis
) -> None:
    fault = begin(nemesis, "unclean-election:scope=cluster:trigger=false")
    wait_effect(fault)
    assert fault.current() == "true"  # type: ignore[attr-defined]
    assert set(fault.previous) <= {None, "false"}, fault.previous  # type: ignore[attr-defined]
    heal(nemesis, fault)  # until every broker describes its old value again


def test_with_a_replica_on_every_broker_reassign_removes_one_and_adds_it_back_interrupted(
    cluster: KafkaCluster, nemesis: Nemesis
) -> None:
    """Three brokers, three replicas: no broker to move onto, so `reassign` makes the round trip a drained
    and restored broker makes. The removal completes (two replicas, both in sync) before the replica is
    added back, and `interrupt=true` kills the returning broker while it copies the log again; healing
    restarts it and the partition ends with its three replicas in sync."""
    before = tuple(view(cluster, agreed_leader(cluster)).partitions[PARTITION].replicas)
    fault = begin(nemesis, "reassign:interrupt=true")
    wait_effect(fault)
    removal, restored = fault.steps  # type: ignore[attr-defined]
    outgoing = fault.nodes[0]
    assert set(removal) == set(before) - {outgoing} and restored == before
    assert fault.killed and fault.incoming == outgoing  # type: ignore[attr-defined]
    heal(nemesis, fault)
    for node in cluster.nodes:
        state = view(cluster, node).partitions[PARTITION]
        assert set(state.replicas) == set(state.isr) == set(before), (node, state)


def test_a_full_disk_takes_the_leader_s_log_dir_offline_and_the_broker_halts(
    cluster: KafkaCluster, nemesis: Nemesis
) -> None:
    """`disk-full` fails the leader's writes under its log dir with ENOSPC. Kafka takes the dir offline and,
    with no log dir left, the broker halts by itself (KIP-112): its container exits without the harness
    touching it, another replica leads, and the stop row holds the write that failed and the broker's words.
    Freed and started again, it recovers its log and rejoins the ISR."""
    old = agreed_leader(cluster)
    fault = begin(nemesis, "disk-full:target=leader")
    wait_effect(fault)
    wait_until(lambda: cluster.nodes[old].exit_code() is not None, EFFECT_TIMEOUT, "the broker to halt")
    survivors = others(cluster, (old,))
    wait_until(lambda: leader(cluster, survivors) in survivors, EFFECT_TIMEOUT, "another replica to lead")
    detail = end(nemesis, fault)
    assert detail is not None
    refused = detail["refused_write"][str(old)]
    call, path = refused.split(maxsplit=1)
    assert call in ("write", "pwrite", "pwrite64", "writev"), refused
    assert path.startswith("/var/lib/kafka/data/"), refused
    assert detail["broker_said"][str(old)], "the broker said nothing about its log dir"
    wait_until(fault.healed, HEAL_TIMEOUT, f"healing after {fault.key}")


def test_a_slow_disk_delays_each_sync_of_its_broker_and_heals_while_it_runs(
    cluster: KafkaCluster, nemesis: Nemesis
) -> None:
    """`slow-disk` sleeps before each fsync under the target's log dirs: on a topic that syncs every record
    (flush.messages=1) an acks=all write to a partition it leads waits out the delay; healed, without a
    restart, writes are quick again, and the stop row counts the calls delayed. The first write of each
    batch is left out of the quick ones: it is a new producer's, which connects and fetches metadata first
    (186 ms in a fresh-clone CI run), and after the heal the library looks at the flag at most every tenth
    of a second, at a call, so the first sync may still wait. (~5 s)"""
    topic = "slow-disk"
    cluster.create_topic(topic, 1, 3, 2, topic_config={"flush.messages": "1"})
    node = int(wait_for(lambda: leader_of(cluster, topic), bool, EFFECT_TIMEOUT, f"a leader of {topic}") or 0)
    before = write_times(cluster, topic, 10)
    fault = begin(nemesis, f"slow-disk:target={node}:ms=300")
    wait_effect(fault)
    during = write_times(cluster, topic, 5)
    detail = end(nemesis, fault)
    after = write_times(cluster, topic, 10)
    print(f"acks=all write ms: before {before}, during {during}, after {after}")
    assert max(before[1:]) < 150 and max(after[1:]) < 150, (before, after)
    assert min(during) >= 280, during
    assert detail is not None and detail["delayed"][str(node)] >= 5, detail
    first = detail["first_delayed"][str(node)]
    assert first.split()[0] in ("fsync", "fdatasync") and " /var/lib/kafka/data/" in first, first
    assert cluster.nodes[node].exit_code() is None, "the broker ran throughout"


def leader_of(cluster: KafkaCluster, topic: str) -> int | None:
    """The leader of `topic`'s partition 0 as the first node that answers sees it; None before one."""
    views = cluster.metadata.views(topic)
    chosen = views[0].partitions.get(0) if views else None
    return chosen.leader if chosen is not None and chosen.leader in cluster.nodes else None


def write_times(cluster: KafkaCluster, topic: str, count: int) -> list[int]:
    """Milliseconds each of `count` acks=all writes to `topic`'s partition 0 took, one at a time."""
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all", "log_level": 0})
    taken = []
    for n in range(count):
        began = time.monotonic()
        producer.produce(topic, value=f"slow-{n}", partition=0)
        assert producer.flush(30) == 0, "an acks=all write was not answered within 30 s"
        taken.append(round((time.monotonic() - began) * 1000))
    return taken


def test_a_replaced_disk_comes_back_empty_and_fetches_every_replica_again(
    cluster: KafkaCluster, nemesis: Nemesis
) -> None:
    """`replace-disk` kills the leader and starts it on an empty disk: the others fence it and elect another
    replica; its start removed what its log dirs held, its broker creates its replica of the partition anew
    (on KRaft its storage formatted again), fetches it from the new leader from offset 0, and rejoins the
    ISR. (~40 s)"""
    old = agreed_leader(cluster)
    fault = begin(nemesis, "replace-disk:target=leader")
    wait_effect(fault)
    survivors = others(cluster, (old,))
    assert leader(cluster, survivors) in survivors
    restarted_at = time.time()
    detail = end(nemesis, fault)
    assert detail is not None and detail["disk"] == "all"
    files, size = detail["removed"][str(old)]
    assert files > 0 and size > 0, detail
    wait_until(fault.healed, HEAL_TIMEOUT, f"healing after {fault.key}")
    assert old in isr(cluster, old), "the emptied replica is back in the ISR"
    said = cluster.nodes[old].logs(since=restarted_at - 1).decode(errors="replace")
    assert f"Created log for partition {TOPIC}-{PARTITION}" in said, "its replica was not created anew"
    dump = parse_dump(dump_node(cluster, cluster.nodes[old], [TOPIC]), old)
    offsets = [record.offset for record in dump if record.partition == PARTITION]
    assert offsets and min(offsets) == 0, "its replica, fetched again, starts at offset 0"


# Last in the module, as a clock jumped ahead and back leaves its node's Kafka timers still for as long as
# the jump (org.apache.kafka.common.utils.Timer never takes a time earlier than one it has seen), KRaft's
# among them: a test after it once found a killed broker still unfenced after 90 s, no controller elected
# (docs/faults.md, Clock faults; tests/cluster/test_clock_timers.py shows it on purpose).
@pytest.mark.parametrize("offset_ms", [-3_600_000, 600_000])
def test_a_clock_jump_moves_the_leader_s_append_times_and_healing_sets_them_right(
    cluster: KafkaCluster, nemesis: Nemesis, offset_ms: int
) -> None:
    """`clock` moves the broker's own wall clock, as Kafka reads it: a topic with LogAppendTime stamps each
    batch with the leader's clock, so records appended by the shifted leader carry times off by the
    offset, and true times again once the fault heals. The other brokers keep true time."""
    target = agreed_leader(cluster)
    times_topic = f"clock-times-{offset_ms}"
    cluster.create_topic(times_topic, 3, 3, 1, topic_config={"message.timestamp.type": "LogAppendTime"})

    def append_times() -> dict[int, int]:
        """Each partition's leader's append time for one record, minus the true time it was acknowledged."""
        offsets: dict[int, int] = {}
        producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all", "log_level": 0})
        for partition in range(3):

            def stamped(error: object, message: Message, partition: int = partition) -> None:
                kind, stamp = message.timestamp()
                assert error is None and kind == TIMESTAMP_LOG_APPEND_TIME, (error, kind)
                offsets[partition] = stamp - int(time.time() * 1000)

            producer.produce(times_topic, value=b"t", partition=partition, on_delivery=stamped)
        assert producer.flush(30) == 0
        return offsets

    assert all(abs(off) < 5_000 for off in append_times().values())
    fault = begin(nemesis, f"clock:target={target}:offset={offset_ms}")
    wait_effect(fault)
    shifted = append_times()
    for partition, off in shifted.items():
        expected = offset_ms if cluster.metadata.leader_of(times_topic, partition) == target else 0
        assert abs(off - expected) < 5_000, (partition, off, expected, target)
    assert any(cluster.metadata.leader_of(times_topic, p) == target for p in shifted), "target leads none"
    heal(nemesis, fault)
    assert fault.effect_reached(), "the target's broker did not take the true time back"
    assert all(abs(off) < 5_000 for off in append_times().values())
