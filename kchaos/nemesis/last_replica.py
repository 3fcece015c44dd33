"""Last replica standing, Jepsen's 2013 Kafka finding: the ISR shrinks to the leader alone, writes go on
with acks=all, then the leader dies. Whether acknowledged writes survive depends on one setting, unclean
leader election, and the same sequence runs for both values.

Its power-loss form cuts the power of that last in-sync replica instead. Whether acknowledged writes
survive then depends on the release: before Eligible Leader Replicas (KIP-966) the partition waits for
the old leader and takes its cut log; with them, a follower that left the ISR below min.insync.replicas
is elected while the old leader is down.

Each step waits for Kafka's reaction, and what it saw goes to `nemesis.observed`.
"""

from __future__ import annotations

from kchaos.model.waiting import holds_throughout
from kchaos.nemesis.scenario_steps import (
    OFFLINE_WATCH_S,
    LatestOffsets,
    begun,
    observed_leader,
    opening,
    reported_isrs,
)
from kchaos.nemesis.schedule import Nemesis


def last_replica_standing(nemesis: Nemesis, unclean: bool) -> None:
    """The ISR of the fault partition shrinks to its leader (min.insync.replicas=1 lets it acknowledge
    alone), the leader is killed; with `unclean`, unclean election elects an out-of-sync follower, else
    the partition must wait, leaderless, for the old leader."""
    cluster, topic, partition, seen = nemesis.cluster, nemesis.topic, nemesis.partition, nemesis.observed
    leader = observed_leader(nemesis)
    followers = [n for n in cluster.nodes if n != leader]

    latest = LatestOffsets(history=nemesis.history)

    def last(f: str) -> int:
        """The offset of the latest acknowledged send (f="send") or read (f="poll") in the partition."""
        return latest(f, topic, partition)

    cut = begun(nemesis.begin("cut-replication"), "cut-replication")
    seen["isr_shrank_after_s"] = nemesis.require(
        lambda: (leader,) in reported_isrs(cluster, topic, partition), 90, "ISR = leader alone"
    )
    # Beyond this offset (plus the few records a follower fetched but the leader had not yet acknowledged
    # when the cut began) only the leader holds the partition: min.insync.replicas=1 lets it acknowledge
    # alone. With the ISR = the leader, those writes are committed at once, so consumers read them too.
    alone_from = last("send") + 100
    nemesis.await_condition(lambda: last("send") > alone_from + 100, 60, "writes the leader alone has")
    if nemesis.readers is not None:
        nemesis.await_condition(
            lambda: last("poll") > alone_from, 60, "consumers to read leader-alone writes"
        )
    if unclean and nemesis.readers is not None:
        # A lagging reader: what the leader acknowledges from now on, nobody reads before it is gone.
        nemesis.readers.hold()
        unread_from = last("poll") + 1
        nemesis.await_condition(lambda: last("send") > unread_from + 100, 60, "writes no consumer reads")
    kill = begun(nemesis.begin(f"kill:target={leader}"), "kill")
    seen["offline_after_s"] = nemesis.await_condition(
        lambda: cluster.metadata.leaderless(topic, partition, followers), 90, "the partition without a leader"
    )
    if unclean:
        old_end = last("send")
        election = begun(nemesis.begin("unclean-election"), "unclean-election")
        nemesis.await_condition(election.effect_reached, 60, "an out-of-sync replica to lead")
        # The effect is seen by the first node that answers; the other may still be catching up, so the
        # leader is the one the running nodes (the followers) agree on, polled.
        seen["new_leader"] = election.current_leader()
        # Past the old leader's last acknowledged offset, every write it alone had lies below the final
        # read's end: absent there, it is a loss the checker can see (`lost-write`), not `unseen`.
        nemesis.await_condition(lambda: last("send") > old_end, 90, "new leader's writes past the old end")
        nemesis.end(cut)
        nemesis.end(kill)  # the old leader returns and truncates what only it had
        nemesis.end(election)
        if nemesis.readers is not None:
            nemesis.readers.release()
        return
    # Nothing can lead: every write to the partition waits or fails until the old leader returns. Two live
    # replicas are there to take over, and for a while neither may say it leads or has a leader.
    seen["still_offline"] = holds_throughout(
        lambda: all(view.leader_of(partition) < 0 for view in cluster.metadata.views(topic, followers)),
        OFFLINE_WATCH_S,
    )
    nemesis.end(kill)
    seen["back_after_s"] = nemesis.await_condition(
        lambda: cluster.metadata.leader_of(topic, partition) == leader, 120, "the old leader to lead again"
    )
    nemesis.end(cut)


def last_replica_loses_power(nemesis: Nemesis) -> None:
    """The ISR of the fault partition shrinks to its leader (min.insync.replicas=2: writes stop being
    acknowledged), then that leader loses power. Observed: the leader, the ISR and ELR the watcher recorded
    before the power went, who led while it was down (None: nobody), who led after."""
    cluster, topic, partition, seen = nemesis.cluster, nemesis.topic, nemesis.partition, nemesis.observed
    start = opening(nemesis)
    latest, acknowledged, leader = start.latest, start.acknowledged, start.leader
    followers = [n for n in cluster.nodes if n != leader]
    cut = begun(nemesis.begin("cut-replication"), "cut-replication")

    def recorded_alone() -> bool:
        return latest.leadership(topic, partition).get("isr") == [leader]

    # The oracle judges by what the watcher recorded, so the power goes only once it has the shrink.
    seen["isr_shrank_after_s"] = nemesis.require(recorded_alone, 90, "the watcher to record ISR = leader")
    # On a release with ELR the followers join it in the same change; give a late answer a second.
    holds_throughout(recorded_alone, 2.0)
    seen["recorded"] = latest.leadership(topic, partition)
    seen["acknowledged_before"] = acknowledged()
    power = begun(nemesis.begin(f"power-loss:target={leader}"), "power-loss")

    def decided() -> bool:
        views = cluster.metadata.views(topic, followers)
        return bool(views) and all(view.leader_of(partition) != leader for view in views)

    seen["decided_after_s"] = nemesis.await_condition(decided, 60, "the controller to fence the old leader")
    led = {view.leader_of(partition) for view in cluster.metadata.views(topic, followers)}
    seen["led_while_down"] = next(iter(led)) if len(led) == 1 and -1 not in led else None
    if seen["led_while_down"] is None:
        seen["still_offline"] = holds_throughout(
            lambda: all(view.leader_of(partition) < 0 for view in cluster.metadata.views(topic, followers)),
            OFFLINE_WATCH_S,
        )
    stopped = nemesis.end(power)
    seen["dropped"] = stopped.to_detail() if stopped is not None else None
    nemesis.await_condition(
        lambda: cluster.metadata.leader_of(topic, partition) >= 0, 120, "the partition led"
    )
    seen["led_after"] = cluster.metadata.leader_of(topic, partition)
    nemesis.end(cut)
    # New writes past the last acknowledged offset: what was lost lies below the final read's end, a
    # `lost-write` the checker sees rather than `unseen`.
    nemesis.await_condition(
        lambda: acknowledged() > seen["acknowledged_before"], 120, "writes past the old end"
    )
