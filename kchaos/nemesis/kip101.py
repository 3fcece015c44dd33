"""KIP-101's two scenarios, the losses leader epochs (Kafka 0.11) fixed.

The first (`kip_101_hw_truncation`): a follower truncates to its own high watermark and is elected before
it has fetched the truncated records back. The second (`kip_101_divergence`, at the end): an old leader
back after an unclean election keeps records its new leader replaced.

Before leader epochs (Kafka 0.11), a replica told to follow a new leader truncated its log to its own high
watermark. A follower learns the leader's high watermark only in the next fetch response, so its own lags
by a fetch round: the last records every in-sync replica has, and the producer was told are committed,
lie above it. If that follower is then elected before it fetches them again, they are gone, although an
in-sync replica was alive all along. From 0.11 the follower asks its new leader where its epoch ends
(OffsetsForLeaderEpoch) instead, and keeps them.

The sequence, on one partition whose replicas are [first, second, last], all in sync:
1. `second` stops answering the other brokers' inter-broker requests (a one-way drop of its answers):
   followers cannot fetch from it, while the controller's requests still reach it;
2. `first`, the leader, is killed: the controller elects `second`, and `last` becomes its follower,
   truncating to its high watermark on a release without leader epochs;
3. `first` is restarted (in KRaft mode its controller vote is needed once `second` dies), and cannot catch
   up from `second` either, so it stays out of the ISR;
4. `second` is killed: `last`, still in the ISR, is elected with the log it truncated;
5. the drop and `second` are healed, and writes continue past the last acknowledged offset, so a lost
   record lies below the final read's end.

In ZooKeeper mode the partition is the one whose `last` replica is the active controller: a controller
among `first` and `second` would fail over between the steps. Every step waits for what Kafka shows.
"""

from __future__ import annotations

from dataclasses import replace

from kchaos.harness.metadata import PartitionState
from kchaos.nemesis.scenario_steps import LatestOffsets, begun, opening, reported_isrs
from kchaos.nemesis.schedule import Nemesis


def usable_partitions(nemesis: Nemesis) -> tuple[list[PartitionState], int]:
    """The partitions led by their first replica with every replica in sync, those whose last replica is
    the active controller first, each with its replicas in assignment order; and the active controller.

    The order is the one the controller elects in. In ZooKeeper mode it is read from ZooKeeper, as brokers
    before 0.11 answer metadata with replicas in id order; in KRaft mode the metadata has it.
    """
    cluster = nemesis.cluster
    controller = cluster.metadata.active_controller()
    view = cluster.metadata.view_from(controller, nemesis.topic)
    states = [state for _, state in sorted(view.partitions.items())] if view is not None else []
    if cluster.zookeeper is not None:
        assigned = cluster.zookeeper.replica_assignment(nemesis.topic)
        states = [replace(state, replicas=assigned.get(state.partition, state.replicas)) for state in states]
    usable = [
        state
        for state in states
        if len(state.replicas) >= 3
        and state.leader == state.replicas[0]
        and set(state.isr) == set(state.replicas)
    ]
    return sorted(usable, key=lambda state: state.replicas[-1] != controller), controller


def chosen_partition(nemesis: Nemesis) -> PartitionState:
    """A partition led by its first replica with every replica in sync, preferring (in ZooKeeper mode,
    requiring) one whose last replica is the active controller; waited for, as a broker may still be
    joining an ISR when the workload starts."""
    found: list[PartitionState] = []
    controller = -1

    def suitable() -> bool:
        nonlocal found, controller
        found, controller = usable_partitions(nemesis)
        zookeeper = nemesis.cluster.metadata.mode == "zookeeper"
        return bool(found) and (not zookeeper or found[0].replicas[-1] == controller)

    if nemesis.await_condition(suitable, 60, "a partition the scenario can use") is None:
        raise RuntimeError(
            f"no partition of {nemesis.topic} has its replicas in sync, led by the first, and the active "
            f"controller (node {controller}) last (usable: {found}); run with --partitions 3 or more and "
            "--replication-factor 3"
        )
    return found[0]


