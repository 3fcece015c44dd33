"""Crafted fault sequences: faults driven step by step, each step waiting for Kafka's reaction.

Last replica standing is Jepsen's 2013 Kafka finding: let the ISR shrink to the leader alone, keep writing
with acks=all, then kill the leader. Whether acknowledged writes survive depends on one setting, unclean
leader election, and the suite runs the same sequence for both values.

Its power-loss form cuts the power of that last in-sync replica instead. Whether acknowledged writes
survive then depends on the release: before Eligible Leader Replicas (KIP-966) the partition waits for
the old leader and takes its cut log; with them, a follower that left the ISR below min.insync.replicas
is elected while the old leader is down.
"""

from __future__ import annotations

import json
from typing import Any

from harness.events import LEADER, LEADER_WATCH_PROCESS, OK
from harness.history import HistoryWriter
from harness.run_files import STAGING_NAME
from harness.waiting import holds_throughout
from nemesis.schedule import Nemesis

LAST_REPLICA = {
    "acks": "all", "min_insync_replicas": 1, "replication_factor": 3, "unclean_leader_election": False,
    "duration": 30.0, "broker_config": {"replica.lag.time.max.ms": "8000"},
    # Writes to partition 0 wait out the offline window; a timeout would end the idempotent epoch.
    "message_timeout_ms": 60000,
}  # fmt: skip

#: How long the partition must stay leaderless, with two live out-of-sync replicas, when unclean election
#: is off. The controller elects at the moment it fences the dead leader, so a wrong election would show
#: at once; a few seconds of polls make sure it is not a single lucky answer.
OFFLINE_WATCH_S = 5.0


class LatestOffsets:
    """The offset of the latest `ok` row per (f, topic, partition), and the latest leader-watch detail per
    (topic, partition), read from the run's staged history as it grows: the scenario follows what was
    recorded without the writer keeping track for it."""

    def __init__(self, history: HistoryWriter) -> None:
        self.path = history.history_dir / STAGING_NAME
        self.read_to = 0
        self.latest: dict[tuple[str, str, int], int] = {}
        self.watched: dict[tuple[str, int], dict[str, Any]] = {}

    def _read(self) -> None:
        """Only whole lines are read; the one being written is read next time."""
        with self.path.open("rb") as fh:
            fh.seek(self.read_to)
            for line in fh:
                if not line.endswith(b"\n"):
                    break
                self.read_to += len(line)
                row = json.loads(line)
                if row["type"] == OK and row["offset"] is not None:
                    self.latest[(row["f"], row["topic"], row["partition"])] = row["offset"]
                elif row["process"] == LEADER_WATCH_PROCESS and row["f"] == LEADER:
                    self.watched[(row["topic"], row["partition"])] = json.loads(row["detail"])

    def __call__(self, f: str, topic: str, partition: int) -> int:
        """-1 while there is none."""
        self._read()
        return self.latest.get((f, topic, partition), -1)

    def leadership(self, topic: str, partition: int) -> dict[str, Any]:
        """What the leader watcher recorded last for the partition ({} while nothing)."""
        self._read()
        return self.watched.get((topic, partition), {})


def last_replica_standing(unclean: bool, seen: dict[str, Any]) -> Any:
    """The crafted sequence; `seen` collects what the scenario observed, for the test to assert on."""

    def scenario(nemesis: Nemesis) -> None:
        cluster, topic, history = nemesis.cluster, nemesis.topic, nemesis.history
        leader = cluster.metadata.leader_of(topic, 0)
        followers = [n for n in cluster.nodes if n != leader]
        seen["leader"] = leader

        def isr() -> tuple[int, ...]:
            view = cluster.metadata.view_from(leader, topic)
            return view.partitions[0].isr if view else ()

        latest = LatestOffsets(history)

        def last(f: str) -> int:
            """The offset of the latest acknowledged send (f="send") or read (f="poll") in partition 0."""
            return latest(f, topic, 0)

        cut = nemesis.begin("cut-replication")
        assert cut is not None
        seen["isr_shrank_after_s"] = nemesis.await_condition(
            lambda: isr() == (leader,), 90, "ISR = leader alone"
        )
        # Beyond this offset (plus the few records a follower fetched but the leader had not yet acknowledged
        # when the cut began) only the leader holds partition 0: min.insync.replicas=1 lets it acknowledge
        # alone. With the ISR = the leader, those writes are committed at once, so consumers read them too.
        alone_from = last("send") + 100
        nemesis.await_condition(lambda: last("send") > alone_from + 100, 60, "writes the leader alone has")
        nemesis.await_condition(
            lambda: last("poll") > alone_from, 60, "consumers to read leader-alone writes"
        )
        if unclean:
            # A lagging reader: what the leader acknowledges from now on, nobody reads before it is gone.
            assert nemesis.readers is not None
            nemesis.readers.hold()
            unread_from = last("poll") + 1
            nemesis.await_condition(lambda: last("send") > unread_from + 100, 60, "writes no consumer reads")
        kill = nemesis.begin(f"kill:target={leader}")
        assert kill is not None
        seen["offline_after_s"] = nemesis.await_condition(
            lambda: cluster.metadata.leaderless(topic, 0, followers), 90, "partition 0 without a leader"
        )
        if unclean:
            old_end = last("send")
            election = nemesis.begin("unclean-election")
            assert election is not None
            nemesis.await_condition(election.effect_reached, 60, "an out-of-sync replica to lead")
            # The effect is seen by the first node that answers; the other may still be catching up, so
            # the leader is the one the running nodes (the followers) agree on, polled.
            seen["new_leader"] = election.current_leader()
            # Past the old leader's last acknowledged offset, every write it alone had lies below the final
            # read's end: absent there, it is a loss the checker can see (`lost-write`), not `unseen`.
            nemesis.await_condition(
                lambda: last("send") > old_end, 90, "new leader's writes past the old end"
            )
            nemesis.end(cut)
            nemesis.end(kill)  # the old leader returns and truncates what only it had
            nemesis.end(election)
            nemesis.readers.release()
        else:
            # Nothing can lead: every write to partition 0 waits or fails until the old leader returns. Two
            # live replicas are there to take over, and for a while neither may say it leads or has a leader.
            seen["still_offline"] = holds_throughout(
                lambda: all(view.leader_of(0) < 0 for view in cluster.metadata.views(topic, followers)),
                OFFLINE_WATCH_S,
            )
            nemesis.end(kill)
            seen["back_after_s"] = nemesis.await_condition(
                lambda: cluster.metadata.leader_of(topic, 0) == leader, 120, "the old leader to lead again"
            )
            nemesis.end(cut)

    return scenario


