"""An isolated leader that goes on acknowledging: the acks=1 failover.

The leader of the fault partition is cut off from every other node (and ZooKeeper) while clients still
reach it. Until it learns it was replaced, it appends and, with acks=1, acknowledges writes no follower
will ever fetch; the majority elects a new leader, and when the cut heals the old leader truncates them.
The documentation allows that loss for acks=1, and forbids it for acks=all (the isolated leader cannot
acknowledge alone), so the same sequence tells the two settings apart.
"""

from __future__ import annotations

from kchaos.nemesis.scenario_steps import begun, opening
from kchaos.nemesis.schedule import Nemesis


def isolated_leader(nemesis: Nemesis) -> None:
    cluster, topic, partition, seen = nemesis.cluster, nemesis.topic, nemesis.partition, nemesis.observed
    start = opening(nemesis)
    leader, acknowledged = start.leader, start.acknowledged
    isolate = begun(nemesis.begin(f"isolate:target={leader}"), "isolate")
    since = acknowledged()
    seen["elected_after_s"] = nemesis.await_condition(
        isolate.effect_reached, 90, "the other nodes to elect a new leader"
    )
    seen["acknowledged_while_isolated"] = acknowledged() - since
    others = [n for n in cluster.nodes if n != leader]
    seen["new_leader"] = cluster.metadata.leader_of(topic, partition, others)
    # Writes the new leader acknowledges, past whatever the isolated one did: lost records then lie below
    # the final read's end, a `lost-write` the checker sees rather than `unseen`.
    until = acknowledged()
    nemesis.await_condition(lambda: acknowledged() > until + 100, 90, "the new leader's writes")
    nemesis.end(isolate)