def kip_101_hw_truncation(nemesis: Nemesis) -> None:
    """The first scenario, the steps the module's docstring lists; observed: the partition and its
    replicas in election order, how long each election took, the ISR `last` reported before `second` died."""
    cluster, topic, seen = nemesis.cluster, nemesis.topic, nemesis.observed
    state = chosen_partition(nemesis)
    partition = state.partition
    first, second, last = state.replicas[:3]
    seen.update(partition=partition, replicas=list(state.replicas), first=first, second=second, last=last)
    latest = LatestOffsets(nemesis.history)

    acknowledged = latest.acknowledged(topic, partition)

    def led_by(leader: int, asked: int) -> bool:
        view = cluster.metadata.view_from(asked, topic)
        return view is not None and view.leader_of(partition) == leader

    nemesis.await_condition(lambda: acknowledged() > 20, 60, f"acknowledged writes to partition {partition}")
    others = "+".join(str(n) for n in state.replicas if n != second)
    drop_spec = f"one-way:from={second}:to={others}:port=inter-broker"
    drop = begun(nemesis.begin(drop_spec), drop_spec)
    # Writes still flow: `first` leads and both followers fetch from it.
    since = acknowledged()
    nemesis.await_condition(lambda: acknowledged() > since + 4, 60, "writes acknowledged through the drop")
    # Killed right after an acknowledgement, before the next record reaches `first`: `last`'s high
    # watermark is then a fetch round behind what was acknowledged (the scenario's rate and fetch wait
    # leave about a second for this).
    just_before = acknowledged()
    nemesis.await_condition(lambda: acknowledged() > just_before, 30, "an acknowledgement", interval=0.02)
    kill_first = begun(nemesis.begin(f"kill:target={first}"), f"kill:target={first}")
    seen["second_led_after_s"] = nemesis.await_condition(
        lambda: led_by(second, last), 120, f"node {last} to follow node {second}"
    )
    # Nothing is acknowledged while `second` leads: its other in-sync replica, `last`, fetches nothing.
    seen["acknowledged_before"] = acknowledged()
    nemesis.end(kill_first)
    seen["first_back_after_s"] = nemesis.await_condition(
        lambda: cluster.metadata.view_from(first, topic) is not None, 120, f"node {first} to answer again"
    )
    view = cluster.metadata.view_from(last, topic)
    seen["isr_before_second_killed"] = list(view.partitions[partition].isr) if view else None
    kill_second = begun(nemesis.begin(f"kill:target={second}"), f"kill:target={second}")
    seen["last_led_after_s"] = nemesis.await_condition(
        lambda: led_by(last, last), 120, f"node {last} to lead partition {partition}"
    )
    nemesis.end(drop)
    nemesis.end(kill_second)
    nemesis.await_condition(
        lambda: acknowledged() > seen["acknowledged_before"] + 4, 120, "writes past the old end"
    )


def kip_101_divergence(nemesis: Nemesis) -> None:
    """KIP-101's second scenario: a replica the ISR left behind is elected uncleanly and takes writes at
    offsets the old leader had filled, and the old leader, back as its follower, truncates only to its own
    high watermark (before 0.11), keeping different records at the same offsets.

    The ISR of the fault partition shrinks to its leader (min.insync.replicas=1 lets it acknowledge alone),
    the leader is killed, and with `unclean.leader.election.enable` set on the topic the controller elects
    a follower itself. Once that leader has written past the old leader's end, the old leader returns.
    With leader epochs it asks where its epoch ended and truncates there: the replicas agree again.
    """
    cluster, topic, partition, seen = nemesis.cluster, nemesis.topic, nemesis.partition, nemesis.observed
    start = opening(nemesis)
    leader, acknowledged = start.leader, start.acknowledged
    followers = [n for n in cluster.nodes if n != leader]

    cut = begun(nemesis.begin("cut-replication"), "cut-replication")
    seen["isr_shrank_after_s"] = nemesis.require(
        lambda: (leader,) in reported_isrs(cluster, topic, partition), 90, "ISR = leader alone"
    )
    alone_from = acknowledged()
    nemesis.await_condition(lambda: acknowledged() > alone_from + 100, 60, "writes the leader alone has")
    kill = begun(nemesis.begin(f"kill:target={leader}"), f"kill:target={leader}")

    def successor() -> int:
        return cluster.metadata.leader_of(topic, partition, followers)

    seen["unclean_elected_after_s"] = nemesis.await_condition(
        lambda: successor() not in (-1, leader), 120, "the controller to elect an out-of-sync follower"
    )
    seen["new_leader"] = successor()
    seen["acknowledged_before"] = acknowledged()
    # The new leader writes past the old leader's end: the old one then fetches from its own end, keeping
    # its records below it unless it truncates to where the new leader's epoch began.
    nemesis.await_condition(
        lambda: acknowledged() > seen["acknowledged_before"] + 200,
        120,
        "the new leader's writes past the old end",
    )
    nemesis.end(cut)
    nemesis.end(kill)
    seen["old_leader_back_after_s"] = nemesis.await_condition(
        lambda: any(set(isr) == set(cluster.nodes) for isr in reported_isrs(cluster, topic, partition)),
        180,
        "the old leader back in the ISR",
    )