LAST_REPLICA_POWER_LOSS = {
    "acks": "all", "min_insync_replicas": 2, "replication_factor": 3, "unclean_leader_election": False,
    "duration": 30.0, "broker_config": {"replica.lag.time.max.ms": "8000"}, "consumers": 0,
    # Writes to partition 0 wait out the offline window; a timeout would end the idempotent epoch.
    "message_timeout_ms": 90000,
}  # fmt: skip


def last_replica_loses_power(seen: dict[str, Any]) -> Any:
    """The ISR of partition 0 shrinks to its leader (min.insync.replicas=2: writes stop being acknowledged),
    then that leader loses power. `seen` gets what the scenario observed: the leader, the ISR and ELR the
    watcher recorded before the power went, who led while it was down (None: nobody), who led after."""

    def scenario(nemesis: Nemesis) -> None:
        cluster, topic, history = nemesis.cluster, nemesis.topic, nemesis.history
        leader = cluster.metadata.leader_of(topic, 0)
        followers = [n for n in cluster.nodes if n != leader]
        seen["leader"] = leader
        latest = LatestOffsets(history)
        nemesis.await_condition(
            lambda: latest("send", topic, 0) > 300, 60, "acknowledged writes to partition 0"
        )
        cut = nemesis.begin("cut-replication")
        assert cut is not None

        def recorded_alone() -> bool:
            return latest.leadership(topic, 0).get("isr") == [leader]

        # The oracle judges by what the watcher recorded, so the power goes only once it has the shrink.
        seen["isr_shrank_after_s"] = nemesis.await_condition(
            recorded_alone, 90, "the watcher to record ISR = leader"
        )
        # On a release with ELR the followers join it in the same change; give a late answer a second.
        holds_throughout(recorded_alone, 2.0)
        seen["recorded"] = latest.leadership(topic, 0)
        seen["acknowledged_before"] = latest("send", topic, 0)
        power = nemesis.begin(f"power-loss:target={leader}")
        assert power is not None

        def decided() -> bool:
            views = cluster.metadata.views(topic, followers)
            return bool(views) and all(view.leader_of(0) != leader for view in views)

        seen["decided_after_s"] = nemesis.await_condition(
            decided, 60, "the controller to fence the old leader"
        )
        led = {view.leader_of(0) for view in cluster.metadata.views(topic, followers)}
        seen["led_while_down"] = next(iter(led)) if len(led) == 1 and -1 not in led else None
        if seen["led_while_down"] is None:
            seen["still_offline"] = holds_throughout(
                lambda: all(view.leader_of(0) < 0 for view in cluster.metadata.views(topic, followers)),
                OFFLINE_WATCH_S,
            )
        seen["dropped"] = nemesis.end(power)
        nemesis.await_condition(lambda: cluster.metadata.leader_of(topic, 0) >= 0, 120, "partition 0 led")
        seen["led_after"] = cluster.metadata.leader_of(topic, 0)
        nemesis.end(cut)
        # New writes past the last acknowledged offset: what was lost lies below the final read's end, a
        # `lost-write` the checker sees rather than `unseen`.
        nemesis.await_condition(
            lambda: latest("send", topic, 0) > seen["acknowledged_before"], 120, "writes past the old end"
        )

    return scenario
